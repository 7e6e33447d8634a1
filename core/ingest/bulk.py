"""How a bulk load runs differently from an upload: larger groups, rarer garbage collections,
lower CPU priority. Kept beside the command line (``core.terminal``) rather than in it, since
each is a policy with its own measurement; the indexer and the stores know nothing of them.
"""

from __future__ import annotations

import contextlib
import gc
import os
from collections.abc import Iterator

#: The niceness ``load`` adds to itself (and gives the embedded server's processes serving it)
#: unless ``--full-priority``: a load is bulk background work, and run beside the app it took
#: the cores the app's searches and their server needed (bench_stall, PostgreSQL: search p99
#: 2.1-2.4x idle while another process loaded). On an idle machine it changes nothing.
LOAD_NICENESS = 10


#: Whether ``run_in_background`` has lowered this process's priority (once: ``core.__main__``
#: may do it before its imports, ``core.terminal`` after the store opened).
_in_background = False


def run_in_background() -> None:
    """This process (and what it starts from now on) at ``LOAD_NICENESS`` more, once."""
    global _in_background
    if _in_background:
        return
    _in_background = True
    with contextlib.suppress(OSError):
        os.nice(LOAD_NICENESS)


#: Passages per write of ``load`` and of an upload (the indexer's default is 5,000): a
#: PostgreSQL write is one segment of posting blocks, a row per distinct term, so fewer, larger
#: segments send fewer rows (100k Zipf passages: 1.31 M rows in 5,000s, 0.67 M in 20,000s) and
#: need no merge of ten 5,000s into a 50,000 (two merges, ~8 s of server time at 100k).
LOAD_BATCH_PASSAGES = 20_000

#: Allocations between young-generation collections while a load runs (CPython's default is
#: 700: at 100k passages that was thousands of collections, most of them rescanning the read
#: documents that live until the load ends). At 100,000 a 200k tiny-record load still made
#: ~25 young collections of 90-190k objects and 2 middle ones, each collecting nothing (the
#: documents in flight, ~10 tracked objects a record): ~1 s of the loader's ~8.5 s of CPU, and
#: its caches; at 1,000,000 the in-flight records die before one is due (0.1 s; loader CPU
#: 8.5 -> 7.0 s, dry run 6.9 -> 6.5). Cyclic garbage waits at most a million allocations.
BULK_GC_THRESHOLD = 1_000_000


@contextlib.contextmanager
def bulk_collection() -> Iterator[None]:
    """Fewer, cheaper garbage collections while a load runs, restored afterwards.

    The documents read stay alive for the whole load, and every full collection walked them
    again: cProfile of a 20k-passage load put the collector at a fifth of the Python time.
    They are frozen (moved out of the collector's generations, ``gc.freeze``) and collections
    are made rarer. Rejected: ``gc.disable()`` for the load: cycles asyncio makes per write
    (tasks, exceptions with tracebacks) would never be freed on a long load.
    """
    thresholds = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(BULK_GC_THRESHOLD, *thresholds[1:])
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        gc.unfreeze()
