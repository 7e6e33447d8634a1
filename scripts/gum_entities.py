"""Convert GUM's named person/organisation/place mentions into lexplain's entity evaluation set.

GUM (Georgetown University Multilayer corpus, https://github.com/amir-zeldes/gum) annotates
every mention of every entity (pronouns and common nouns too) with a type and, in its
CoNLL-U files, the mention's minimal span ("minspan"). A named-entity benchmark needs only the
*names*: a mention counts when a token of its minimal span is a proper noun (UPOS PROPN), and its
gold span is the run of proper nouns around that token, bridged by the joining words names carry
("University of Aberdeen", "Ursula von der Leyen"), without a leading personal title (Mr, Dr ...,
which NER conventions leave out). A name inside another name ("Aberdeen" in "Aberdeen Grammar
School") is dropped: the extractors measured give flat, non-overlapping mentions.

Only genres whose texts are under a licence that allows redistribution without a
non-commercial clause are converted (see LICENCES); reddit, fiction, wikiHow, letters, essays,
podcasts and the rest are left out.

Usage: python scripts/gum_entities.py GUM_GIT_DIR OUT.jsonl
(GUM_GIT_DIR is a git directory of the GUM repository; the files are read with `git show`.)
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import dataclass, field

#: Text licence of each converted genre, from GUM's LICENSE.txt.
LICENCES: dict[str, str] = {
    "news": "CC BY 2.5 (Wikinews)",
    "interview": "CC BY 2.5 (Wikinews)",
    "bio": "CC BY-SA 3.0 (Wikipedia)",
    "voyage": "CC BY-SA 3.0 (Wikivoyage)",
    "academic": "CC BY 4.0",
    "court": "CC BY 4.0",
}
#: GUM's entity types that map to lexplain's kinds; the other types are not names we extract.
KINDS: dict[str, str] = {"person": "person", "organization": "organisation", "place": "place"}
#: Lower-case words that may join two proper nouns inside one name.
CONNECTORS: frozenset[str] = frozenset(
    {"of", "the", "de", "von", "van", "der", "den", "du", "da", "di", "la", "le", "&", "and", "for"}
)
#: Personal titles left out of a person's gold span.
TITLES: frozenset[str] = frozenset(
    {"mr", "mr.", "mrs", "mrs.", "ms", "ms.", "dr", "dr.", "prof", "prof.", "professor", "sir"}
)
#: Parts of speech that are never a name word even when capitalised (sentence-initial "The").
_NEVER_NAME: frozenset[str] = frozenset({"DET", "PRON", "PUNCT", "CCONJ", "ADP", "AUX", "SCONJ"})
#: Opening bracket of an entity in the MISC column: (id-etype-infstat-salience-centering-minspan...
_OPEN = re.compile(r"\((\d+)-([a-z]+)-[^-()]*-[^-()]*-[^-()]*-([\d,]+)[^()]*")
#: Closing bracket: id)
_CLOSE = re.compile(r"(\d+)\)")


@dataclass
class Token:
    form: str
    upos: str
    start: int
    end: int


@dataclass
class Mention:
    kind: str
    first: int
    minspan: list[int]
    last: int = -1


@dataclass
class Document:
    name: str
    text: str = ""
    source_url: str = ""
    tokens: list[Token] = field(default_factory=list)
    mentions: list[Mention] = field(default_factory=list)


def parse(name: str, conllu: str) -> Document:
    doc = Document(name)
    parts: list[str] = []
    offset = 0
    open_by_id: dict[str, list[Mention]] = {}
    pending_space = ""
    for line in conllu.splitlines():
        if line.startswith("# meta::sourceURL = "):
            doc.source_url = line.split(" = ", 1)[1].strip()
        if line.startswith("# newpar") and not line.startswith("# newpar_block") and parts:
            pending_space = "\n\n"
        if not line or line.startswith("#"):
            if not line and parts and not pending_space:
                pending_space = " "
            continue
        cols = line.split("\t")
        if "-" in cols[0] or "." in cols[0]:
            continue
        form, upos, misc = cols[1], cols[3], cols[9]
        if pending_space:
            parts.append(pending_space)
            offset += len(pending_space)
            pending_space = ""
        index = len(doc.tokens)
        doc.tokens.append(Token(form, upos, offset, offset + len(form)))
        parts.append(form)
        offset += len(form)
        entity = next((p[7:] for p in misc.split("|") if p.startswith("Entity=")), "")
        position = 0
        while position < len(entity):
            opened = _OPEN.match(entity, position)
            if opened:
                ident, etype, minspan = opened.groups()
                m = Mention(etype, index, [int(x) for x in minspan.split(",")])
                doc.mentions.append(m)
                open_by_id.setdefault(ident, []).append(m)
                position = opened.end()
                if entity.startswith(")", position):  # a one-token mention
                    m.last = index
                    open_by_id[ident].pop()
                    position += 1
                continue
            closed = _CLOSE.match(entity, position)
            if closed:
                m = open_by_id[closed.group(1)].pop()
                m.last = index
                position = closed.end()
                continue
            position += 1
        if "SpaceAfter=No" not in misc.split("|"):
            pending_space = " "
    doc.text = "".join(parts)
    return doc


def _is_name(token: Token) -> bool:
    """A proper noun, or a capitalised word inside a name ("United" in "United Kingdom")."""
    if token.upos == "PROPN":
        return True
    return token.form[:1].isupper() and token.upos not in _NEVER_NAME


def _joins(token: Token) -> bool:
    """A word or mark that may join two name words ("of", "von", "-")."""
    return token.form.casefold() in CONNECTORS or token.form in ("-", "&")


def named_spans(doc: Document) -> list[tuple[int, int, str]]:
    spans: set[tuple[int, int, str]] = set()
    toks = doc.tokens
    for m in doc.mentions:
        kind = KINDS.get(m.kind)
        if kind is None or m.last < 0:
            continue
        heads = [m.first + k - 1 for k in m.minspan if m.first + k - 1 <= m.last]
        head = next((h for h in heads if toks[h].upos == "PROPN"), None)
        if head is None:
            continue
        a = head
        while a > m.first:
            c = a - 1
            while c > m.first and _joins(toks[c]):
                c -= 1
            if c < a - 1 and not _is_name(toks[c]):
                break
            if not _is_name(toks[c]):
                break
            a = c
        b = head
        while b < m.last:
            c = b + 1
            while c < m.last and _joins(toks[c]):
                c += 1
            if not _is_name(toks[c]):
                break
            b = c
        while a < b and toks[a].form.casefold() in TITLES:
            a += 1
        if not _is_name(toks[a]):
            continue
        spans.add((toks[a].start, toks[b].end, kind))
    ordered = sorted(spans, key=lambda s: (s[0], -s[1]))
    flat: list[tuple[int, int, str]] = []
    for span in ordered:
        if flat and span[0] < flat[-1][1]:
            continue  # nested in (or overlapping) an earlier, longer name
        flat.append(span)
    return flat


def main(git_dir: str, out: str) -> None:
    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "--git-dir", git_dir, *args], check=True, capture_output=True, text=True
        ).stdout

    commit = git("rev-parse", "HEAD").strip()
    splits = git("show", "HEAD:splits.md")
    held_out: set[str] = set()
    section = ""
    for line in splits.splitlines():
        if line.startswith("## "):
            section = line[3:].strip()
        elif line.strip().startswith("* ") and section in ("dev", "test"):
            held_out.add(line.strip()[2:].strip())
    names = [n for n in git("ls-tree", "--name-only", "HEAD:dep").split() if n.startswith("GUM_")]
    total = 0
    with open(out, "w", encoding="utf-8") as handle:
        for file_name in sorted(names):
            name = file_name.removesuffix(".conllu")
            genre = name.split("_")[1]
            if genre not in LICENCES:
                continue
            doc = parse(name, git("show", f"HEAD:dep/{file_name}"))
            spans = named_spans(doc)
            total += len(spans)
            row = {
                "doc": name,
                "genre": genre,
                "split": "held_out" if name in held_out else "dev",
                "licence": LICENCES[genre],
                "source": doc.source_url,
                "text": doc.text,
                "entities": [list(s) for s in spans],
            }
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(f"GUM {commit}: {total} names", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
