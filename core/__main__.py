"""``python -m core load PATH... --workspace NAME``: see ``core.terminal``.

A ``load`` that cannot start the embedded server (``--dry-run``, or ``--database-url``: an
external server) lowers its priority before it imports the rest: importing ``core.terminal`` is
~1.3 s of CPU, three quarters of a small load's (Cranfield's ``load --dry-run``: 1.35 of
1.8 s), and it ran at full priority beside the app's searches (``bench_stall --store memory
--work load``: 2.72x idle p99 in a quiet pass). A load that may start the embedded server
lowers it once the store is open (``core.terminal.load``), so the server keeps the app's priority.
Rejected: reading the settings here to know (``core.settings`` alone is ~0.75 s of imports).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence


def lower_priority_early(argv: Sequence[str]) -> bool:
    """Lower this process's priority now if ``argv`` is a ``load`` that starts no server and
    is not at ``--full-priority``; whether it did."""
    given = list(argv[: argv.index("--")] if "--" in argv else argv)
    if not given or given[0] != "load" or any(a.startswith("--full") for a in given):
        return False
    if "--dry-run" in given or any(a.split("=")[0] == "--database-url" for a in given):
        from core.ingest import bulk

        bulk.run_in_background()
        return True
    return False


if __name__ == "__main__":
    lower_priority_early(sys.argv[1:])
    from core.terminal import main

    sys.exit(main(program=True))
