"""Common terms' live postings kept with the image of one generation: a query reads only the rest.

A query's read fetches its terms' posting blocks and decodes them through the image's
``id_rank`` (``blocks.live_posting_steps``). For a term in most passages that is the read's
cost: an RM3 search's expanded read (~12 terms, several of them the corpus's commonest words)
moved ~3.4 MB of blocks and took ~18.5 of the search's ~27 ms at 100k Zipf passages, against
~5.5 ms for the typed read. So an image keeps the decoded postings of the common terms its
reads asked for, with their df, as the in-memory store's view keeps common terms' bitsets
(``memory.reads.KEEP_BITS``). Kept on the ``Image``, not in a cache of their own, because
they hold exactly when the image does: an image is one generation (the txid of the tenant's
last write, read in the query's snapshot), a generation names one committed state of the
blocks, the dead counts and the live ordinals, and a write's next read gets a new image (an
empty keep). Rejected: reusing the first read's columns in the expanded read of one search
(they are cut at the limit, and the port would need a second kind of read), which would not
spare the added common terms, the expensive ones.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from core.domain.postings import Posting

#: A term is kept once its live posting holds at least 1/this of the live passages (as
#: the in-memory store keeps a bitset): rarer terms cost little to read again.
KEEP_SHARE: Final = 64
#: Postings kept per image at most, per live passage: 8 bytes each, so up to 128 bytes a
#: passage beside the image's ~140 (~13 MB at 100k). RM3 search vs typed at 100k Zipf: 8 kept
#: ~8 common terms (2.89-3.04x -> 2.72x), 16 -> 2.24x, 32 -> 2.19x.
KEEP_PER_PASSAGE: Final = 16


@dataclass
class KeptPostings:
    """Term -> (its live posting, its df) as read at one image's generation, read-only."""

    terms: dict[str, tuple[Posting, int]] = field(default_factory=dict)
    held: int = 0

    def known(self, terms: Sequence[str]) -> dict[str, tuple[Posting, int]]:
        """The kept ones of ``terms``."""
        return {term: self.terms[term] for term in terms if term in self.terms}

    def merged(
        self,
        terms: Sequence[str],
        postings: Sequence[Posting],
        df: Mapping[str, int],
        live: int,
    ) -> list[Posting]:
        """``postings`` (decoded from the blocks read: a kept term's is empty, its blocks were
        not read) with the kept ones put in, and the common ones read now kept (a copy: a
        decoded posting is a view of its whole group's arrays) while the keep has room for
        ``KEEP_PER_PASSAGE`` postings per ``live`` passage."""
        out: list[Posting] = []
        for term, posting in zip(terms, postings, strict=True):
            found = self.terms.get(term)
            if found is not None:
                out.append(found[0])
                continue
            size = len(posting[0])
            if (
                term in df
                and size * KEEP_SHARE >= live
                and self.held + size <= KEEP_PER_PASSAGE * live
            ):
                rows, tfs = posting[0].copy(), posting[1].copy()
                rows.flags.writeable = tfs.flags.writeable = False
                self.terms[term] = ((rows, tfs), df[term])
                self.held += size
            out.append(posting)
        return out
