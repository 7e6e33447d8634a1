"""Re-extraction in the domain: a document put back together from its passages, and each
passage given the mentions an upload of the document would give it.

Expected passages come from ``build_chunks`` over the original text with the extractor's
mentions, the upload's own path, never from the function under test.
"""

from __future__ import annotations

import uuid

from core.domain.chunks import PassageMention, SourceDocument, StoredChunk, TextSpan, build_chunks
from core.domain.entities import RuleBasedExtractor, document_text, reextracted

TENANT = uuid.uuid4()
#: A document whose passages leave a gap (the blank line) and cut "Andy Warhol" in two.
TEXT = "The Louvre hosted Andy Warhol.\n\nLater, in Paris, Warhol met Marcel Duchamp."
#: Passages: the first sentence; an overlapping cut through "Andy Warhol"; after the gap.
SPANS = [(0, 30), (18, 24), (32, len(TEXT))]


def uploaded(with_mentions: bool) -> list[StoredChunk]:
    spans = [TextSpan(a, b, TEXT[a:b]) for a, b in SPANS]
    document = SourceDocument(source_id="doc", text=TEXT)
    found = RuleBasedExtractor().extract(TEXT) if with_mentions else []
    located = [PassageMention(m.start, m.end, m.entity.entity_id) for m in found]
    return build_chunks(document, TENANT, spans, located)


def test_the_document_comes_back_with_its_offsets_and_spaces_where_no_passage_reaches() -> None:
    rebuilt = document_text(uploaded(False))
    assert rebuilt == TEXT.replace("\n\n", "  ")
    for a, b in SPANS:
        assert rebuilt[a:b] == TEXT[a:b]


def test_each_passage_gets_the_mentions_an_upload_gives_it_and_no_cut_one() -> None:
    bare = uploaded(False)
    assert all(not c.entity_ids for c in bare)
    found, entities = reextracted(bare, RuleBasedExtractor())
    want = uploaded(True)
    assert [(c.id, c.entity_ids, c.metadata) for c in found] == [
        (c.id, c.entity_ids, c.metadata) for c in want
    ]
    assert found[1].entity_ids == []  # "Andy W" holds no whole mention
    assert {e.name for e in entities} >= {"Louvre", "Andy Warhol", "Paris", "Marcel Duchamp"}
