"""What a member may do, written down (issue 49 item 5): docs/sign-in.md's one table of
members' and owners' rights is exactly what the guard enforces.

The guard (``WorkspaceGuard``) derives a checked call for every store call that names a
workspace; ``OWNER_ONLY`` picks those only the owner may make. The table must name every
derived call once, say "no" for a member on exactly ``OWNER_ONLY`` and "yes" for the owner on
every row; ``test_access.py`` then makes each "no" call as a member and finds it refused.
"""

from __future__ import annotations

from core.service.access import OWNER_ONLY, WorkspaceGuard, port_calls
from tests.unit.service.rights_table import owner_only_calls, rights_rows


def derived_calls() -> set[str]:
    """The store calls the guard checks through ``_guarded`` (not the hand-written ones)."""
    return {
        name
        for name in port_calls()
        if (getattr(WorkspaceGuard, name).__doc__ or "").startswith("``ChunkStore.")
    }


def test_the_table_names_every_call_the_guard_checks_exactly_once() -> None:
    named = [call for *_, calls in rights_rows() for call in calls]
    assert len(named) == len(set(named)), "a store call is in two rows"
    assert set(named) == derived_calls()


def test_a_member_is_refused_exactly_the_calls_the_table_says_no_to() -> None:
    assert owner_only_calls() == set(OWNER_ONLY)


def test_every_row_says_yes_or_no_and_the_owner_may_do_all_of_it() -> None:
    rows = rights_rows()
    assert len(rows) >= 8
    for what, owner, member, calls in rows:
        assert owner == "yes" and member in {"yes", "no"} and calls, what
