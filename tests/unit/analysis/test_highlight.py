"""The highlighter marks what the tokenizer counts, and never lets passage text become HTML."""

from __future__ import annotations

import re
from collections import Counter
from itertools import pairwise

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.analysis.marking import mark_counts, term_spans
from core.analysis.presentation import (
    CLIP_CHARS,
    PASSAGE_STYLE,
    chip_html,
    clip_end,
    compare_explanations,
    contribution_bar_html,
    explanation_rows,
    formula_line,
    highlight_html,
    term_colours,
)
from core.analysis.sentences import ESCAPED_CHARACTERS, escape_text
from core.domain.bm25 import CorpusStats, corpus_stats, explain_score
from core.domain.tokenize import tokenize

MARK = re.compile(r"<mark [^>]*data-term=\"([^\"]*)\"[^>]*>(.*?)</mark>")


def _tf(text: str) -> Counter[str]:
    return Counter(tokenize(text))


@pytest.mark.parametrize(
    "text",
    [
        "Aeroelastic models; aeroelastic MODELS of the heated aircraft.",
        "The ﬁne Straße in KÖLN, köln and Köln (decomposed ö).",
        "snake_case_words and CamelCase, 3d-models, x2 and 10,000 items",
        "Ｆｕｌｌｗｉｄｔｈ letters and ① circled digits",
        "",
    ],
)
def test_the_marks_of_each_term_are_exactly_its_tf(text: str) -> None:
    tf = _tf(text)
    spans = term_spans(text, tf.keys())
    assert mark_counts(spans) == dict(tf)
    for span in spans:
        assert tokenize(text[span.start : span.end]) == [span.label]


@given(st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=80))
def test_marks_equal_tf_on_arbitrary_text(text: str) -> None:
    tf = _tf(text)
    spans = term_spans(text, tf.keys())
    counts = mark_counts(spans)
    # A character that expands to two terms (e.g. "½") is marked once; otherwise exact.
    for term, count in counts.items():
        assert count <= tf[term]
    assert sum(counts.values()) <= sum(tf.values())
    ends = [(s.start, s.end) for s in spans]
    assert ends == sorted(ends)
    assert all(a[1] <= b[0] for a, b in pairwise(ends))


def test_stopwords_and_other_terms_are_not_marked() -> None:
    spans = term_spans("the model of the models", ["models"])
    assert [(s.start, s.end) for s in spans] == [(17, 23)]


@pytest.mark.parametrize(
    "payload",
    [
        "<script>alert('x')</script>",
        '<img src=x onerror="alert(1)">',
        "</div><b>bold</b>",
        "**not bold** and $x^2$ and [link](javascript:alert(1))",
    ],
)
def test_passage_html_and_markdown_render_as_text(payload: str) -> None:
    text = f"aircraft {payload} aircraft"
    out = highlight_html(text, term_spans(text, ["aircraft"]), styled=False)  # the text only
    assert "<script" not in out
    assert "<img" not in out
    assert "<b>" not in out
    assert "**" not in out
    assert "$" not in out
    assert "](" not in out
    assert len(MARK.findall(out)) == 2
    # The escaped text decodes back to the original, character for character.
    visible = re.sub(r"<[^>]+>", "", out.replace("<br>", "\n"))
    import html as _html

    assert _html.unescape(visible) == text


def test_a_mark_inside_script_text_is_still_escaped() -> None:
    text = "<script>aircraft</script>"
    out = highlight_html(text, term_spans(text, ["script", "aircraft"]))
    assert out.count("<mark") == 3
    assert "<script" not in out and "</script" not in out


def test_entity_chips_escape_names() -> None:
    out = chip_html(["<img src=x onerror=alert(1)>", "Rolls-Royce Ltd"])
    assert "<img" not in out
    assert "Rolls-Royce Ltd" in out


def test_line_breaks_survive_as_br() -> None:
    assert escape_text("a\nb\r\nc") == "a<br>b<br>c"


