"""Entities: the Entities screen's overview, and an analyst's corrections of the extractor.

The counts by kind, the name search and the order are computed here, once, so the screen only
draws them and a test can hold the numbers without a browser. Rejected: filtering the store's
list in the page (as it was), which put a rule (how a name matches) where no test of the service
sees it. Names match as ``normalise_name`` writes them (case, width and spacing ignored), the
form two mentions of one entity share.

Corrections (merge, kind, hide; ``core.domain.entities.corrections``) are kept by the store and
applied on every read: ``common.corrected_summaries`` (the list), ``common.entity_names`` (a
passage's chips) and ``bounds.bounded_candidates`` (a filter), so every screen sees the same
corrected entities. A kind changed is a merge into the entity of that name and kind.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field

from core.checkpoint import checkpoint
from core.domain.chunks import StoredChunk
from core.domain.entities import (
    ENTITY_KINDS,
    Entity,
    EntityCorrection,
    EntityCorrections,
    EntityExtractor,
    EntityKind,
    RuleBasedExtractor,
    entity_list_extractor,
    normalise_name,
    reextracted,
)
from core.service.common import corrected_summaries, corrections_of
from core.service.runner import StoreRunner
from core.stores.port import EntitySummary, tenant_of

#: What each kind is called where its entities are counted (the Entities screen, a report).
ENTITY_KIND_HEADINGS: dict[EntityKind, str] = {
    "person": "People",
    "organisation": "Organisations",
    "place": "Places",
    "other": "Other names",
}
#: How the list can be ordered: by passages mentioning the entity (most first), or by name.
EntityOrder = Literal["passages", "name"]
#: The orders, in the order the screen offers them.
ENTITY_ORDERS: tuple[EntityOrder, ...] = ("passages", "name")


class EntityOverview(BaseModel):
    """A workspace's entities: how many of each kind, and those a search asks for, in order."""

    model_config = ConfigDict(frozen=True)

    #: Entities of each kind in the whole workspace as corrected (every kind, zero included;
    #: hidden ones not counted).
    by_kind: dict[EntityKind, int]
    #: Entities in the whole workspace (hidden ones not counted).
    total: int
    #: The entities whose name holds the search text (and of the kind asked for), in order.
    shown: list[EntitySummary]
    #: The hidden entities, by name, so they can be shown again.
    hidden: list[EntitySummary] = Field(default_factory=list)
    #: The entities merged into each entity shown (by its id), by name.
    merged: dict[UUID, list[Entity]] = Field(default_factory=dict)


def _order_key(order: EntityOrder) -> Callable[[EntitySummary], tuple[int | str, ...]]:
    """Ties broken by name, then by passages, then by id: the same order every time."""
    if order == "name":
        return lambda s: (normalise_name(s.entity.name), -s.passages, str(s.entity.entity_id))
    return lambda s: (-s.passages, normalise_name(s.entity.name), str(s.entity.entity_id))


class ReextractionReport(BaseModel):
    """What a re-extraction changed: the entities of each kind before and after (as corrected,
    hidden ones not counted), and the passages read and those whose entities changed."""

    model_config = ConfigDict(frozen=True)

    before: dict[EntityKind, int]
    after: dict[EntityKind, int]
    sources: int
    passages: int
    changed: int


def _by_kind(summaries: list[EntitySummary]) -> dict[EntityKind, int]:
    counts: dict[EntityKind, int] = dict.fromkeys(ENTITY_KINDS, 0)
    for summary in summaries:
        counts[summary.entity.kind] += 1
    return counts


