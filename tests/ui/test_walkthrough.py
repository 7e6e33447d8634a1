"""An analyst's walk through the screens other than Search, with the inputs real people give.

Each test is one thing such a walk found: a traceback or pydantic's dump where a sentence
belonged, a raw value where the screens' words belonged, a result shown beside inputs it was not
computed from. The sentences are core's; these tests check the screens say them.
"""

from __future__ import annotations

import html
import uuid

import pytest
from streamlit.testing.v1 import AppTest

from core.analysis.sentences import (
    CHOICE_GONE_NOTE,
    EMPTY_QUERY_NOTE,
    EMPTY_REASON_SENTENCES,
    SPACES_QUERY_NOTE,
    escape_text,
    other_workspace_results,
)
from core.analysis.tuning import MAX_POINTS
from core.service import KIND_LABELS, RUN_KINDS, SAMPLE_CORPUS
from core.service.bounds import check_limit
from core.service.parity import ParityDifference, ParityQuery, ParityReport, ParitySide

APP = str(SAMPLE_CORPUS.parents[2] / "app.py")

pytestmark = pytest.mark.usefixtures("in_memory_store")


def opened(workspace: str, page: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["ws"] = workspace
    at.run()
    at.switch_page(page).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def graded(workspace: str) -> AppTest:
    """Runs, on a workspace holding the sample's grades."""
    from pages.common import get_service

    get_service().import_sample_grades(workspace=workspace)
    return opened(workspace, "pages/runs.py")


def test_evaluating_runs_at_a_limit_of_0_says_why_instead_of_a_traceback(cranfield: str) -> None:
    at = graded(cranfield)
    at.number_input(key="runs_limit").set_value(0)
    at.button(key="runs_evaluate").click().run()
    assert not at.exception, [e.value for e in at.exception]
    with pytest.raises(ValueError) as refusal:  # core's sentence for it
        check_limit(0)
    assert [e.value for e in at.error] == [escape_text(str(refusal.value))]


@pytest.mark.parametrize("name", ["", "   ", "x" * 201])
def test_a_saved_run_name_that_cannot_be_one_is_refused_in_one_sentence(
    cranfield: str, name: str
) -> None:
    at = graded(cranfield)
    at.button(key="runs_evaluate").click().run()
    at.text_input(key="runs_name").set_value(name)
    at.button(key="runs_save").click().run()
    assert not at.exception, [e.value for e in at.exception]
    (said,) = [html.unescape(e.value) for e in at.error]
    assert said == (
        f"Not saved: a saved run name has 1 to 200 characters (spaces at either end and repeated "
        f"spaces aside), not {len(name.strip())}."
    )


@pytest.mark.parametrize("name", ["", "x" * 201])
def test_a_query_set_name_that_cannot_be_one_is_refused_without_pydantics_dump(
    cranfield: str, name: str
) -> None:
    at = opened(cranfield, "pages/judge.py")
    at.text_input(key="judge_new_name").input(name)
    at.text_area(key="judge_new_text").input("wing flutter\n")
    at.button(key="judge_new_save").click().run()
    (said,) = [html.unescape(e.value) for e in at.error]
    assert said.startswith("Not saved: a query set name has 1 to 200 characters")
    assert "validation error" not in said and "pydantic" not in said


def test_a_pool_with_no_ranker_says_to_choose_one_in_words_without_pydantics_prefix(
    cranfield: str,
) -> None:
    at = opened(cranfield, "pages/judge.py")
    at.multiselect(key="judge_rankers").set_value([]).run()
    assert [html.unescape(e.value) for e in at.error] == [
        "Pool settings: a pool needs at least one ranker: choose one or more."
    ]


def test_runs_names_its_rankers_as_the_other_screens_do_not_by_their_enum_values(
    cranfield: str,
) -> None:
    at = graded(cranfield)
    assert at.selectbox(key="runs_ranker").options == [KIND_LABELS[k] for k in RUN_KINDS]


def test_an_uploads_report_stays_with_its_workspace_when_the_analyst_switches(
    in_memory_store: None,
) -> None:
    from pages.common import get_service

    there, here = (f"upload-{side}-{uuid.uuid4().hex[:6]}" for side in ("there", "here"))
    for name in (there, here):
        get_service().create_workspace(name)
    at = opened(there, "pages/upload.py")
    at.file_uploader[0].set_value([("wings.txt", b"wing flutter", "text/plain")]).run()
    at.button(key="index_files").click().run()
    assert any("Stored 1 of 1 file" in s.value for s in at.success)
    at.sidebar.selectbox(key="workspace").set_value(here).run()
    assert not at.success and not [s for s in at.subheader if s.value == "Result per file"]
    assert f"This session's last upload went to the workspace “{there}”" in " ".join(
        html.unescape(c.value) for c in at.caption
    )
    at.sidebar.selectbox(key="workspace").set_value(there).run()
    assert any("Stored 1 of 1 file" in s.value for s in at.success)


@pytest.mark.parametrize(
    ("query", "reason"),
    [
        ("the of and", "no terms left after stopwords"),
        ("!!! ???", "no letters or digits to search for"),
        ("zzyzx qwxqwx", "no passage contains any term"),
    ],
)
def test_a_query_with_nothing_to_grade_says_why_in_the_words_search_uses(
    cranfield: str, query: str, reason: str
) -> None:
    at = opened(cranfield, "pages/judge.py")
    at.text_input(key="judge_new_name").input(f"odd {reason}")
    at.text_area(key="judge_new_text").input(f"{query}\n")
    at.button(key="judge_new_save").click().run()
    assert [i.value for i in at.info] == [
        f"Nothing to grade: {EMPTY_REASON_SENTENCES.get(reason, reason)}."
    ]


def test_runs_results_of_another_workspace_are_not_shown_nor_saved_into_this_one(
    cranfield: str,
) -> None:
    from pages.common import get_service

    other = f"cranfield-other-{uuid.uuid4().hex[:6]}"
    get_service().load_sample(workspace=other)
    get_service().import_sample_grades(workspace=other)
    at = graded(cranfield)
    at.button(key="runs_evaluate").click().run()
    at.button(key="runs_diagnose").click().run()
    assert at.metric and at.button(key="runs_save")
    at.sidebar.selectbox(key="workspace").set_value(other).run()
    assert not at.metric and not [b for b in at.button if b.key == "runs_save"]
    assert not [w for w in at.warning if w.value.startswith("Out of date")]
    assert f"The results computed in the workspace “{cranfield}” are not shown here" in " ".join(
        html.unescape(c.value) for c in at.caption
    )
    assert get_service().saved_runs(workspace=other) == []


def test_evaluate_refuses_a_queries_file_giving_one_id_two_texts_instead_of_keeping_the_last(
    cranfield: str,
) -> None:
    at = opened(cranfield, "pages/evaluate.py")
    at.session_state["ev_judgments"] = ("mine", b"q1\taero\nq1\twing\n", b"q1\t12\t1\n")
    at.run()
    at.button(key="ev_run").click().run()
    assert not at.dataframe
    assert [html.unescape(e.value) for e in at.error] == [
        "The judgments cannot be used: queries file: line 2: query id 'q1' was already given "
        "on line 1, with another text ('aero'); an id names one query"
    ]


def compare(workspace: str, query: str) -> AppTest:
    at = opened(workspace, "pages/compare.py")
    return at.text_input(key="c_q").set_value(query).run()


def test_compare_says_its_own_earlier_choice_left_the_results_not_that_a_link_asked_for_it(
    cranfield: str,
) -> None:
    at = compare(cranfield, "aeroelastic models")
    explained = at.selectbox(key="c_passage").value
    at.number_input(key="c_limit").set_value(1).run()
    assert at.selectbox(key="c_passage").value != explained  # cut by the limit of 1
    assert not [w for w in at.warning if "link" in w.value]
    assert CHOICE_GONE_NOTE in [i.value for i in at.info]


def test_a_compare_link_naming_a_passage_not_in_the_results_still_says_the_link_asked(
    cranfield: str,
) -> None:
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["ws"] = cranfield
    at.run()
    for key, value in {"q": "aeroelastic models", "limit": "1", "p": "not-a-passage"}.items():
        at.query_params[key] = value
    at.switch_page("pages/compare.py").run()
    assert any(w.value.startswith("The link asked to explain passage") for w in at.warning)
    assert CHOICE_GONE_NOTE not in [i.value for i in at.info]


@pytest.mark.parametrize(
    ("query", "said"),
    [
        ("", EMPTY_QUERY_NOTE),
        ("   ", SPACES_QUERY_NOTE),
        ("the of and", "Nothing to compare: "
         f"{EMPTY_REASON_SENTENCES['no terms left after stopwords']}."),
        ("!!! ???", "Nothing to compare: "
         f"{EMPTY_REASON_SENTENCES['no letters or digits to search for']}."),
    ],
)  # fmt: skip
def test_compare_says_why_there_is_nothing_to_compare_as_truncation_does(
    cranfield: str, query: str, said: str
) -> None:
    assert [i.value for i in compare(cranfield, query).info] == [said]


def test_an_import_names_what_it_left_out_in_counted_words(cranfield: str) -> None:
    at = opened(cranfield, "pages/judge.py")
    (upload,) = [u for u in at.get("file_uploader") if u.key == "judge_import_file"]
    upload.set_value([("j.txt", b"999 0 12 2\n1 0 99999 1\n1 0 nowhere 1\n", "text/plain")])
    at.run().button(key="judge_import").click().run()
    assert [s.value for s in at.success] == ["Imported 0 grades."]
    assert [html.unescape(w.value) for w in at.warning] == [
        "Not imported, the grades of 1 query not in this set: 999",
        "Not imported, the grades of 2 ids this workspace does not hold: 99999, nowhere",
    ]


def test_a_tuning_grid_too_large_says_how_large_and_what_to_change_without_pydantics_dump(
    cranfield: str,
) -> None:
    at = graded(cranfield)
    at.slider(key="tune_k1").set_value((0.0, 5.0))
    at.number_input(key="tune_k1_step").set_value(0.1)
    at.slider(key="tune_b").set_value((0.0, 1.0))
    at.number_input(key="tune_b_step").set_value(0.05)
    at.button(key="runs_tune").click().run()
    assert [html.unescape(e.value) for e in at.error] == [
        f"a grid holds at most {MAX_POINTS} points, this one 1,071 (51 values of k1 × 21 of b): "
        "take a larger step or a narrower range"
    ]


def test_a_parity_difference_where_one_store_lacks_the_passage_says_so_not_none(
    cranfield: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pages.common import get_service

    query = ParityQuery(text="wing", terms=["wing"])
    lacking = ParityReport(
        workspace=cranfield, drawn_from="terms", limit=1000, queries=[query], identical=0,
        difference=ParityDifference(
            query_number=1, query=query, limit=1000, what="a passage only one store has",
            chunk_id="x", reference=ParitySide(candidate_position=3, score=2.5),
            checked=ParitySide(),
        ),
    )  # fmt: skip
    monkeypatch.setattr(get_service(), "parity", lambda **_: lacking)
    at = opened(cranfield, "pages/corpus.py")
    at.button(key="parity").click().run()
    said = [
        html.unescape(m.value)
        for m in at.markdown
        if m.value.startswith(("**In memory", "**This store"))
    ]
    assert said == [
        "**In memory (reference)**: score 2.5, candidate #3",
        "**This store**: not among its candidates",
    ]


def test_compare_says_the_passage_it_explained_left_when_the_workspace_changed(
    cranfield: str,
) -> None:
    from core.service import EXAMPLE_WORKSPACE
    from pages.common import get_service

    other = f"{EXAMPLE_WORKSPACE}-{uuid.uuid4().hex[:6]}"
    get_service().create_workspace(other)
    get_service().load_example_with_names(workspace=other)
    at = compare(other, "wind tunnel")
    at.sidebar.selectbox(key="workspace").set_value(cranfield).run()
    assert CHOICE_GONE_NOTE in [i.value for i in at.info]
    assert "the workspace" in CHOICE_GONE_NOTE


def test_compare_counts_one_candidate_in_the_singular(cranfield: str) -> None:
    at = compare(cranfield, "aeroelastic models")
    at.number_input(key="c_limit").set_value(1).run()
    (overlap,) = [m.value for m in at.markdown if m.value.startswith("Overlap at")]
    assert "· 1 candidate ranked by both (of 76 matching, limit 1)" in overlap


def test_every_saved_run_is_an_option_to_compare_even_two_of_one_name_and_second(
    cranfield: str,
) -> None:
    at = graded(cranfield)
    at.button(key="runs_evaluate").click().run()
    for _ in range(3):  # the same default name, clicked within a second or so
        at.button(key="runs_save").click().run()
    from pages.common import get_service

    saved = get_service().saved_runs(workspace=cranfield)
    assert len(at.multiselect(key="runs_pick").options) == len(saved) >= 3


def test_each_new_run_is_offered_its_own_name_telling_runs_of_other_k_and_level_apart(
    cranfield: str,
) -> None:
    at = graded(cranfield)
    at.button(key="runs_evaluate").click().run()
    first = at.text_input(key="runs_name").value
    at.number_input(key="runs_k").set_value(3)
    at.toggle(key="runs_by_document").set_value(True)
    at.button(key="runs_evaluate").click().run()
    assert first == "workspace BM25 (k1 1.2, b 0.75) · k 10 · limit 1000"
    assert at.text_input(key="runs_name").value == (
        "workspace BM25 (k1 1.2, b 0.75) · k 3 · limit 1000 · by document"
    )


def test_evaluates_result_of_another_workspace_is_dropped_and_said_not_marked_as_settings(
    cranfield: str,
) -> None:
    from pages.common import get_service

    other = f"cranfield-again-{uuid.uuid4().hex[:6]}"
    get_service().load_sample(workspace=other)
    at = opened(cranfield, "pages/evaluate.py")
    at.button(key="ev_sample").click().run()
    at.button(key="ev_run").click().run()
    assert at.metric
    at.sidebar.selectbox(key="workspace").set_value(other).run()
    assert not at.metric
    assert not [w for w in at.warning if w.value.startswith("Out of date")]
    assert other_workspace_results(cranfield, other) in [c.value for c in at.caption]
