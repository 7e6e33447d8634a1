"""One door for every number an analysis takes (issue 49 item 2): each entry point of the
facade, fed NaN, inf, a negative, a float for an int, a string for an int and NUL, refuses in
one sentence (``one_sentence``) that names the parameter and its range, before anything is
read; a filter naming NUL is refused as it is built, in the same words on every screen.

The numbers the issue found reaching code not written for them: ``diagnose(k=nan)`` (numpy's
slice), ``diagnose(k="10")`` (a comparison), ``search(limit=inf)``, ``parity(queries=-1)``
(``random.sample``) and ``10**9``, ``limit_ceiling`` at [-5, 0, 10**30], ``queries_hardest_first
(limit=-1)``, ``grid_values(0, inf, 1)`` and a NaN step.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from core.analysis.tuning import GridSpec, grid_values
from core.service import (
    MAX_K,
    CeilingJudgments,
    LexplainService,
    MetadataMatch,
    PassageFilter,
    Ranker,
    RankerKind,
    RunSpec,
    one_sentence,
)
from core.service.bounds import MAX_CEILING_LIMITS, MAX_PARITY_QUERIES
from core.stores.memory import InMemoryChunkStore

WS = "door"
#: What a careless or hostile caller gives where a whole number is meant.
BAD_NUMBERS: tuple[object, ...] = (math.nan, math.inf, -1, 10.0, "10", "\x00")
A, B = Ranker.of(RankerKind.WORKSPACE), Ranker.of(RankerKind.CLASSIC)
FILES = (
    b'{"_id": "q1", "text": "wing flutter"}\n',
    b"query-id\tcorpus-id\tscore\nq1\td1.txt\t1\n",
)


@pytest.fixture(scope="module")
def service() -> Iterator[LexplainService]:
    async def opened() -> InMemoryChunkStore:
        return InMemoryChunkStore()

    svc = LexplainService(opened)
    svc.upload_files(
        [(f"d{i}.txt", f"wing flutter word{i}".encode()) for i in range(12)], workspace=WS
    )
    svc.save_query_set("set", "wing flutter\nword3 wing", "lines", workspace=WS)
    top = svc.search("wing flutter", workspace=WS).passages
    svc.grade("wing flutter", top[0].chunk.id, 2, workspace=WS)
    yield svc
    svc.close()


def entry_points(s: LexplainService) -> dict[str, tuple[str, Callable[[Any], object]]]:
    """Each facade entry point with one number slot: (the parameter's name in the refusal,
    a call giving that slot the value)."""
    judged = CeilingJudgments()
    return {
        "search k": ("k", lambda v: s.search("wing", v, 100, workspace=WS)),
        "search limit": ("the limit", lambda v: s.search("wing", 10, v, workspace=WS)),
        "truncation": ("the limit", lambda v: s.truncation("wing", 10, v, workspace=WS)),
        "why_not": ("k", lambda v: s.why_not("wing", "d1.txt", v, 100, workspace=WS)),
        "compare": ("the limit", lambda v: s.compare("wing", A, B, 10, v, workspace=WS)),
        "evaluate k": ("k", lambda v: s.evaluate(*FILES, v, [100], workspace=WS)),
        "evaluate limits": ("the limit", lambda v: s.evaluate(*FILES, 10, [v], workspace=WS)),
        "evaluate_runs": (
            "k",
            lambda v: s.evaluate_runs(*FILES, v, [RunSpec(workspace=WS, limit=100)]),
        ),
        "evaluate_judged": (
            "k",
            lambda v: s.evaluate_judged("set", v, [RunSpec(workspace=WS, limit=9)], workspace=WS),
        ),
        "diagnose k": ("k", lambda v: s.diagnose("set", v, 100, workspace=WS)),
        "diagnose limit": ("the limit", lambda v: s.diagnose("set", 10, v, workspace=WS)),
        "diagnose_files": ("the limit", lambda v: s.diagnose_files(*FILES, 10, v, workspace=WS)),
        "tune": ("the limit", lambda v: s.tune("set", 10, v, workspace=WS)),
        "expansion_ledger": (
            "the limit",
            lambda v: s.expansion_ledger("set", 10, v, workspace=WS, expand=_rm3()),
        ),
        "limit_ceiling k": ("k", lambda v: s.limit_ceiling("wing", v, [5], judged, workspace=WS)),
        "limit_ceiling limits": (
            "each limit",
            lambda v: s.limit_ceiling("wing", 10, [5, v], judged, workspace=WS),
        ),
        "parity queries": ("the number of queries", lambda v: s.parity(workspace=WS, queries=v)),
        "parity limit": ("the limit", lambda v: s.parity(workspace=WS, limit=v)),
        "queries_hardest_first": (
            "the limit",
            lambda v: s.queries_hardest_first("set", workspace=WS, limit=v),
        ),
    }


def _rm3() -> Any:
    from core.analysis.expansion import ExpansionSpec

    return ExpansionSpec()


ENTRY_POINTS = list(entry_points(LexplainService.__new__(LexplainService)))


def refused(call: Callable[[], object]) -> str:
    """The one sentence a call is refused with (it must be refused, as a ValueError)."""
    with pytest.raises(ValueError) as caught:
        call()
    sentence = one_sentence(caught.value)
    assert "\n" not in sentence and "pydantic" not in sentence, sentence
    return sentence


@pytest.mark.parametrize("entry", ENTRY_POINTS)
@pytest.mark.parametrize("bad", BAD_NUMBERS, ids=repr)
def test_every_entry_point_refuses_a_bad_number_in_one_sentence_naming_it_and_its_range(
    service: LexplainService, entry: str, bad: object
) -> None:
    name, call = entry_points(service)[entry]
    sentence = refused(lambda: call(bad))
    assert sentence.startswith(f"{name} must be a whole number from "), sentence
    assert sentence.endswith(f", got {bad!r}" if not isinstance(bad, int) else ", got -1")


def test_the_sentences_name_each_range_and_refuse_the_sizes_the_issue_found(
    service: LexplainService,
) -> None:
    points = entry_points(service)
    assert refused(lambda: points["search k"][1](MAX_K + 1)) == (
        f"k must be a whole number from 1 to {MAX_K:,}, got {MAX_K + 1:,}"
    )
    assert refused(lambda: points["search limit"][1](0)) == (
        "the limit must be a whole number from 1 to 2^62, got 0"
    )
    assert refused(lambda: points["parity queries"][1](10**9)) == (
        f"the number of queries must be a whole number from 1 to {MAX_PARITY_QUERIES:,}, "
        "got 1,000,000,000"
    )
    judged = CeilingJudgments()
    for limits in ([-5, 0, 10], [0, 10**30]):
        assert refused(
            lambda limits=limits: service.limit_ceiling("wing", 10, limits, judged, workspace=WS)
        ).startswith("each limit must be a whole number from 0 to 2^62, got ")
    too_many = list(range(MAX_CEILING_LIMITS + 1))
    assert refused(
        lambda: service.limit_ceiling("wing", 10, too_many, judged, workspace=WS)
    ).startswith("the number of limits must be a whole number from 1 to ")
    assert service.limit_ceiling("wing", 10, [0, 5], judged, workspace=WS) is not None


@pytest.mark.parametrize(
    ("low", "high", "step", "said"),
    [
        (0, math.inf, 1, "a range's high must be a finite number, got inf"),
        (0, 1, math.nan, "a range's step must be a finite number, got nan"),
        (math.nan, 1, 0.1, "a range's low must be a finite number, got nan"),
        (0, 1e308, 1e-308, "a range holds at most 400 values"),
        (0, 1, 5e-324, "a range holds at most 400 values"),
        (0, 1, -0.1, "a range needs a positive step and low <= high"),
        (0, "1", 0.1, "a range's high must be a finite number, got '1'"),
    ],
)
def test_a_grid_range_that_is_not_finite_or_holds_too_many_values_is_refused_in_one_sentence(
    low: Any, high: Any, step: Any, said: str
) -> None:
    assert refused(lambda: grid_values(low, high, step)).startswith(said)


def test_a_grid_of_nan_or_inf_values_is_refused_in_the_models_sentence() -> None:
    assert refused(lambda: GridSpec(k1s=(math.nan,))) == "every k1 must be between 0 and 100"
    assert refused(lambda: GridSpec(bs=(math.inf,))) == "every b must be between 0 and 1"


@pytest.mark.parametrize(
    ("build", "said"),
    [
        (lambda: PassageFilter(sources=("doc\x00a",)), "a filter's source id 'doc\\x00a'"),
        (
            lambda: PassageFilter(metadata=(MetadataMatch(field="ti\x00tle", values=("x",)),)),
            "a filter's metadata field 'ti\\x00tle'",
        ),
        (
            lambda: MetadataMatch(field="title", values=("Ice\x00",)),
            "a filter's value of metadata field 'title' 'Ice\\x00'",
        ),
        (
            lambda: MetadataMatch(field="title", values=("\ud800",)),
            "a filter's value of metadata field 'title' '\\ud800' contains a lone surrogate",
        ),
    ],
)
def test_a_filter_naming_nul_or_a_lone_surrogate_is_refused_as_it_is_built(
    build: Callable[[], object], said: str
) -> None:
    sentence = refused(build)
    assert sentence.startswith(said) and sentence.endswith("which no store can hold"), sentence


def test_a_tune_of_more_grid_points_times_graded_queries_than_the_bound_is_refused_first(
    service: LexplainService, monkeypatch: pytest.MonkeyPatch
) -> None:
    from core.service import bounds

    grid = GridSpec(k1s=(0.9, 1.2), bs=(0.4, 0.75))  # 4 points over the set's 1 graded query
    assert service.tune("set", 10, 100, workspace=WS, grid=grid).means
    monkeypatch.setattr(bounds, "MAX_GRID_RANKINGS", 3)
    read: list[object] = []
    monkeypatch.setattr(
        InMemoryChunkStore, "lexical_candidates", lambda *args, **kw: read.append(args)
    )
    assert refused(lambda: service.tune("set", 10, 100, workspace=WS, grid=grid)) == (
        "a grid of 4 points over 1 graded queries is 4 rankings; at most 3 are tuned at once: "
        "use fewer points (a coarser step or a narrower range) or a smaller query set"
    )
    assert read == [], "candidates were read before the refusal"
