"""What every store accepts as text and positions, and how a passage becomes terms: the checks
and helpers each adapter calls, so two stores can never accept different things."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from core.domain.chunks import storable_text_problem
from core.domain.filters import PassageFilter
from core.domain.names import format_problem
from core.domain.tokenize import DEFAULT_PROFILE, Profile, tokenize

#: Largest offset or index any store keeps (PostgreSQL bigint); larger ones are rejected everywhere.
MAX_POSITION = 2**63 - 1


def passage_terms(text: str, profile: Profile = DEFAULT_PROFILE) -> tuple[int, Counter[str]]:
    """A passage's doc_length (tokens, repeats included) and tf per term: one tokenisation."""
    tokens = tokenize(text, profile)
    return len(tokens), Counter(tokens)


def is_storable(value: str) -> bool:
    """False for text no store can hold (a term or key with NUL or a lone surrogate)."""
    return storable_text_problem(value) is None


def check_name(name: str, what: str) -> None:
    """Reject a name no store can hold; the Entity and Workspace models allow NUL.

    A workspace name also refuses format characters (zero-width, bidi controls): invisible,
    they make two names that print alike. Entity names keep them (a zero-width non-joiner
    spells Persian words), and the models allow them so that a stored name stays readable.
    """
    if not is_storable(name):
        raise ValueError(f"{what} name {name!r} contains a NUL or a lone surrogate")
    problem = format_problem(name) if what == "workspace" else None
    if problem is not None:
        raise ValueError(f"{what} name {name!r} {problem}")


def check_filter(within: PassageFilter | None) -> None:
    """Refuse a filter no store can read (NUL or a lone surrogate in a source id, metadata
    field or value) in the model's own sentence, on every store alike: PostgreSQL raised
    ``CharacterNotInRepertoireError`` where memory answered."""
    problem = None if within is None else within.unstorable()
    if problem is not None:
        raise ValueError(problem)


def distinct_terms(terms: Iterable[str]) -> list[str]:
    """The requested terms, deduplicated and sorted: the keys of ``doc_frequencies``."""
    return sorted(set(terms))
