"""How much one query may ask for, refused in plain words before anything is read.

The service is the API (the pages cap k at 100, a caller of ``LexplainService`` does not go
through them), and every session shares one process and one event loop: probed on a
47,505-passage workspace, a query of 10,000 distinct words took 3.9 GB and 36 s, ``k`` =
10^9 with no limit explained all 47k matches, an Evaluate of 1M queries ran past 300 s, and a
light search queued behind a 2,000-term Truncation waited 8.85 s instead of 0.22 s.

- A query: at most ``MAX_QUERY_TERMS`` distinct terms (1,024, Lucene's ``maxClauseCount``) and
  ``MAX_QUERY_WORDS`` words, with a raw ``MAX_QUERY_CHARS`` as a far-off safety net: the one
  rule of ``core.domain.query_cost``, re-exported here, which every path applies. Cutting a
  long query silently was rejected: the ranking would answer a question nobody asked.
- ``k``: at most ``MAX_K``; every result carries its explanation. ``limit``: at least 1 (a limit
  of 0 scores nothing; the page shows the refusal).
- One read's candidate columns: the tf matrix is dense (``LexicalCandidates.tfs``, int64, rows ×
  distinct terms), so rows × terms is at most ``MAX_CANDIDATE_CELLS`` (256 MiB of tfs),
  whatever the query, the limit or the corpus. Checked from a passage count, and only when
  that is not enough, from a zero-row read that counts the matches: two cheap reads rather
  than sparse columns in every store and scorer (rejected for now: a change of the port).
- Evaluate: at most ``MAX_EVALUATE_QUERIES`` judged queries in one run, and at most
  ``MAX_EVALUATE_RUNS`` runs (limits, or run specs) in one call: the screen offers two (A and
  B), and each run of another workspace, ranker or filter is another read or ranking of
  every query, so the Python API's "any number" was 10,000 queries times whatever it was given.
  At a limit above ``EVALUATE_MEASURED_LIMIT`` (the one that cap was measured at) at most
  ``MAX_UNCUT_EVALUATE_QUERIES``: PostgreSQL's reads then build every matching passage's
  columns (ranking them from the postings, as memory does, is not done there yet).
- Tune: at most ``MAX_GRID_RANKINGS`` grid points x graded queries, refused before a read
  (the cheap half of issue 49 item 1; streaming the candidates per block, which bounds the
  memory of a large set at any grid, is not done yet).
- An expanded run (RM3 in Evaluate and the expansion ledger, Rocchio's residual run): at
  most ``MAX_EXPANDED_QUERIES`` graded queries, since each is read twice; the expansion
  ledger, which also diagnoses the typed run, at most ``MAX_LEDGER_QUERIES``.
- Every number an analysis takes (k, limit, a parity's queries, a ceiling's limits) passes
  ``whole`` at the facade's door: an int (not a bool, a float such as NaN, inf or 10.0, nor a
  string such as "10") within its documented range, or one sentence naming the parameter and
  the range, ``NUMBER_REFUSAL``'s. The screens, the terminal and the Python API all reach it,
  so they refuse alike; pydantic's own refusals are put in one sentence by ``one_sentence``.
  Rejected: ``validate_call`` on every action (its refusals are multi-line dumps, and the
  coercion of "10" to 10 would accept what the API's types say it does not take), and a
  check per action (they had drifted: ``diagnose(k=nan)`` reached numpy, ``parity(queries=-1)``
  ``random.sample``).
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Final, TypeVar
from uuid import UUID

from pydantic import ValidationError

from core.analysis.truncation import UNLIMITED
from core.domain.entities import EntityCorrections
from core.domain.filters import PassageFilter
from core.domain.query_cost import MAX_QUERY_CHARS as MAX_QUERY_CHARS
from core.domain.query_cost import MAX_QUERY_TERMS as MAX_QUERY_TERMS
from core.domain.query_cost import MAX_QUERY_WORDS as MAX_QUERY_WORDS
from core.domain.query_cost import check_query_terms as check_query_terms
from core.domain.query_cost import checked_terms as checked_terms
from core.domain.ranking import LexicalCandidates
from core.stores.port import ChunkStore

T = TypeVar("T")

#: Largest k of any screen or run (the pages offer up to 100).
MAX_K: Final = 1_000
#: Most candidate rows × distinct query terms one read may hold (int64: 256 MiB).
MAX_CANDIDATE_CELLS: Final = 2**25
#: Bytes per cell of the candidate tf matrix (int64), for the refusal's words.
CELL_BYTES: Final = 8
#: Most judged queries one Evaluate run scores (BEIR's largest query sets have about 10,000):
#: 45-49 s on PostgreSQL 15, 7 s in memory (47,505 passages, limit 1,000).
MAX_EVALUATE_QUERIES: Final = 10_000
#: The largest limit ``MAX_EVALUATE_QUERIES`` was measured at: a larger limit ranks more of
#: each query's candidates (at 10,000,000, every matching passage).
EVALUATE_MEASURED_LIMIT: Final = 1_000
#: Most judged queries one Evaluate takes when a run's limit is above
#: ``EVALUATE_MEASURED_LIMIT``: at limit 10,000,000 over 47,505 passages, 10,000 took 84.0 s
#: and 5,000 59.5 s on PostgreSQL 15 (its reads build every matching passage's columns; 13.1
#: and 7.4 s in memory, ranked straight from the postings).
MAX_UNCUT_EVALUATE_QUERIES: Final = 2_000
#: Most runs (limits, or run specs) one Evaluate ranks: the Evaluate screen's A and B (a run of
#: another workspace, ranker or filter reads or ranks every query again; 10,000 queries take
#: 45-49 s on PostgreSQL at one run, 53 s at two rankers). More runs are compared from saved
#: ones (Runs: 2 to 5).
MAX_EVALUATE_RUNS: Final = 2
#: Largest limit of any read: the "no limit" of a run (2^62), within PostgreSQL's bigint.
MAX_LIMIT: Final = UNLIMITED
#: Most queries one parity check asks both stores (its default is 200): each is read at its
#: limit and unlimited from both; 1,000 take 14 s in memory and 29 s on PostgreSQL at 47,505
#: passages, 10,000 ran past the 120 s a call may take.
MAX_PARITY_QUERIES: Final = 1_000
#: Most limits one ceiling curve is drawn at (the Truncation screen asks for a few dozen).
MAX_CEILING_LIMITS: Final = 1_000
#: Most (k1, b) points x graded queries one Tune ranks (issue 49: 42 points x 10,000 queries
#: took 35 s and 2.4 GB on PostgreSQL, 400 x 10,000 took 106 s): the default grid's 42 points
#: over up to 2,380 queries, or the largest grid (400 points) over 250.
MAX_GRID_RANKINGS: Final = 100_000
#: Most graded queries one expanded run (RM3, or Rocchio's residual) ranks: each is read twice,
#: typed and expanded (issue 49: the residual run of 10,000 queries took 134 s on PostgreSQL,
#: 47,505 passages, 13 ms a query; the expansion ledger of 10,000 took 84 s in memory at 5,000).
MAX_EXPANDED_QUERIES: Final = 2_000
#: Most judged queries one diagnosis takes: 10,000 took 164-254 s (bench_query_probes'
#: analyses, 47,505 passages, limit 1,000); 2,000 take 30-32 s on PostgreSQL 15 (41-44 s at
#: load 2.5-2.9), 6-6.5 s in memory (by passage, by document, from files).
MAX_DIAGNOSED_QUERIES: Final = 2_000
#: Most graded queries in one expansion ledger: it is an expanded Evaluate (typed and RM3) and
#: the typed run's diagnosis, so 2,000 took 78.9 s on PostgreSQL 15 (24.4 s in memory; 47,505
#: passages, limit 1,000), against 43-46 s for the diagnosis alone.
MAX_LEDGER_QUERIES: Final = 1_000
#: A number refused at the door: the parameter, its range and what was given.
NUMBER_REFUSAL: Final = "{name} must be a whole number from {low} to {high}, got {given}"
#: The prefix pydantic puts before a validator's own sentence.
PYDANTIC_VALUE_ERROR: Final = "Value error, "
#: What the query screens say about these bounds, in one place.
QUERY_BOUNDS_NOTE: Final = (
    f"A query keeps at most {MAX_QUERY_TERMS:,} distinct terms and {MAX_QUERY_WORDS:,} words, "
    f"k is at most {MAX_K:,} and the limit at least 1; a query whose candidates × terms "
    f"exceed {MAX_CANDIDATE_CELLS:,} is refused (use fewer or rarer terms, or a smaller limit)."
)
#: What the Evaluate screen says about its bounds.
EVALUATE_BOUNDS_NOTE: Final = (
    f"One run scores at most {MAX_EVALUATE_QUERIES:,} judged queries, each of at most "
    f"{MAX_QUERY_TERMS:,} distinct terms and {MAX_QUERY_WORDS:,} words "
    f"({MAX_UNCUT_EVALUATE_QUERIES:,} queries at a limit above {EVALUATE_MEASURED_LIMIT:,}); "
    "a larger file is refused (split it)."
)


def _shown(value: int) -> str:
    return "2^62" if value == UNLIMITED else f"{value:,}"


def whole(value: object, name: str, low: int, high: int) -> int:
    """``value`` as an int when it is a whole number from ``low`` to ``high``; otherwise
    ``ValueError`` in ``NUMBER_REFUSAL``'s one sentence (``name`` as the sentence says it)."""
    given = repr(value)
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        number = int(value)
        if low <= number <= high:
            return number
        given = _shown(number)
    raise ValueError(
        NUMBER_REFUSAL.format(name=name, low=_shown(low), high=_shown(high), given=given)
    )


