"""Entities: the Entities screen's overview of a workspace's entities, counted, searched, sorted.

The counts by kind, the name search and the order are computed here, once, so the screen only
draws them and a test can hold the numbers without a browser. Rejected: filtering the store's
list in the page (as it was), which put a rule (how a name matches) where no test of the service
sees it. Names match as ``normalise_name`` writes them (case, width and spacing ignored), the
form two mentions of one entity share.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from pydantic import BaseModel, ConfigDict

from core.domain.entities import ENTITY_KINDS, EntityKind, normalise_name
from core.service.runner import StoreRunner
from core.stores.port import EntitySummary

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

    #: Entities of each kind in the whole workspace (every kind, zero included).
    by_kind: dict[EntityKind, int]
    #: Entities in the whole workspace.
    total: int
    #: The entities whose name holds the search text (and of the kind asked for), in order.
    shown: list[EntitySummary]


def _order_key(order: EntityOrder) -> Callable[[EntitySummary], tuple[int | str, ...]]:
    """Ties broken by name, then by passages, then by id: the same order every time."""
    if order == "name":
        return lambda s: (normalise_name(s.entity.name), -s.passages, str(s.entity.entity_id))
    return lambda s: (-s.passages, normalise_name(s.entity.name), str(s.entity.entity_id))


class EntityActions(StoreRunner):
    """The Entities screen's actions."""

    def entity_overview(
        self,
        *,
        workspace: str,
        name: str = "",
        kind: EntityKind | None = None,
        order: EntityOrder = "passages",
    ) -> EntityOverview:
        """Counts by kind of every entity, and the entities whose name contains ``name``
        (of ``kind`` when given) ordered by ``order``."""
        every = self._call(self._store.list_entities(self._tenant(workspace)))
        by_kind: dict[EntityKind, int] = dict.fromkeys(ENTITY_KINDS, 0)
        for summary in every:
            by_kind[summary.entity.kind] += 1
        needle = normalise_name(name)
        shown = [
            s
            for s in every
            if needle in normalise_name(s.entity.name) and (kind is None or s.entity.kind == kind)
        ]
        shown.sort(key=_order_key(order))
        return EntityOverview(by_kind=by_kind, total=len(every), shown=shown)
