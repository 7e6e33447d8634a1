"""The Compare rankings screen through AppTest: core's lists, movement, overlap and the URL.

Expected numbers come from ``core.analysis.rankers.compare_rankers`` over the service's own
candidate read, never recomputed here and never hard-coded.
"""

from __future__ import annotations

from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from core.analysis.rankers import Ranker, compare_rankers
from core.analysis.sentences import escape_text
from core.service import SAMPLE_CORPUS

APP = str(SAMPLE_CORPUS.parents[2] / "app.py")
QUERY = "what similarity laws must be obeyed when constructing aeroelastic models of heated"

pytestmark = pytest.mark.usefixtures("in_memory_store")


def page(workspace: str, **params: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["ws"] = workspace
    for key, value in params.items():
        at.query_params[key] = value
    at.run()
    at.switch_page("pages/compare.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def param(at: AppTest, name: str) -> str:
    value: Any = at.query_params[name]
    return str(value[0] if isinstance(value, list) else value)


def expected(workspace: str, a: Ranker, b: Ranker, k: int, limit: int) -> Any:
    from pages.common import get_service

    service = get_service()
    view = service.compare(QUERY, a, b, k, limit, workspace=workspace)
    handed = service._call(
        service._store.lexical_candidates(view.terms, service.tenant(workspace), limit)
    )
    return compare_rankers(view.terms, handed, k, a, b)


def test_a_link_shows_both_rankings_their_overlap_and_the_movement(cranfield: str) -> None:
    at = page(cranfield, q=QUERY, k="5", limit="100", ra="workspace", rb="classic")
    want = expected(cranfield, Ranker.of("workspace"), Ranker.of("classic"), 5, 100)
    text = "\n".join(m.value for m in at.markdown)
    assert f"Overlap at 5: **{want.shared} of {len(want.a)}**" in text
    for ranked in (want.a, want.b):
        for r in ranked:
            assert f"{escape_text(r.chunk.source_id)} · passage 1 &nbsp; **{r.score:.2f}**" in text
    movements = at.dataframe[0].value
    assert list(movements["rank B"]) == [m.rank_b for m in want.movements]
    assert list(movements["movement (A→B)"]) == [m.movement for m in want.movements]
    assert "textbook BM25" in text and "classic idf" in text


def test_a_custom_ranker_comes_from_the_url_and_the_choices_go_back_into_it(
    cranfield: str,
) -> None:
    at = page(
        cranfield, q=QUERY, k="3", limit="50", ra="custom", ka="0.5", ba="0.3", rb="workspace"
    )
    want = expected(cranfield, Ranker.of("custom", k1=0.5, b=0.3), Ranker.of("workspace"), 3, 50)
    text = "\n".join(m.value for m in at.markdown)
    assert "BM25 k1 0.5, b 0.3" in text
    assert f"**{want.a[0].score:.2f}**" in text
    at.selectbox(key="c_kind_B").set_value("classic").run()
    assert not at.exception
    assert (param(at, "rb"), param(at, "ra"), param(at, "ka"), param(at, "ba")) == (
        "classic",
        "custom",
        "0.5",
        "0.3",
    )
    assert param(at, "p") == want.a[0].chunk.id
    # The chosen passage's per-term tables under both rankers, with the formula written out.
    assert len(at.dataframe) == 3
    code = "\n".join(c.value for c in at.code)
    assert "idf(" in code and "ln((" in code  # the classic idf, substituted


def test_evaluate_compares_the_plain_and_english_workspaces_of_cranfield(cranfield: str) -> None:
    from pages.common import get_service

    english = f"{cranfield}-english"
    service = get_service()
    service.create_workspace(english, "english")
    service.load_sample(workspace=english)
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["ws"] = cranfield
    at.run()
    at.switch_page("pages/evaluate.py").run()
    at.button(key="ev_sample").click().run()
    at.number_input(key="ev_limit_a").set_value(10_000).run()
    at.number_input(key="ev_limit_b").set_value(10_000).run()
    at.selectbox(key="ev_workspace_b").set_value(english).run()
    at.button(key="ev_run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    metrics = {m.label: (m.value, m.delta) for m in at.metric}
    a = f"nDCG@10 · {cranfield} · limit 10000 · workspace BM25 (k1 1.2, b 0.75)"
    b = f"nDCG@10 · {english} · limit 10000 · workspace BM25 (k1 1.2, b 0.75)"
    assert metrics[a][0] == "0.4098"
    assert metrics[b][0] == "0.4311"
    assert metrics[b][1] is not None and metrics[b][1].startswith("+0.02")
    table = at.dataframe[0].value
    assert f"B: {english} · limit 10000 · workspace BM25 (k1 1.2, b 0.75)" in table.columns
    assert table.iloc[0]["Search B"].endswith(f"&ws={english}")


def test_the_corpus_page_reindexes_a_workspace_to_the_other_profile(in_memory_store: None) -> None:
    from pages.common import get_service

    name = "reindex-me"
    service = get_service()
    service.create_workspace(name)
    service.upload_files([("m.txt", b"Models of heated models.")], workspace=name)
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["ws"] = name
    at.run()
    at.switch_page("pages/corpus.py").run()
    assert any("**plain** profile" in m.value for m in at.markdown)
    at.button(key="reindex").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("**english** profile" in m.value for m in at.markdown)
    assert [s.value for s in at.success] == ["Re-indexed 1 passage with the english profile."]
    assert service.search("model", 10, 10, workspace=name).passages[0].explanation.terms[0].tf == 2


def test_compare_narrowed_to_two_sources_ranks_only_theirs_and_counts_the_rest_apart(
    cranfield: str,
) -> None:
    from core.service import PassageFilter, RankerKind
    from pages.common import get_service

    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["ws"] = cranfield
    at.query_params["q"] = "aeroelastic models"
    at.query_params["src"] = ["184", "486"]
    at.run()
    at.switch_page("pages/compare.py").run()
    assert not at.exception, [e.value for e in at.exception]
    want = get_service().compare(
        "aeroelastic models", Ranker.of(RankerKind.WORKSPACE), Ranker.of(RankerKind.CLASSIC),
        workspace=cranfield, within=PassageFilter(sources=("184", "486")),
    )  # fmt: skip
    assert {r.chunk.source_id for r in want.comparison.a} <= {"184", "486"}
    assert want.filtered_out > 0
    assert any(f"{want.filtered_out:,} excluded by the filter" in m.value for m in at.markdown)