def one_sentence(exc: ValueError) -> str:
    """A refusal in one sentence: a bound's own, or for a pydantic model each field's problem
    (``field: message``, a validator's sentence as it is), never pydantic's dump and its URL."""
    if not isinstance(exc, ValidationError):
        return str(exc)
    problems = []
    for error in exc.errors():
        message = str(error["msg"])
        if message.startswith(PYDANTIC_VALUE_ERROR):  # a validator's own sentence
            problems.append(message.removeprefix(PYDANTIC_VALUE_ERROR))
            continue
        where = ".".join(str(part) for part in error["loc"])
        problems.append(f"{where}: {message}" if where else message)
    return "; ".join(problems)


def check_k(k: int) -> int:
    """``k`` a whole number between 1 and ``MAX_K``."""
    return whole(k, "k", 1, MAX_K)


def check_limit(limit: int) -> int:
    """A limit a whole number from 1 (a limit of 0 hands BM25 no candidate) to ``MAX_LIMIT``."""
    return whole(limit, "the limit", 1, MAX_LIMIT)


def check_k_limit(k: int, limit: int) -> None:
    """The bounds every query action checks before reading anything."""
    check_k(k)
    check_limit(limit)


def check_grid(points: int, queries: int) -> None:
    """A Tune of ``points`` (k1, b) pairs over ``queries`` graded queries ranks each query at
    each point: refused beyond ``MAX_GRID_RANKINGS``, before anything is read."""
    if points * queries > MAX_GRID_RANKINGS:
        raise ValueError(
            f"a grid of {points:,} points over {queries:,} graded queries is "
            f"{points * queries:,} rankings; at most {MAX_GRID_RANKINGS:,} are tuned at once: "
            "use fewer points (a coarser step or a narrower range) or a smaller query set"
        )


