"""Under the english profile every surface form of a query term is marked, and marks equal tf."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.analysis.marking import mark_counts, term_spans
from core.analysis.presentation import idf_line
from core.domain.bm25 import IdfForm, TermContribution
from core.domain.tokenize import Profile, tokenize

ENGLISH = Profile.ENGLISH


@pytest.mark.parametrize(
    "text",
    [
        "Aeroelastic models; aeroelastic MODELLING of the heated model and heating.",
        "Flows, flowing and the flow: it was flowed.",
        "The ﬁne Straße in KÖLN, köln and Köln (decomposed ö) models.",
    ],
)
def test_every_surface_form_of_a_stem_is_marked_and_marks_equal_tf(text: str) -> None:
    tf = Counter(tokenize(text, ENGLISH))
    spans = term_spans(text, tf.keys(), ENGLISH)
    assert mark_counts(spans) == dict(tf)
    for span in spans:
        assert tokenize(text[span.start : span.end], ENGLISH) == [span.label]


def test_a_query_for_models_marks_model_modelling_and_models() -> None:
    text = "A model, two models, and modelling of the modeled aircraft."
    spans = term_spans(text, ["model"], ENGLISH)
    assert [text[s.start : s.end] for s in spans] == ["model", "models", "modelling", "modeled"]
    assert {s.label for s in spans} == {"model"}
    # Under plain only the exact surface form is the term.
    assert [text[s.start : s.end] for s in term_spans(text, ["models"])] == ["models"]


def test_a_stopword_whose_stem_is_a_query_term_is_not_marked() -> None:
    # "its" is a stopword (dropped before stemming) although its stem "it" could be a term.
    assert term_spans("its it", ["it"], ENGLISH) == []


@given(st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=80))
def test_english_marks_never_exceed_tf(text: str) -> None:
    tf = Counter(tokenize(text, ENGLISH))
    for term, count in mark_counts(term_spans(text, tf.keys(), ENGLISH)).items():
        assert count <= tf[term]


def test_the_idf_line_substitutes_n_and_df_in_either_form() -> None:
    part = TermContribution(
        term="wing", tf=2, df=2, n_docs=3, idf=-0.5108, doc_length=3, avg_doc_length=3.0,
        tf_part=1.4286, contribution=-0.7297, length_norm=1.5,
    )  # fmt: skip
    assert idf_line(part, IdfForm.CLASSIC) == "idf(wing) = ln((3 − 2 + 0.5) / (2 + 0.5)) = -0.5108"
    assert idf_line(part, IdfForm.LUCENE).startswith("idf(wing) = ln(1 + (3 − 2 + 0.5)")
