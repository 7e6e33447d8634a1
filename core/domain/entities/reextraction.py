"""Re-extraction: a stored source's passages with their entities found again.

After an extractor upgrade a workspace's passages keep the entities the old one found until
they are found again. The document is not stored, only its passages with their offsets, so it
is put back together from them (overlaps taken once, gaps as spaces, so every offset holds) and
the extractor reads it whole, as at upload: its rules decide once per document ("Warhol" after
"Andy Warhol"). The passages' texts, ids and other metadata stay; only their entity ids and
mentions change. Rejected: extracting passage by passage, which loses what a document says
across its passages and would not find what an upload of the same file finds.
"""

from __future__ import annotations

from collections.abc import Sequence

from core.domain.chunks import StoredChunk
from core.domain.entities.model import Entity, EntityExtractor


def document_text(chunks: Sequence[StoredChunk]) -> str:
    """The document the passages were cut from, as far as they hold it: each passage at its
    offsets, what no passage holds as spaces."""
    text = ""
    for chunk in sorted(chunks, key=lambda c: (c.start_char, c.end_char)):
        if chunk.start_char >= len(text):
            text += " " * (chunk.start_char - len(text)) + chunk.text
        elif chunk.end_char > len(text):
            text += chunk.text[len(text) - chunk.start_char :]
    return text


def reextracted(
    chunks: Sequence[StoredChunk], extractor: EntityExtractor
) -> tuple[list[StoredChunk], list[Entity]]:
    """One source's passages with the entities ``extractor`` finds in their document (a
    mention belongs to a passage when it lies wholly inside it, as at upload), and those
    entities."""
    mentions = extractor.extract(document_text(chunks)) if chunks else []
    used: dict[str, Entity] = {}
    found: list[StoredChunk] = []
    for chunk in chunks:
        inside = [m for m in mentions if chunk.start_char <= m.start and m.end <= chunk.end_char]
        metadata = {key: value for key, value in chunk.metadata.items() if key != "mentions"}
        if inside:
            metadata["mentions"] = [
                {
                    "start": m.start - chunk.start_char,
                    "end": m.end - chunk.start_char,
                    "entity_id": str(m.entity.entity_id),
                }
                for m in inside
            ]
        for m in inside:
            used.setdefault(str(m.entity.entity_id), m.entity)
        entity_ids = list(dict.fromkeys(m.entity.entity_id for m in inside))
        found.append(chunk.model_copy(update={"entity_ids": entity_ids, "metadata": metadata}))
    return found, list(used.values())
