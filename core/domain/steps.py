"""Synchronous work cut into steps: a generator that yields (nothing) between them.

Pure computations that can hold the service's one loop for a tenth of a second (scoring a
1,000-term query's candidates, a Truncation's analysis) are written once as steps; ``finish``
runs them whole (tests, ``load``, the CLI) and ``core.checkpoint.stepped`` runs them with a
checkpoint between steps in the service. The rejected alternative, an async copy of each
analysis, would be a second definition of the same arithmetic, and the domain may not know
about event loops.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any, TypeVar

T = TypeVar("T")

#: Work that yields between its steps and returns its result. A step yields None, or something
#: the runner may await before the next step (``LexicalCandidates.chunks_ahead``); ``finish``
#: drops it.
Steps = Generator[Any, None, T]


def finish(steps: Steps[T]) -> T:
    """Run ``steps`` to the end in one piece."""
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]