def check_diagnosed(queries: int) -> None:
    """A diagnosis of ``queries`` judged queries: refused beyond ``MAX_DIAGNOSED_QUERIES``,
    before anything is read (each lost unit is explained and looked up)."""
    if queries > MAX_DIAGNOSED_QUERIES:
        raise ValueError(
            f"a diagnosis explains every lost relevant passage of every query; at most "
            f"{MAX_DIAGNOSED_QUERIES:,} judged queries are diagnosed at once, not {queries:,}: "
            "use a smaller query set or judgment file"
        )


def check_ledger(queries: int) -> None:
    """An expansion ledger of ``queries`` graded queries (an expanded run and a diagnosis of
    each): refused beyond ``MAX_LEDGER_QUERIES``, before any candidate is read."""
    if queries > MAX_LEDGER_QUERIES:
        raise ValueError(
            f"an expansion ledger ranks each query typed and expanded and diagnoses it; at most "
            f"{MAX_LEDGER_QUERIES:,} graded queries are in one ledger, not {queries:,}: use a "
            "smaller query set"
        )


def check_evaluated(queries: int, limits: Sequence[int]) -> None:
    """An Evaluate of ``queries`` judged queries at ``limits`` (its runs'): refused beyond
    ``MAX_UNCUT_EVALUATE_QUERIES`` when a limit is above ``EVALUATE_MEASURED_LIMIT``."""
    widest = max(limits, default=0)
    if widest > EVALUATE_MEASURED_LIMIT and queries > MAX_UNCUT_EVALUATE_QUERIES:
        raise ValueError(
            f"an Evaluate at a limit above {EVALUATE_MEASURED_LIMIT:,} ranks more candidates "
            f"of each query; at most {MAX_UNCUT_EVALUATE_QUERIES:,} judged queries are "
            f"evaluated at such a limit, not {queries:,}: use a limit of at most "
            f"{EVALUATE_MEASURED_LIMIT:,} or a smaller query set"
        )