class EntityActions(StoreRunner):
    """The Entities screen's actions: the overview and the corrections."""

    def entity_overview(
        self,
        *,
        workspace: str,
        name: str = "",
        kind: EntityKind | None = None,
        order: EntityOrder = "passages",
    ) -> EntityOverview:
        """Counts by kind of every entity, and the entities whose name contains ``name``
        (of ``kind`` when given) ordered by ``order``; all as corrected."""
        return self._call(self._overview(workspace, name, kind, order))

    async def _overview(
        self, workspace: str, name: str, kind: EntityKind | None, order: EntityOrder
    ) -> EntityOverview:
        tenant = await tenant_of(self._store, workspace)
        every = await corrected_summaries(self._store, tenant, hidden=True)
        fixes = await corrections_of(self._store, tenant)
        visible = [s for s in every if not fixes.hidden(s.entity.entity_id)]
        by_kind: dict[EntityKind, int] = dict.fromkeys(ENTITY_KINDS, 0)
        for summary in visible:
            by_kind[summary.entity.kind] += 1
        needle = normalise_name(name)
        shown = [
            s
            for s in visible
            if needle in normalise_name(s.entity.name) and (kind is None or s.entity.kind == kind)
        ]
        shown.sort(key=_order_key(order))
        hidden = sorted(
            (s for s in every if fixes.hidden(s.entity.entity_id)), key=_order_key("name")
        )
        merged = await self._merged_names(fixes, shown, tenant)
        return EntityOverview(
            by_kind=by_kind, total=len(visible), shown=shown, hidden=hidden, merged=merged
        )

    async def _merged_names(
        self, fixes: EntityCorrections, shown: list[EntitySummary], tenant: UUID
    ) -> dict[UUID, list[Entity]]:
        members = {s.entity.entity_id: fixes.members(s.entity.entity_id) for s in shown}
        others = [m for target, ids in members.items() for m in ids if m != target]
        if not others:
            return {}
        known = {e.entity_id: e for e in await self._store.get_entities(others, tenant)}
        return {
            target: sorted(
                (known[m] for m in ids if m != target and m in known),
                key=lambda e: (normalise_name(e.name), e.kind),
            )
            for target, ids in members.items()
            if any(m != target and m in known for m in ids)
        }

    def merge_entity(self, entity_id: UUID, into: UUID, *, workspace: str) -> None:
        """Make ``entity_id`` another name of ``into`` ("Warhol" -> "Andy Warhol"): its
        passages become ``into``'s, in lists, filters and chips. ``ValueError`` when ``into``
        is the entity itself or already stands for it (a merge loop)."""
        self._call(self._merge(entity_id, into, workspace))

    async def _merge(self, entity_id: UUID, into: UUID, workspace: str) -> None:
        tenant = await tenant_of(self._store, workspace)
        fixes = await corrections_of(self._store, tenant)
        target = fixes.canonical(into)
        if target == entity_id or into == entity_id:
            raise ValueError("an entity cannot be merged into itself or a name merged into it")
        current = fixes.of(entity_id)
        await self._store.correct_entity(current.model_copy(update={"merged_into": target}), tenant)

    def unmerge_entity(self, entity_id: UUID, *, workspace: str) -> None:
        """Undo ``merge_entity``: ``entity_id`` is its own entity again."""
        self._change(entity_id, workspace, merged_into=None)

    def set_entity_kind(self, entity_id: UUID, kind: EntityKind, *, workspace: str) -> None:
        """Make the entity ``entity_id`` stands for one of ``kind``: it becomes another name
        of the entity of its name and that kind (``core.domain.entities.corrections``), so
        its passages and every name merged into it go with it. Changing it back undoes it."""
        self._call(self._set_kind(entity_id, kind, workspace))

    async def _set_kind(self, entity_id: UUID, kind: EntityKind, workspace: str) -> None:
        tenant = await tenant_of(self._store, workspace)
        fixes = await corrections_of(self._store, tenant)
        target = fixes.canonical(entity_id)
        known = {
            e.entity_id: e for e in await self._store.get_entities(fixes.members(target), tenant)
        }
        entity = fixes.entity(target, known)
        if entity is None:
            raise KeyError(f"no entity {entity_id} in this workspace")
        wanted = Entity(name=entity.name, kind=kind)
        if wanted.entity_id == target:
            return
        if fixes.canonical(wanted.entity_id) == target:
            # Back to a kind it had: that entity stands for itself again, and this one for it.
            undone = fixes.of(wanted.entity_id).model_copy(update={"merged_into": None})
            await self._store.correct_entity(undone, tenant)
        merged = fixes.of(target).model_copy(update={"merged_into": wanted.entity_id})
        await self._store.correct_entity(merged, tenant)

    def hide_entity(self, entity_id: UUID, hidden: bool = True, *, workspace: str) -> None:
        """Leave the entity out of browsing (its list, the narrowing choices, the chips), or
        show it again; a filter naming it still works."""
        self._change(entity_id, workspace, hidden=hidden)

    def _change(self, entity_id: UUID, workspace: str, **change: object) -> None:
        async def change_it() -> None:
            tenant = await tenant_of(self._store, workspace)
            current = (await corrections_of(self._store, tenant)).of(entity_id)
            changed = EntityCorrection.model_validate({**current.model_dump(), **change})
            await self._store.correct_entity(changed, tenant)

        self._call(change_it())

    def reextract_entities(
        self, *, workspace: str, entity_list: str | None = None
    ) -> ReextractionReport:
        """Find every passage's entities again with today's extractor (and ``entity_list``, a
        CSV as ``load --entities`` takes, when given), in one atomic write of every source
        (``replace_sources``): until it commits every read sees the old entities, whole.
        Corrections stay (they name entities by id). ``EntityListError`` for a bad list.
        Unlike the profile re-index it takes no lock while it reads: an upload to the same
        workspace meanwhile is overwritten by the passages read before it (run it when
        nobody uploads; the screen and the command say what it does)."""
        extractor = (
            entity_list_extractor(entity_list) if entity_list is not None else RuleBasedExtractor()
        )
        return self._call(self._reextract(workspace, extractor))

    async def _reextract(self, workspace: str, extractor: EntityExtractor) -> ReextractionReport:
        tenant = await tenant_of(self._store, workspace)
        before = _by_kind(await corrected_summaries(self._store, tenant))
        sources: list[tuple[str, list[StoredChunk]]] = []
        entities: dict[UUID, Entity] = {}
        passages = changed = 0
        for source in await self._store.list_sources(tenant):
            chunks = await self._store.get_by_source(source.source_id, tenant)
            found, named = reextracted(chunks, extractor)
            await checkpoint()  # a source's extraction is ~1 ms per 1,000 characters
            passages += len(chunks)
            changed += sum(
                old.entity_ids != new.entity_ids
                or old.metadata.get("mentions") != new.metadata.get("mentions")
                for old, new in zip(chunks, found, strict=True)
            )
            entities.update((e.entity_id, e) for e in named)
            sources.append((source.source_id, found))
        if sources:
            await self._store.replace_sources(tenant, sources, list(entities.values()))
        after = _by_kind(await corrected_summaries(self._store, tenant))
        return ReextractionReport(
            before=before, after=after, sources=len(sources), passages=passages, changed=changed
        )
