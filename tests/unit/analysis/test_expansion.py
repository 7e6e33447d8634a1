"""RM3 as the issue specifies it (issue 47 item 2), checked against weights worked by hand.

Two feedback passages with scores 3 and 1 (shares 0.75 and 0.25): "wing wing flutter tail"
(dl 4) and "tail drag" (dl 2). R(wing) = 0.75 * 2/4 = 0.375, R(tail) = 0.75 * 1/4 + 0.25 * 1/2 =
0.3125, R(flutter) = 0.1875, R(drag) = 0.125. Keeping 3 terms drops drag; their sum is 0.875.
With original weight 0.5 and the query "wing flutter" (P(t|Q) = 1/2): wing = 0.25 + 0.5 *
0.375/0.875, flutter = 0.25 + 0.5 * 0.1875/0.875, tail = 0.5 * 0.3125/0.875.
"""

from __future__ import annotations

from uuid import UUID

import pytest
from pydantic import ValidationError

from core.analysis import expansion as expansion_module
from core.analysis.expansion import ExpansionSpec, rm3, rm3_weights, rocchio
from core.domain.bm25 import ScoreExplanation
from core.domain.chunks import StoredChunk
from core.domain.ranking import RankedChunk
from core.domain.tokenize import Profile

TENANT = UUID("00000000-0000-0000-0000-0000000000e3")


def ranked(source: str, text: str, score: float) -> RankedChunk:
    chunk = StoredChunk(
        tenant_id=TENANT, source_id=source, text=text, chunk_index=0, start_char=0,
        end_char=len(text),
    )  # fmt: skip
    return RankedChunk(
        chunk=chunk, score=score, explanation=ScoreExplanation(score=score, terms=[])
    )


FEEDBACK = [ranked("a", "wing wing flutter tail", 3.0), ranked("b", "tail drag", 1.0)]


def test_rm3_weights_are_the_ones_worked_by_hand() -> None:
    spec = ExpansionSpec(fb_docs=2, fb_terms=3)
    expansion = rm3(["wing", "flutter"], FEEDBACK, Profile.PLAIN, spec)
    assert expansion.weights == {
        "wing": 0.25 + 0.5 * (0.375 / 0.875),
        "flutter": 0.25 + 0.5 * (0.1875 / 0.875),
        "tail": 0.5 * (0.3125 / 0.875),
    }
    assert [t.term for t in expansion.terms] == ["wing", "flutter", "tail"]
    assert expansion.added == ["tail"]
    assert [p.share for p in expansion.feedback] == [0.75, 0.25]
    tail = next(t for t in expansion.terms if t.term == "tail")
    assert [(s.chunk_id, s.tf, s.part) for s in tail.sources] == [
        (FEEDBACK[0].chunk.id, 1, 0.75 * 0.25),
        (FEEDBACK[1].chunk.id, 1, 0.25 * 0.5),
    ]
    assert tail.relevance == 0.3125 and tail.query_part == 0.0
    assert expansion.note is None


def test_a_term_in_the_query_and_the_feedback_gets_both_parts_and_the_parts_sum_to_one() -> None:
    expansion = rm3(["wing", "flutter"], FEEDBACK, Profile.PLAIN, ExpansionSpec(fb_terms=10))
    wing = next(t for t in expansion.terms if t.term == "wing")
    assert wing.typed and wing.query_part == 0.25 and wing.feedback_part > 0
    assert sum(t.query_part for t in expansion.terms) == pytest.approx(0.5)
    assert sum(t.feedback_part for t in expansion.terms) == pytest.approx(0.5)


def test_an_original_weight_of_one_keeps_the_typed_query_alone() -> None:
    spec = ExpansionSpec(original_weight=1.0)
    expansion = rm3(["wing", "flutter"], FEEDBACK, Profile.PLAIN, spec)
    assert expansion.weights == {"flutter": 0.5, "wing": 0.5}


def test_no_feedback_searches_the_query_as_typed_and_says_so() -> None:
    expansion = rm3(["wing"], [], Profile.PLAIN, ExpansionSpec())
    assert expansion.weights == {"wing": 1.0}
    assert expansion.note is not None and "as typed" in expansion.note


def test_fewer_feedback_passages_than_asked_is_said() -> None:
    expansion = rm3(["wing"], FEEDBACK, Profile.PLAIN, ExpansionSpec(fb_docs=10))
    assert expansion.note is not None and "2 of the 10" in expansion.note