def check_expanded(queries: int) -> None:
    """An expanded run of ``queries`` graded queries reads each twice: refused beyond
    ``MAX_EXPANDED_QUERIES``, before anything is read."""
    if queries > MAX_EXPANDED_QUERIES:
        raise ValueError(
            f"an expanded run reads each query twice; at most {MAX_EXPANDED_QUERIES:,} graded "
            f"queries are expanded at once, not {queries:,}: use a smaller query set"
        )


def check_limits(limits: Sequence[int]) -> list[int]:
    """A list of limits (a ceiling curve's): at least one, at most ``MAX_CEILING_LIMITS``,
    each a whole number from 0 (the curve's first point: nothing kept) to ``MAX_LIMIT``."""
    if isinstance(limits, str | bytes) or not isinstance(limits, Sequence):
        raise ValueError(f"the limits must be a list of whole numbers, got {limits!r}")
    whole(len(limits), "the number of limits", 1, MAX_CEILING_LIMITS)
    return [whole(limit, "each limit", 0, MAX_LIMIT) for limit in limits]


def check_runs(runs: Sequence[T], name: str) -> list[T]:
    """An Evaluate's runs (``name``: "runs", or "limits" for ``evaluate``): a list of 1 to
    ``MAX_EVALUATE_RUNS``, refused in ``NUMBER_REFUSAL``'s sentence before anything is read."""
    if isinstance(runs, str | bytes) or not isinstance(runs, Sequence):
        raise ValueError(f"the {name} must be a list, got {runs!r}")
    whole(len(runs), f"the number of {name}", 1, MAX_EVALUATE_RUNS)
    return list(runs)


def _too_many_cells(distinct: int, rows: int) -> ValueError:
    mib = MAX_CANDIDATE_CELLS * CELL_BYTES // 2**20
    return ValueError(
        f"the query's {distinct:,} distinct terms over {rows:,} candidate passages would hold "
        f"{distinct * rows:,} term counts, more than the {MAX_CANDIDATE_CELLS:,} ({mib:,} MB) one "
        "query may: use fewer or rarer terms, or a smaller limit"
    )


async def bounded_candidates(
    store: ChunkStore,
    terms: Sequence[str],
    tenant: UUID,
    limit: int,
    within: PassageFilter | None = None,
) -> LexicalCandidates:
    """``store.lexical_candidates`` once it is known to fit ``MAX_CANDIDATE_CELLS``.

    An entity ``within`` names stands for every entity an analyst merged into it. A short
    query or a small limit costs nothing more; otherwise the workspace's passage count
    bounds the rows, and if that is not enough, a zero-row read counts the passages matching.
    """
    check_query_terms(terms)
    if within is not None and within.entities:
        # A filter on an entity admits the passages of every name merged into it (one read).
        within = EntityCorrections(await store.entity_corrections(tenant)).widened(within)
    distinct = len(set(terms))
    if distinct * limit > MAX_CANDIDATE_CELLS:
        rows = min(limit, await store.passage_count(tenant))
        if distinct * rows > MAX_CANDIDATE_CELLS:
            counted = await store.lexical_candidates(terms, tenant, 0, within)
            rows = min(limit, counted.matching)
            if distinct * rows > MAX_CANDIDATE_CELLS:
                raise _too_many_cells(distinct, rows)
    return await store.lexical_candidates(terms, tenant, limit, within)
