"""What a store raises that a caller handles by kind: one module, so ``except`` clauses and the
facade's words for each have one place to look.

``StoreUnavailable`` (and its kinds) is the store's "not now": the database is gone, out of a
resource or slow. The facade's own ``core.service.facade.StoreUnreachable`` is another thing:
the service could not open a store at all.
"""

from __future__ import annotations

from uuid import UUID


class StoreUnavailable(RuntimeError):
    """A store could not do a call for a reason no document causes, after its own retries.

    Its database is gone, out of a resource (connections, memory, lock slots, disk) or did not
    answer in time. A write that raises it stored nothing. Callers writing many documents stop
    and report instead of retrying document by document: every document would fail the same way.
    """


class ConnectionLost(StoreUnavailable):
    """A store lost its database while working and gave up after its retries.

    Raised instead of the driver's own errors (``InterfaceError: cannot call
    Transaction.__aexit__ ...``), whose wording tells a user nothing; the message says what
    was being done and, for a write, that nothing of it was stored.
    """


class WorkspaceGone(StoreUnavailable):
    """A write reached a workspace that was deleted (or deleted and created again) since the
    writer looked it up. Nothing of the write was stored: the write and the deletion take
    the workspace itself in turn, and a deleted workspace's id is never used again."""

    def __init__(self, tenant_id: UUID) -> None:
        super().__init__(
            "the workspace was deleted while this was being written; nothing of it was stored "
            "(if it was created again under the same name, that one is a new, empty workspace)"
        )
        self.tenant_id = tenant_id


class NameTaken(ValueError):
    """Another workspace has a name a person cannot tell from this one (``name_key``)."""


class StoreInconsistent(RuntimeError):
    """A read found a workspace's counters, df or passages disagreeing (never expected: each
    write keeps them in one transaction); ``python -m core db repair`` recomputes them."""
