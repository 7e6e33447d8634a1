"""Screens take their rules from core: file types, ranker names and defaults, run workspaces.

Each test reads the rule from where core defines it (the readers' extensions, the ranker
constants, the run's own workspace) and checks the screen shows exactly that, so a screen
that writes its own copy again fails here. Also the newcomer items a screen can hold: the
term browser's first view, the Sources table's order, the Entities example and plurals.
"""

from __future__ import annotations

import json
import uuid
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from streamlit.testing.v1 import AppTest

from core.analysis.rankers import KIND_LABELS, RankerKind
from core.domain.bm25 import BM25_B, BM25_K1
from core.domain.tokenize import tokenize
from core.ingest.readers import SUPPORTED_EXTENSIONS
from core.service import EXAMPLE_WORKSPACE
from pages.common import get_service

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")

pytestmark = pytest.mark.usefixtures("in_memory_store")


def page(path: str, workspace: str, **state: Any) -> AppTest:
    """``path`` inside app.py's frame on ``workspace`` (created first), with session state."""
    get_service().create_workspace(workspace)
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["ws"] = workspace
    for key, value in state.items():
        at.session_state[key] = value
    at.run()
    at.switch_page(path).run()
    no_exception(at)
    return at


def no_exception(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]


def texts(at: AppTest) -> list[str]:
    kinds = ("markdown", "caption", "info", "warning", "success")
    return [str(e.value) for kind in kinds for e in at.get(kind)]


def fresh(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def test_the_uploader_accepts_exactly_the_file_types_the_readers_read() -> None:
    at = page("pages/upload.py", fresh("types"))
    (uploader,) = at.get("file_uploader")
    accepted = set(uploader.proto.type)
    assert accepted == set(SUPPORTED_EXTENSIONS)
    assert {".text", ".markdown"} <= accepted  # the two the page's own list had dropped
    # The uploader prints "<n>MB per file" from the same setting core checks, and core's
    # limits say MB too: "64MB per file" beside "64 MiB" read as two limits.
    size = uploader.proto.max_upload_size_mb
    assert size == get_service().settings.max_upload_mb
    (limits,) = [t for t in texts(at) if t.startswith("Limits per file")]
    assert limits.startswith(f"Limits per file&#58; {size} MB uploaded")  # escaped colon
    assert "MiB" not in limits


def test_compare_and_evaluate_offer_the_rankers_by_cores_names_and_parameters() -> None:
    ws = fresh("rankers")
    names = [KIND_LABELS[kind] for kind in RankerKind]
    compare = page("pages/compare.py", ws)
    assert compare.selectbox(key="c_kind_A").options == names
    assert compare.selectbox(key="c_kind_B").options == names
    evaluate = page("pages/evaluate.py", ws)
    assert evaluate.selectbox(key="ev_ranker_A").options == names
    evaluate.selectbox(key="ev_ranker_A").set_value(RankerKind.CUSTOM).run()
    no_exception(evaluate)
    assert evaluate.number_input(key="ev_k1_A").value == BM25_K1
    assert evaluate.number_input(key="ev_b_A").value == BM25_B
    compare.selectbox(key="c_kind_A").set_value(RankerKind.CUSTOM).run()
    no_exception(compare)
    assert compare.number_input(key="c_k1_A").value == BM25_K1
    assert compare.number_input(key="c_b_A").value == BM25_B


def test_a_workspace_named_with_the_run_labels_separator_links_to_itself_on_evaluate() -> None:
    """A run's label reads "WORKSPACE · limit … · ranker"; the link must not cut the name."""
    ws = f"a · b {uuid.uuid4().hex[:6]}"
    get_service().create_workspace(ws)
    get_service().upload_files(
        [("d1.txt", b"boundary layer transition on a flat plate"), ("d2.txt", b"heated wings")],
        workspace=ws,
    )
    queries = b"q1\tboundary layer\n"
    qrels = b"query-id\tcorpus-id\tscore\nq1\td1.txt\t1\n"
    at = page("pages/evaluate.py", ws, ev_judgments=("two documents", queries, qrels))
    at.selectbox(key="ev_ranker_B").set_value(RankerKind.CLASSIC).run()  # labelled runs
    at.button(key="ev_run").click().run()
    no_exception(at)
    first = at.dataframe[0].value.iloc[0]
    for column in ("Search A", "Search B"):
        assert parse_qs(urlsplit(first[column]).query)["ws"] == [ws]
    # The two runs' histograms side by side, each named in the legend (overlaid translucent
    # bars blended into a colour no legend named).
    chart = json.loads(at.get("plotly_chart")[0].proto.spec)
    assert chart["layout"]["barmode"] == "group"
    names = [trace["name"] for trace in chart["data"]]
    assert names[0].startswith("A: ") and names[1].startswith("B: ")
    assert all(trace.get("opacity", 1) == 1 for trace in chart["data"])
    # Rows tall enough for the query text to wrap (Streamlit wraps above 4rem).
    assert at.dataframe[0].proto.row_height > 64


def test_the_term_browser_lists_the_most_frequent_terms_before_a_prefix_is_typed() -> None:
    ws = fresh("terms")
    texts_in = [b"wing wing flutter", b"wing flutter drag", b"wing lift"]
    get_service().upload_files(
        [(f"t{i}.txt", text) for i, text in enumerate(texts_in)], workspace=ws
    )
    at = page("pages/corpus.py", ws)
    table = at.dataframe[0].value
    df = Counter(term for text in texts_in for term in set(tokenize(text.decode())))
    want = sorted(df.items(), key=lambda item: (-item[1], item[0]))
    assert list(zip(table["term"], table["df"], strict=True)) == want
    assert any("most frequent terms" in t for t in texts(at))


def test_the_sources_table_counts_like_people_and_puts_the_last_upload_first() -> None:
    ws = fresh("sources")
    service = get_service()
    service.upload_files(
        [(f"{n}.txt", f"passage number {n}".encode()) for n in (100, 2, 10, 1)], workspace=ws
    )
    reports = service.upload_files([("50.txt", b"the newest upload")], workspace=ws)
    at = page("pages/upload.py", ws, upload_reports=(ws, reports))
    table = at.dataframe[-1].value
    assert list(table["source"]) == ["50.txt", "1.txt", "2.txt", "10.txt", "100.txt"]
    assert list(table["just uploaded"]) == [True, False, False, False, False]
    at.text_input(key="source_filter").input("10").run()
    assert list(at.dataframe[-1].value["source"]) == ["10.txt", "100.txt"]


def test_the_entities_example_goes_to_its_own_workspace_and_counts_read_as_words() -> None:
    ws = fresh("lowercase")
    service = get_service()
    service.upload_files([("l.txt", b"no names in lower case text at all")], workspace=ws)
    passages = service.corpus(workspace=ws).summary.passages
    at = page("pages/entities.py", ws)
    assert any("changes" in t and "N" in t for t in texts(at))  # adding here is said to change N
    at.button(key="load_example_elsewhere").click().run()
    no_exception(at)
    assert at.session_state["workspace"] == EXAMPLE_WORKSPACE
    assert service.corpus(workspace=ws).summary.passages == passages  # the workspace untouched
    options = at.selectbox(key="entity_choice").options
    assert options and not any(" 1 passages" in o for o in options)
    entities = service.list_entities(workspace=EXAMPLE_WORKSPACE)
    if any(e.passages == 1 for e in entities):
        assert any(o.endswith(", 1 passage)") for o in options)
    assert not any("(s)" in t for t in texts(at))
    assert any(" 1 mention" in t or " mentions" in t for t in texts(at))
