"""Entities: named things a passage mentions, with ids stable across documents.

A package rather than one module: the model, the word lists and the rules change for different
reasons (an id scheme, a word taught, a rule measured on GUM) and together passed 800 lines.
Everything the rest of lexplain uses is re-exported here, so callers import
``core.domain.entities`` and never a module inside it.

Modules:

- ``model``: The entity model: an ``Entity``, its stable id, a ``Mention``, the extractor protocol
- ``lexicon``: The extractor's word lists: titles, suffixes, head words, cues, non-names, places
- ``entity_list``: The uploaded entity list: CSV rows of a name, its kind and its aliases, checked
- ``corrections``: An analyst's corrections: an entity merged into another, its kind changed, hidden
- ``reextraction``: Re-extraction: a stored source's passages with their entities found again
- ``rules``: The rule-based extractor: capitalised runs, acronyms, titles, suffixes, typed per text
"""

from __future__ import annotations

from core.domain.entities.corrections import EntityCorrection, EntityCorrections
from core.domain.entities.entity_list import EntityListError, ListedEntity, load_entity_list
from core.domain.entities.lexicon import place_names
from core.domain.entities.model import (
    ENTITY_KINDS,
    ENTITY_NAMESPACE,
    Entity,
    EntityExtractor,
    EntityId,
    EntityKind,
    Mention,
    entity_id,
    normalise_name,
)
from core.domain.entities.reextraction import document_text, reextracted
from core.domain.entities.rules import EXTRACTOR_LIMITS, RuleBasedExtractor, entity_list_extractor

__all__ = [
    "ENTITY_KINDS",
    "ENTITY_NAMESPACE",
    "EXTRACTOR_LIMITS",
    "Entity",
    "EntityCorrection",
    "EntityCorrections",
    "EntityExtractor",
    "EntityId",
    "EntityKind",
    "EntityListError",
    "ListedEntity",
    "Mention",
    "RuleBasedExtractor",
    "document_text",
    "entity_id",
    "entity_list_extractor",
    "load_entity_list",
    "normalise_name",
    "place_names",
    "reextracted",
]