def test_a_feedback_passage_with_no_terms_left_adds_nothing_and_is_said() -> None:
    silent = [FEEDBACK[0], ranked("c", "the of and", 0.5)]
    expansion = rm3(["wing"], silent, Profile.PLAIN, ExpansionSpec(fb_terms=3))
    assert expansion.feedback[1].doc_length == 0
    assert expansion.note is not None and "no terms left" in expansion.note


WIDER = [
    *FEEDBACK,
    ranked("c", "the of and", 0.5),
    ranked("d", "flutter drag drag shock wing tail body", 0.5),
    ranked("e", "nozzle shock body", 0.25),
]


@pytest.mark.parametrize(
    ("query", "feedback", "spec"),
    [
        (["wing", "flutter"], FEEDBACK, ExpansionSpec(fb_docs=2, fb_terms=3)),
        (["wing", "flutter", "wing"], WIDER, ExpansionSpec()),
        (["drag", "zebra"], WIDER, ExpansionSpec(fb_docs=3, fb_terms=2)),
        (["shock"], WIDER, ExpansionSpec(fb_docs=5, fb_terms=1, original_weight=0.2)),
        (["zebra", "wing"], WIDER, ExpansionSpec(original_weight=0.0)),
        (["wing", "flutter"], WIDER, ExpansionSpec(original_weight=1.0)),
        (["wing"], [], ExpansionSpec()),
        (["wing"], [WIDER[2]], ExpansionSpec()),
    ],
)
def test_rm3_weights_alone_are_the_expansions_weights_bit_for_bit_in_its_order(
    query: list[str],
    feedback: list[RankedChunk],
    spec: ExpansionSpec,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    want = [(term, weight.hex()) for term, weight in rm3(query, feedback, Profile.PLAIN, spec)
            .weights.items()]  # fmt: skip
    for model in ("ExpansionTerm", "TermSource", "FeedbackPassage", "Expansion"):
        monkeypatch.setattr(expansion_module, model, lambda *a, **kw: pytest.fail("built"))
    weights = rm3_weights(query, feedback, Profile.PLAIN, spec)
    assert [(term, weight.hex()) for term, weight in weights.items()] == want


@pytest.mark.parametrize("n", [0, 1, 2, 3, 5, 8, 50])
def test_the_highest_terms_are_the_first_n_of_every_term_sorted_ties_by_term(n: int) -> None:
    values = {"d": 0.5, "a": 0.25, "c": 0.5, "b": 0.25, "e": 0.125, "f": 0.5, "g": -0.5}
    shuffled = dict(sorted(values.items(), key=lambda item: hash(item[0]) % 7))
    want = sorted(values.items(), key=lambda item: (-item[1], item[0]))[:n]
    assert expansion_module._highest(values, n) == want
    assert expansion_module._highest(shuffled, n) == want
    assert expansion_module._highest({}, n) == []


@pytest.mark.parametrize(
    "bad",
    [
        {"fb_docs": 0},
        {"fb_docs": 101},
        {"fb_terms": 0},
        {"original_weight": -0.1},
        {"original_weight": 1.5},
        {"original_weight": float("nan")},
    ],
)
def test_parameters_outside_their_ranges_are_refused(bad: dict[str, float]) -> None:
    with pytest.raises(ValidationError):
        ExpansionSpec(**bad)  # type: ignore[arg-type]


def test_a_query_with_no_terms_is_refused() -> None:
    with pytest.raises(ValueError, match="no terms"):
        rm3([], FEEDBACK, Profile.PLAIN, ExpansionSpec())


def test_rocchio_weights_are_the_ones_worked_by_hand() -> None:
    relevant = ranked("a", "wing wing flutter tail", 3.0).chunk
    other = ranked("b", "tail drag", 1.0).chunk
    spec = ExpansionSpec.rocchio().model_copy(update={"fb_terms": 3})
    expansion = rocchio(["wing"], [(relevant, 2), (other, 0)], Profile.PLAIN, spec)
    # beta 0.75 over one relevant passage, gamma 0.15 over one graded 0: tail 0.75/4 - 0.15/2.
    assert expansion.weights == {
        "wing": 1.0 + 0.75 * (2 / 4),
        "flutter": 0.75 * (1 / 4),
        "tail": 0.75 * (1 / 4) + -0.15 * (1 / 2),
    }
    assert expansion.added == ["flutter", "tail"]


def test_rocchio_without_a_relevant_grade_searches_the_query_as_typed_and_says_so() -> None:
    other = ranked("b", "tail drag", 1.0).chunk
    expansion = rocchio(["wing"], [(other, 0)], Profile.PLAIN, ExpansionSpec.rocchio())
    assert expansion.weights == {"wing": 1.0}
    assert expansion.note is not None and "as typed" in expansion.note
