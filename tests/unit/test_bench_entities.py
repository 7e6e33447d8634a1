"""The entity evaluation set is what its README says, and the bench scores it as documented."""

from __future__ import annotations

from collections import Counter

from bench.bench_entities import load_set, score


def test_the_evaluation_set_has_over_a_thousand_names_of_each_kind_across_six_genres() -> None:
    rows = load_set("all")
    kinds = Counter(kind for row in rows for _, _, kind in row["entities"])
    assert sum(kinds.values()) >= 1000
    assert set(kinds) == {"person", "organisation", "place"}
    assert {row["genre"] for row in rows} == {
        "news", "interview", "bio", "voyage", "academic", "court"
    }  # fmt: skip
    assert all("NC" not in row["licence"] for row in rows)


def test_every_gold_name_is_a_non_overlapping_span_without_surrounding_spaces() -> None:
    for row in load_set("all"):
        previous_end = 0
        for start, end, _ in row["entities"]:
            assert previous_end <= start < end <= len(row["text"])
            assert not row["text"][start].isspace() and not row["text"][end - 1].isspace()
            previous_end = end


def test_overlapping_credit_needs_the_same_kind_and_is_given_once_per_gold_name() -> None:
    gold = [[(0, 12, "person"), (20, 26, "place")]]
    predicted = [[(0, 4, "person"), (5, 12, "person"), (20, 26, "organisation")]]
    figures = score(predicted, gold)
    assert figures["overlap"]["person"] == {"p": 0.5, "r": 1.0, "f1": 0.667}
    assert figures["overlap"]["place"]["r"] == 0.0
    assert figures["exact"]["all"]["p"] == 0.0
    assert figures["overlap"]["untyped"] == {"p": 0.667, "r": 1.0, "f1": 0.8}


def test_a_prediction_of_kind_other_counts_only_in_the_untyped_figures() -> None:
    figures = score([[(0, 5, "other")]], [[(0, 5, "place")]])
    assert figures["exact"]["all"] == {"p": 0.0, "r": 0.0, "f1": 0.0}
    assert figures["exact"]["untyped"] == {"p": 1.0, "r": 1.0, "f1": 1.0}
