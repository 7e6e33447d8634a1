"""The sentences and number formats the screens share read as English (issue 48 item 5).

"1 of 1 matching passages admitted shown", "limit 1,000 of 635 matching passages" and a log
axis labelled "1 2 5 10 2 5 100" were what the screens said; these hold core's replacements.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from uuid import uuid4

from core.analysis.sentences import (
    limit_of_matching,
    log_ticks,
    saved_run_labels,
    score_text,
    shown_of_matching,
)
from core.analysis.tuning import GridPoint, TuningGrid
from core.domain.comparison import randomisation_test
from core.domain.judging import SavedRunSummary


def test_shown_of_matching_is_english_for_one_or_many_and_names_the_filter() -> None:
    assert shown_of_matching(1, 1, filtered=True) == (
        "**1 shown** of 1 matching passage the filter admits"
    )
    assert shown_of_matching(10, 631, filtered=False) == "**10 shown** of 631 matching passages"


def test_a_limit_not_below_the_matching_passages_says_all_are_candidates() -> None:
    assert limit_of_matching(1_000, 635, filtered=False) == (
        "limit 1,000: all 635 matching passages are candidates"
    )
    assert limit_of_matching(20, 635, filtered=False) == "limit 20 of 635 matching passages"


def test_a_log_axis_has_every_tick_up_to_the_largest_value() -> None:
    assert log_ticks(631) == [1, 2, 5, 10, 20, 50, 100, 200, 500, 1_000]
    assert log_ticks(1) == [1]


def test_a_listed_score_has_one_format() -> None:
    assert score_text(12.34567) == "12.35"


def grid(best: tuple[float, float], k1s: list[float], bs: list[float]) -> TuningGrid:
    scores = [0.5, 0.6, 0.7]
    return TuningGrid(
        k1s=k1s, bs=bs, metric="ndcg", k=10, limit=100, by_document=False,
        means=[[0.5] * len(k1s)] * len(bs),
        best=GridPoint(k1=best[0], b=best[1], mean=0.6),
        workspace=GridPoint(k1=1.2, b=0.75, mean=0.5),
        query_ids=["1", "2", "3"], best_scores=scores, workspace_scores=scores,
        significance=randomisation_test(scores, scores),
    )  # fmt: skip


def test_tunings_best_point_on_a_widenable_edge_is_said() -> None:
    note = grid((3.0, 0.5), [0.5, 1.0, 3.0], [0.25, 0.5, 1.0]).edge_note
    assert note == (
        "The best point lies on the grid's edge, at the largest k1 tried (3): a larger k1 may "
        "do better. Widen the range and tune again."
    )
    assert grid((1.0, 0.5), [0.5, 1.0, 3.0], [0.25, 0.5, 1.0]).edge_note is None
    assert grid((1.0, 1.0), [0.5, 1.0, 3.0], [0.25, 0.5, 1.0]).edge_note is None  # b <= 1


def test_a_best_point_on_an_edge_widens_that_side_within_the_screens_bounds() -> None:
    screen = ((0.0, 5.0), (0.0, 1.0))
    # k1 0.5-3.0 tried, best at 3: half the range further, to 4.25.
    assert grid((3.0, 0.5), [0.5, 1.0, 3.0], [0.25, 0.5, 1.0]).widened(*screen) == (
        (0.5, 4.25),
        (0.25, 1.0),
    )
    # b at its smallest tried (0.25): down to 0, the screen's bound.
    assert grid((1.0, 0.25), [0.5, 1.0, 3.0], [0.25, 0.5, 1.0]).widened(*screen) == (
        (0.5, 3.0),
        (0.0, 1.0),
    )
    assert grid((1.0, 0.5), [0.5, 1.0, 3.0], [0.25, 0.5, 1.0]).widened(*screen) is None
    # Already at what the screen allows: nothing to offer.
    assert grid((5.0, 0.5), [4.0, 5.0], [0.25, 0.5, 1.0]).widened(*screen) is None


def test_an_explanation_table_shows_core_numbers_in_one_format_with_its_text_escaped() -> None:
    from core.analysis.presentation import explanation_markdown

    rows = [
        {"term": "flutter", "tf": 3, "df": 1234, "idf": 2.345678, "avgdl": 91.3456, "TF part": 1.5,
         "contribution": 3.5185171},
        {"term": "<b>x|y", "tf": 0, "df": 7, "idf": 4.0, "avgdl": 91.3456, "TF part": 0.0,
         "contribution": 0.0},
    ]  # fmt: skip
    assert explanation_markdown(rows).splitlines() == [
        "| term | tf | df | idf | avgdl | TF part | contribution |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
        "| flutter | 3 | 1,234 | 2.3457 | 91.35 | 1.5000 | 3.5185 |",
        "| &#60;b&#62;x&#124;y | 0 | 7 | 4.0000 | 91.35 | 0.0000 | 0.0000 |",
    ]
    assert explanation_markdown([]) == ""


def test_two_runs_of_one_name_saved_in_one_second_are_two_options_to_pick() -> None:
    at = datetime(2026, 12, 6, 14, 49, 27, tzinfo=UTC)
    runs = [
        SavedRunSummary(run_id=uuid4(), name=name, saved_at=at + timedelta(microseconds=n),
                        query_set="s")
        for n, name in enumerate(["bm25", "bm25", "other", "bm25"])
    ]  # fmt: skip
    labels = saved_run_labels(runs)
    assert list(labels) == [
        "bm25 · 2026-12-06 14:49:27",
        "bm25 · 2026-12-06 14:49:27 · 2",
        "other · 2026-12-06 14:49:27",
        "bm25 · 2026-12-06 14:49:27 · 3",
    ]
    assert list(labels.values()) == [run.run_id for run in runs]
