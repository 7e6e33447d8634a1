"""The store port: what every chunk store must do, async and tenant-scoped, by capability.

Importers keep writing ``from core.stores.port import X``; each name lives in one module:

| module | what |
| --- | --- |
| ``passage_store`` | ``PassageStore``: passages, term index, a query's candidates, re-index |
| ``entity_store`` | ``EntityStore``: entities and the passages that mention them |
| ``workspace_store`` | ``WorkspaceStore``, the ``Workspace`` record, ``open_workspace`` |
| ``judging_store`` | ``JudgingStore``: query sets, judgments, saved runs |
| ``chunk_store`` | ``ChunkStore``: their union, the protocol every adapter implements |
| ``errors`` | what a store raises that callers handle by kind (``StoreUnavailable``...) |
| ``summaries`` | the read models: sources, entities, corpus counts, terms |
| ``text`` | what every store accepts as text and positions; a passage's terms |

One Protocol per capability rather than one of ~40 methods: a new method has an obvious home,
and a reader of the judging store need not read the passage index's contract. Rejected: an
abstract base class per capability (adapters would import each other's bases; mypy checks a
Protocol structurally at no cost).
"""

from core.stores.port.chunk_store import ChunkStore
from core.stores.port.entity_store import EntityStore
from core.stores.port.errors import (
    ConnectionLost,
    NameTaken,
    StoreInconsistent,
    StoreUnavailable,
    WorkspaceGone,
)
from core.stores.port.judging_store import JudgingStore
from core.stores.port.passage_store import PassageStore, ReindexProgress
from core.stores.port.summaries import CorpusSummary, EntitySummary, SourceSummary, TermFrequency
from core.stores.port.text import (
    MAX_POSITION,
    check_filter,
    check_name,
    distinct_terms,
    is_storable,
    passage_terms,
)
from core.stores.port.workspace_store import (
    MAX_EMAIL_CHARS,
    Workspace,
    WorkspaceStore,
    email_key,
    member_email,
    new_tenant_id,
    open_workspace,
    tenant_of,
)

__all__ = [
    "MAX_EMAIL_CHARS",
    "MAX_POSITION",
    "ChunkStore",
    "ConnectionLost",
    "CorpusSummary",
    "EntityStore",
    "EntitySummary",
    "JudgingStore",
    "NameTaken",
    "PassageStore",
    "ReindexProgress",
    "SourceSummary",
    "StoreInconsistent",
    "StoreUnavailable",
    "TermFrequency",
    "Workspace",
    "WorkspaceGone",
    "WorkspaceStore",
    "check_filter",
    "check_name",
    "distinct_terms",
    "email_key",
    "is_storable",
    "member_email",
    "new_tenant_id",
    "open_workspace",
    "passage_terms",
    "tenant_of",
]
