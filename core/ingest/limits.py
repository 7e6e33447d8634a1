"""The bounds every file is read under: one place for each number, shown on the Upload page.

Its own module (not beside the readers) because the settings, the worker sandbox and each
reader need the numbers, and none of them should import the others to get one.

Bounds that hold whatever a file says (``ParseLimits``): PDF and DOCX are parsed in a worker
process (``core.ingest.parse_worker``) capped at ``PARSE_MEMORY_BYTES`` of address space and
``PARSE_SECONDS`` of wall-clock time, killed on breach; their text stops at ``MAX_TEXT_BYTES``;
a DOCX whose members declare more than ``MAX_INFLATED_BYTES`` in total is refused before
anything is inflated (and ``zipfile`` never inflates past a declared size: a member that lies
ends in a CRC error). HTML is read in one linear pass; JSON nesting is capped. Rejected: checks
before parsing alone (no check bounds what pypdf allocates for one page) and a thread with a
timeout (a thread cannot be killed, nor its memory capped).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from core.domain.chunks import DEFAULT_MAX_BYTES as DEFAULT_MAX_BYTES
from core.ingest.jsonlines import MAX_JSON_DEPTH
from core.ingest.results import mib

#: Address space of the worker process that parses one PDF or DOCX (RLIMIT_AS); a file that
#: needs more is refused. The worker itself takes about 80 MiB of it.
PARSE_MEMORY_BYTES = 1024 * 1024 * 1024
#: Wall-clock seconds one PDF or DOCX may take to parse before its worker is killed.
PARSE_SECONDS = 120.0
#: Most text (UTF-8 bytes) one PDF or DOCX may yield; one that expands to more is refused.
MAX_TEXT_BYTES = 64 * 1024 * 1024
#: Most bytes the members of one DOCX may inflate to, in total (checked before inflating).
MAX_INFLATED_BYTES = 128 * 1024 * 1024
#: Most bytes a PDF's page content streams may inflate to, summed over its pages (a stream
#: that 30 pages share counts 30 times: the text extractor runs it once per page).
MAX_CONTENT_BYTES = 256 * 1024 * 1024

#: Most distinct words one document may hold; one with more is refused before it is cut (a
#: 56 MB file of 7 M distinct words took 2.5 GB and three minutes to index in memory). A long
#: book has a few hundred thousand; a document over this is a word list or generated data.
MAX_DOCUMENT_WORDS = 1_000_000
#: Characters of a document counted at a time for that bound (``str.split`` on slices runs at
#: C speed without a list of every word; a word cut by a slice edge counts twice, at most one
#: per slice). Rejected: the tokenizer's pattern (34 s on a 57 MB file, loaded machine).
_COUNT_SLICE = 1 << 20


class ParseLimits(BaseModel):
    """The bounds one PDF or DOCX is parsed under (the defaults are the constants above)."""

    model_config = ConfigDict(frozen=True)

    memory_bytes: int = Field(default=PARSE_MEMORY_BYTES, gt=0)
    seconds: float = Field(default=PARSE_SECONDS, gt=0)
    text_bytes: int = Field(default=MAX_TEXT_BYTES, gt=0)
    inflated_bytes: int = Field(default=MAX_INFLATED_BYTES, gt=0)
    content_bytes: int = Field(default=MAX_CONTENT_BYTES, gt=0)

    def summary(self, max_bytes: int = DEFAULT_MAX_BYTES) -> str:
        """The limits in one sentence, for the Upload page."""
        return (
            f"Limits per file: {mib(max_bytes)} MB uploaded; a PDF or DOCX is read in a separate"
            f" process with at most {mib(self.memory_bytes)} MB of memory and"
            f" {self.seconds:g} s, and may yield at most {mib(self.text_bytes)} MB of text; a"
            f" PDF's page contents may inflate to at most {mib(self.content_bytes)} MB in all; a"
            f" DOCX may inflate to at most {mib(self.inflated_bytes)} MB; JSON lines may nest"
            f" {MAX_JSON_DEPTH} levels."
        )


#: The product's bounds for one PDF or DOCX.
DEFAULT_PARSE_LIMITS = ParseLimits()


def too_many_words(text: str) -> str | None:
    """Why ``text`` holds too many distinct words (runs of non-space) to index, or None; stops
    counting at the bound, so the count holds little more than ``MAX_DOCUMENT_WORDS`` words."""
    if len(text) <= 2 * MAX_DOCUMENT_WORDS:  # words need a separator: it cannot have more
        return None
    seen: set[str] = set()
    for start in range(0, len(text), _COUNT_SLICE):
        seen.update(text[start : start + _COUNT_SLICE].split())
        if len(seen) > MAX_DOCUMENT_WORDS:
            return (
                f"the document holds more than {MAX_DOCUMENT_WORDS:,} distinct words (the limit"
                " per document; a word list or generated data?) — nothing stored"
            )
    return None
