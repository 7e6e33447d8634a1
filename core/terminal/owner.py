"""``python -m core owner NAME EMAIL``: give a workspace an owner, or hand it over.

For a workspace made without sign-in or by ``load`` (it has none, so with sign-in nobody sees
it). It acts on the store directly, as an operator's tool: whoever can reach the database may.
"""

from __future__ import annotations

import argparse

from rich.console import Console

from core.stores.port import member_email
from core.terminal.common import (
    EXIT_UNUSABLE,
    open_store_or_say_why,
)


async def set_owner(args: argparse.Namespace, console: Console) -> int:
    """``python -m core owner NAME EMAIL``: the store's workspace NAME is owned by EMAIL."""
    try:
        email = member_email(args.email)
    except ValueError as exc:
        console.print(f"[red]error:[/red] {exc}", highlight=False)
        return EXIT_UNUSABLE
    store = await open_store_or_say_why(args.database_url, console)
    if store is None:
        return EXIT_UNUSABLE
    try:
        named = await store.find_workspace(args.workspace)
        if named is None:
            raise KeyError(args.workspace)
        await store.set_owner(named.tenant_id, email)
        found = await store.get_workspace(named.tenant_id)
    except KeyError:
        console.print(f"[red]error:[/red] there is no workspace {args.workspace!r}")
        return EXIT_UNUSABLE
    finally:
        await store.close()
    members = ", ".join(found.members) if found is not None and found.members else "none"
    console.print(f"ok: {args.workspace!r} is owned by {email}; members: {members}")
    return 0