@pytest.mark.parametrize(
    "text",
    [
        *ESCAPED_CHARACTERS,
        "plain words only",
        "a line\rand one\r\nand one more\n",
        "x" * 3000 + ":",
        "<script>alert('xss')</script> **bold** [link](u) #h `c` ~s~ $m$ a|b {c} _i_ \\ & é",
    ],
)
def test_escaping_skips_no_character_it_encodes(text: str) -> None:
    """A text with none of the encoded characters is left as it is; every one of them is
    encoded as an entity, wherever it stands (one pattern finds them, a table names each)."""
    expected = "".join(f"&#{ord(c)};" if c in ESCAPED_CHARACTERS else c for c in text)
    expected = expected.replace("\r\n", "\n").replace("\r", "\n").replace("\n", "<br>")
    assert escape_text(text) == expected
    assert escape_text("word " + text + " word") == "word " + expected + " word"


def test_long_passages_clip_outside_marks_and_say_so() -> None:
    text = ("filler " * 300) + "aeroelastic " + ("filler " * 100)
    spans = term_spans(text, ["aeroelastic"])
    end = clip_end(text, spans)
    assert end <= CLIP_CHARS
    assert all(not (s.start < end < s.end) for s in spans)
    clipped = highlight_html(text, spans, end=end, styled=False)
    assert clipped.endswith(" …</div>")
    assert "<mark" not in clipped
    assert "<mark" in highlight_html(text, spans)


def test_colours_follow_sorted_term_order_whatever_the_query_order() -> None:
    assert term_colours(["when", "aircraft", "models"]) == term_colours(
        ["models", "when", "aircraft", "models"]
    )
    assert len(set(term_colours(["a1", "b2", "c3"]).values())) == 3


def _explain(doc: str, corpus: list[str], query: str):  # type: ignore[no-untyped-def]
    docs = [tokenize(d) for d in corpus]
    terms = tokenize(query)
    stats = corpus_stats(docs, terms)
    tokens = tokenize(doc)
    return explain_score(terms, Counter(tokens), len(tokens), stats)


CORPUS = [
    "aeroelastic models of heated aircraft aeroelastic",
    "heated aircraft wings when flying",
    "models of models when heated",
    "unrelated text entirely",
]


def test_the_formula_line_substitutes_the_explanations_numbers() -> None:
    explanation = _explain(CORPUS[0], CORPUS, "aeroelastic models")
    part = next(p for p in explanation.terms if p.term == "aeroelastic")
    line = formula_line(part, explanation.k1, explanation.b)
    assert line == (
        f"aeroelastic: {part.idf:.4f} × 2·2.2 / (2 + 1.2·(0.25 + 0.75·{part.doc_length}/"
        f"{part.avg_doc_length:.2f})) = {part.idf:.4f} × {part.tf_part:.4f} = "
        f"{part.contribution:.4f}"
    )


def test_explanation_rows_carry_the_explanations_values_unchanged() -> None:
    explanation = _explain(CORPUS[0], CORPUS, "aeroelastic models when")
    rows = explanation_rows(explanation)
    by_term = {p.term: p for p in explanation.every_term()}
    assert {r["term"] for r in rows} == set(by_term)
    for row in rows:
        part = by_term[str(row["term"])]
        assert row["contribution"] == part.contribution
        assert row["idf"] == part.idf
        assert row["tf"] == part.tf
    assert rows[-1]["term"] == "when"  # unmatched terms last


def test_compare_names_the_terms_that_decide_the_order() -> None:
    a = _explain(CORPUS[0], CORPUS, "aeroelastic models when")
    b = _explain(CORPUS[2], CORPUS, "aeroelastic models when")
    cmp = compare_explanations(a, b)
    assert cmp.score_difference == a.score - b.score
    by_term = {d.term: d for d in cmp.terms}
    for part_a, part_b in zip(a.every_term(), b.every_term(), strict=True):
        if part_a.contribution != part_b.contribution:
            assert by_term[part_a.term].difference == part_a.contribution - part_b.contribution
    assert "wins on aeroelastic +" in cmp.summary
    assert "loses on" in cmp.summary and "when −" in cmp.summary


def test_compare_refuses_explanations_of_different_queries() -> None:
    with pytest.raises(ValueError):
        compare_explanations(
            _explain(CORPUS[0], CORPUS, "models"), _explain(CORPUS[0], CORPUS, "heated")
        )


def _lab(colour: str) -> tuple[float, float, float]:
    """sRGB hex to CIELAB (D65), to measure how different two colours look."""
    rgb = [int(colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb]
    x = (0.4124 * lin[0] + 0.3576 * lin[1] + 0.1805 * lin[2]) / 0.95047
    y = 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]
    z = (0.0193 * lin[0] + 0.1192 * lin[1] + 0.9505 * lin[2]) / 1.08883

    def f(t: float) -> float:
        return t ** (1 / 3) if t > 0.008856 else 7.787 * t + 16 / 116

    return 116 * f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z))


@pytest.mark.parametrize("n", [2, 10, 11, 13, 20])
def test_every_term_of_a_query_gets_a_clearly_different_colour(n: int) -> None:
    """The README's query has 13 terms; a 12-colour cycle gave two of them the same blue."""
    colours = list(term_colours([f"t{i:02d}" for i in range(n)]).values())
    labs = [_lab(c) for c in colours]
    closest = min(
        sum((p - q) ** 2 for p, q in zip(a, b, strict=True)) ** 0.5
        for i, a in enumerate(labs)
        for b in labs[i + 1 :]
    )
    assert closest > 12, f"two of {n} term colours are only ΔE {closest:.1f} apart"


def test_a_contribution_bar_is_escaped_html_whose_widths_are_shares_of_the_scale() -> None:
    terms = ['<img src=x onerror="alert(1)">', "wing"]
    stats = CorpusStats(n_docs=10, avg_doc_length=5.0, doc_frequencies={t: 2 for t in terms})
    explanation = explain_score(terms, {terms[0]: 3, "wing": 1}, 5, stats)
    html = contribution_bar_html(explanation, term_colours(terms), scale=2 * explanation.score)
    assert "<img" not in html and "&#60;img" in html
    widths = [float(w) for w in re.findall(r'style="width:([0-9.]+)%', html)]
    assert sum(widths) == pytest.approx(50.0, abs=1e-3)  # the score is half the scale
    assert widths == sorted(widths, reverse=True)  # largest contribution first


def test_marks_bars_and_chips_carry_their_colours_only_and_a_styled_passage_the_stylesheet() -> (
    None
):
    """Inline styles were ~1.2 KB of each Search card; one stylesheet styles the whole page."""
    text = "heat on the wing, <b>heat</b> again"
    colours = term_colours(["heat", "wing"])
    spans = term_spans(text, ["heat", "wing"])
    bare = highlight_html(text, spans, colours, styled=False)
    assert highlight_html(text, spans, colours) == bare + PASSAGE_STYLE
    assert PASSAGE_STYLE not in bare and "<b>" not in bare
    marks = re.findall(r'<mark data-term="(\w+)" style="([^"]*)">', bare)
    assert marks == [(t, f"--c:{colours[t]};--b:{colours[t]}33") for t in ("heat", "wing", "heat")]
    stats = CorpusStats(n_docs=10, avg_doc_length=5.0, doc_frequencies={"heat": 2, "wing": 3})
    explanation = explain_score(["heat", "wing"], {"heat": 2, "wing": 1}, 5, stats)
    bar = contribution_bar_html(explanation, colours, 5.0)
    segments = re.findall(r'data-term="(\w+)" [^>]*style="width:([0-9.]+)%', bar)
    assert len(segments) == 2
    assert re.findall(r'style="([^"]*)"', bar) == [
        f"width:{width}%;background:{colours[term]}" for term, width in segments
    ]
    assert chip_html(["Ada"]) == '<span class="lx-chip">Ada</span>'
    for rule in (".lx-passage{", "mark[data-term]{", ".lx-bar{", ">span[data-term]{", ".lx-chip{"):
        assert rule in PASSAGE_STYLE
