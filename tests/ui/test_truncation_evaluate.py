"""Truncation, Evaluate and Search's "why not?" through AppTest, checked against core.

Expected numbers come from core called directly (``analyse_truncation``, ``why_not``,
``rank_chunks``, ``evaluate_run``) on candidates read from a separate in-memory store
holding the same sample, never from the service the pages use and never hard-coded.
The sample is loaded into the app's service once per module.
"""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from core.analysis.evaluation import (
    EvaluationRun,
    documents_in_rank_order,
    evaluate_run,
    parse_qrels,
    parse_queries,
)
from core.analysis.sentences import EMPTY_REASON_SENTENCES, escape_text
from core.analysis.truncation import TruncationReport, analyse_truncation, why_not
from core.domain.bm25 import explain_score
from core.domain.chunks import ChunkingOptions, workspace_tenant_id
from core.domain.ranking import LexicalCandidates, rank_chunks
from core.domain.tokenize import tokenize
from core.ingest.indexing import index_uploads, read_upload
from core.service import SAMPLE_CORPUS, SAMPLE_QRELS, SAMPLE_QUERIES
from core.stores.memory import InMemoryChunkStore
from pages.common import get_service
from tests.fixtures.screens import explanation_cells

APP = str(SAMPLE_CORPUS.parents[2] / "app.py")
#: Cranfield query 1: limit 20 cuts three of its unlimited top-10.
QUERY = (
    "what similarity laws must be obeyed when constructing aeroelastic models of heated "
    "high speed aircraft ."
)
UNLIMITED_LINE = re.compile(r"(\d+)\. (.+?) · passage 1 &nbsp; \*\*([0-9.]+)\*\*(.*)")
LIMITED_LINE = re.compile(
    r"(\d+)\. (.+?) · passage 1 &nbsp; \*\*([0-9.]+)\*\* &nbsp; <span class='lx-move'>(.+)</span>"
)
CUT_NOTE = re.compile(r"missing: candidate #([\d,]+) of ([\d,]+), matches (\d+) of (\d+) terms")


class Direct:
    """The sample in a separate store: candidates in the store's order, read directly."""

    def __init__(self) -> None:
        self.store = InMemoryChunkStore()
        self.tenant = workspace_tenant_id("direct")
        self.loop = asyncio.new_event_loop()
        self.loop.set_debug(False)
        upload = read_upload(SAMPLE_CORPUS.name, SAMPLE_CORPUS.read_bytes())
        self.loop.run_until_complete(
            index_uploads(
                [upload], self.store, self.tenant, chunking=ChunkingOptions(whole_documents=True)
            )
        )

    def candidates(self, query: str) -> LexicalCandidates:
        return self.loop.run_until_complete(
            self.store.lexical_candidates(tokenize(query), self.tenant, 2**62)
        )

    def report(self, query: str, k: int, limit: int) -> TruncationReport:
        return analyse_truncation(tokenize(query), self.candidates(query), k, limit)

    def runs(self, k: int, limits: list[int]) -> list[EvaluationRun]:
        """Whole-document passages: the top-k passages are the top-k documents."""
        queries = parse_queries(SAMPLE_QUERIES.read_bytes())
        qrels = parse_qrels(SAMPLE_QRELS.read_bytes())
        ranked: list[dict[str, list[str]]] = [{} for _ in limits]
        for query_id, text in queries.items():
            if query_id not in qrels:
                continue
            full = self.candidates(text)
            for documents, limit in zip(ranked, limits, strict=True):
                handed = full.head(limit)
                passages = rank_chunks(tokenize(text), handed, k)
                documents[query_id] = documents_in_rank_order(r.chunk.source_id for r in passages)
        return [
            evaluate_run(queries, qrels, d, k, limit)
            for d, limit in zip(ranked, limits, strict=True)
        ]


@pytest.fixture(scope="module")
def direct() -> Iterator[Direct]:
    found = Direct()
    yield found
    found.loop.close()


pytestmark = pytest.mark.usefixtures("in_memory_store")


def page(path: str, workspace: str, **params: str) -> AppTest:
    """The app from its entry point with ``params`` in the URL, switched to ``path``."""
    get_service().create_workspace(workspace)
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["ws"] = workspace
    for key, value in params.items():
        at.query_params[key] = value
    at.run()
    at.switch_page(path).run()
    no_exception(at)
    return at


def no_exception(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]


def markdown(at: AppTest) -> list[str]:
    return [m.value for m in at.markdown]


def block(at: AppTest, heading: str) -> list[str]:
    """The lines of the markdown that follows the one starting with ``heading``."""
    values = markdown(at)
    index = next(i for i, v in enumerate(values) if v.startswith(heading))
    return values[index + 1].split("  \n")


def param(at: AppTest, name: str) -> str:
    value: Any = at.query_params[name]
    return str(value[0] if isinstance(value, list) else value)


def test_the_truncation_page_shows_cores_rankings_and_marks_cut_passages(
    cranfield: str, direct: Direct
) -> None:
    at = page("pages/truncation.py", cranfield, q=QUERY, k="10", limit="20")
    want = direct.report(QUERY, 10, 20)
    assert at.title[0].value == "Truncation"
    assert at.slider(key="t_limit").value == 20

    unlimited = [UNLIMITED_LINE.fullmatch(line) for line in block(at, "**Unlimited top-10**")]
    assert all(unlimited)
    shown = [(int(m[1]), m[2], m[3]) for m in unlimited if m]
    assert shown == [
        (rank, r.chunk.source_id, f"{r.score:.2f}") for rank, r in enumerate(want.unlimited, 1)
    ]
    cut_notes = {m[2]: CUT_NOTE.search(m[4]) for m in unlimited if m}
    rows = {row.chunk_id: row for row in want.candidates}
    for cut in want.cut:
        note = cut_notes[cut.ranked.chunk.source_id]
        assert note is not None, f"{cut.ranked.chunk.source_id} is cut but not marked"
        assert note.groups() == (
            f"{cut.position:,}",
            f"{want.matching:,}",
            str(cut.matched_terms),
            str(len(want.terms)),
        )
    assert sum(note is not None for note in cut_notes.values()) == len(want.cut) > 0

    limited = [LIMITED_LINE.fullmatch(line) for line in block(at, "**Limited top-10**")]
    assert all(limited)
    for rank, (match, ranked) in enumerate(zip(limited, want.limited, strict=True), 1):
        assert match is not None
        unlimited_rank = rows[ranked.chunk.id].unlimited_rank or 0
        moved = unlimited_rank - rank
        assert (match[1], match[2], match[3]) == (
            str(rank),
            ranked.chunk.source_id,
            f"{ranked.score:.2f}",
        )
        # New to the top-10 (it took a cut passage's place) is marked as Compare marks it.
        new = " (new)" if unlimited_rank > 10 else ""
        assert match[4] == (f"▲{moved}" if moved else "=") + new
    assert any((rows[r.chunk.id].unlimited_rank or 0) > 10 for r in want.limited), "none new"

    text = "\n".join(markdown(at))
    assert "**Candidate order:** most query terms matched first; ties by passage id" in text
    assert f"**smallest safe limit: {want.smallest_safe_limit:,}**" in text
    assert f"limit 20 of {want.matching:,} matching passages" in text
    assert f"**{len(want.cut)} of the unlimited top-10 cut**" in text

    sweep, scatter = (json.loads(c.proto.spec) for c in at.get("plotly_chart"))
    assert list(sweep["data"][0]["x"]) == [p.limit for p in want.sweep]
    assert list(sweep["data"][0]["y"]) == [p.overlap for p in want.sweep]
    # A log axis (the safe limit is a few percent of the matches), and the two limits named
    # in the legend, never as labels that overlap each other and the lines.
    assert sweep["layout"]["xaxis"]["type"] == "log"
    assert not sweep["layout"].get("annotations")
    assert [trace["name"] for trace in sweep["data"][1:]] == [
        "limit 20",
        f"smallest safe limit {want.smallest_safe_limit:,}",
    ]
    kept, cut_trace = scatter["data"]
    assert list(cut_trace["y"]) == [r.score for r in want.candidates if r.cut]
    assert list(kept["x"]) == [r.matched_terms for r in want.candidates if not r.cut]
    assert cut_trace["marker"]["color"] == "#E45756"


def test_search_and_truncation_share_the_query_and_keep_their_own_k_and_limit(
    cranfield: str,
) -> None:
    """A click in the menu drops the URL's parameters: the session carries the query over; k
    and limit stay each screen's own (Truncation's limit followed the analyst to Search and cut
    its results without a word, issue 48)."""
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["ws"] = cranfield
    at.run()
    at.text_input(key="q").input("boundary layer transition").run()
    at.number_input(key="k").set_value(5).run()
    at.number_input(key="limit").set_value(300).run()
    for name in ("q", "k", "limit"):
        at.query_params.pop(name, None)
    at.switch_page("pages/truncation.py").run()
    no_exception(at)
    assert at.text_input(key="t_q").value == "boundary layer transition"
    assert (at.number_input(key="t_k").value, at.slider(key="t_limit").value) == (10, 1000)
    at.slider(key="t_limit").set_value(40).run()
    for name in ("q", "k", "limit"):
        at.query_params.pop(name, None)
    at.switch_page("pages/search.py").run()
    no_exception(at)
    assert at.text_input(key="q").value == "boundary layer transition"
    assert (at.number_input(key="k").value, at.number_input(key="limit").value) == (5, 300)
    for name in ("q", "k", "limit"):
        at.query_params.pop(name, None)
    at.switch_page("pages/truncation.py").run()
    assert at.slider(key="t_limit").value == 40  # Truncation's own limit, kept for it


def test_a_cut_decided_by_the_passage_id_tie_break_says_so(cranfield: str, direct: Direct) -> None:
    """'boundary layer transition' at limit 20: the unlimited #1 matches all three terms, as
    does the last kept candidate, and is cut only because of its passage id."""
    query = "boundary layer transition"
    at = page("pages/truncation.py", cranfield, q=query, k="10", limit="20")
    want = direct.report(query, 10, 20)
    by_position = {row.position: row for row in want.candidates}
    last_kept = by_position[20].matched_terms
    lines = {
        m[2]: m[4]
        for m in (UNLIMITED_LINE.fullmatch(x) for x in block(at, "**Unlimited top-10**"))
        if m
    }
    ties = [c for c in want.cut if c.matched_terms == last_kept]
    others = [c for c in want.cut if c.matched_terms != last_kept]
    assert ties, "the example no longer shows a tie-break cut"
    for cut in ties:
        assert "cut by the passage-id tie-break" in lines[cut.ranked.chunk.source_id]
    for cut in others:
        assert "tie-break" not in lines[cut.ranked.chunk.source_id]
    assert any("ordered by their passage id" in c.value for c in at.caption)


def test_a_link_reproduces_the_truncation_view_and_the_slider_writes_the_url(
    cranfield: str, direct: Direct
) -> None:
    at = page("pages/truncation.py", cranfield, q="aeroelastic models", k="5", limit="7")
    assert at.text_input(key="t_q").value == "aeroelastic models"
    assert at.number_input(key="t_k").value == 5
    assert at.slider(key="t_limit").value == 7
    want = direct.report("aeroelastic models", 5, 7)
    assert f"**smallest safe limit: {want.smallest_safe_limit:,}**" in "\n".join(markdown(at))

    at.slider(key="t_limit").set_value(want.smallest_safe_limit).run()
    no_exception(at)
    assert param(at, "limit") == str(want.smallest_safe_limit)
    assert (param(at, "q"), param(at, "k"), param(at, "ws")) == (
        "aeroelastic models",
        "5",
        cranfield,
    )
    assert "**0 of the unlimited top-5 cut**" in "\n".join(markdown(at))
    # A new query keeps the limit (a new slider range must not reset it).
    at.text_input(key="t_q").input("aeroelastic").run()
    assert at.slider(key="t_limit").value == want.smallest_safe_limit


def test_an_exact_limit_typed_beside_the_slider_moves_it_on_the_querys_own_scale(
    cranfield: str, direct: Direct
) -> None:
    at = page("pages/truncation.py", cranfield)
    assert not at.slider  # no range to guess before a query (it jumped from 1,000 to 631)
    assert at.number_input(key="t_limit_box").value == 1000
    at.text_input(key="t_q").input("aeroelastic models").run()
    matching = direct.report("aeroelastic models", 10, 20).matching
    assert at.slider(key="t_limit").max == max(matching, 1000)
    at.number_input(key="t_limit_box").set_value(20).run()
    no_exception(at)
    assert at.slider(key="t_limit").value == 20 and param(at, "limit") == "20"
    assert at.slider(key="t_limit").max == matching  # the candidate count's own scale
    want = direct.report("aeroelastic models", 10, 20)
    assert f"**{len(want.cut)} of the unlimited top-10 cut**" in "\n".join(markdown(at))
    at.slider(key="t_limit").set_value(7).run()
    assert at.number_input(key="t_limit_box").value == 7  # the box follows the slider


@pytest.mark.parametrize(
    ("query", "reason"),
    [("the of and", "no terms left after stopwords"), ("qqqzzz", "no passage contains any term")],
)
def test_an_empty_truncation_says_why(cranfield: str, query: str, reason: str) -> None:
    at = page("pages/truncation.py", cranfield, q=query)
    sentence = EMPTY_REASON_SENTENCES.get(reason, reason)
    assert [w.value for w in at.warning] == [f"Nothing to compare: {sentence}."]
    assert not at.get("plotly_chart")


def test_why_not_on_search_explains_a_cut_passage_with_cores_numbers(
    cranfield: str, direct: Direct
) -> None:
    report = direct.report(QUERY, 10, 20)
    cut = report.cut[0].ranked.chunk
    want = why_not(tokenize(QUERY), direct.candidates(QUERY), cut.id, 10, 20)
    at = AppTest.from_file(APP, default_timeout=60)
    for key, value in {"ws": cranfield, "q": QUERY, "k": "10", "limit": "20"}.items():
        at.query_params[key] = value
    at.run()
    # Closed, "why not?" builds no control (a tracked expander: issue 50 item 3).
    assert "why_not_id" not in [t.key for t in at.text_input]
    at.session_state["why_not_open"] = True  # the analyst opens "why not?"
    at.run()
    at.text_input(key="why_not_id").input(cut.source_id).run()
    no_exception(at)
    answer = next(
        v for v in markdown(at) if v.startswith(f"**source {cut.source_id} · passage 1**")
    )
    assert want.position is not None
    assert f"Candidate #{want.position:,} in the store's order" in answer
    assert f"{want.position - 1:,} candidates ahead of it" in answer
    assert "**the limit 20 cut it**" in answer
    assert f"rank {want.unlimited_rank:,}, score {want.score:.2f}" in answer
    assert "At limit 20: not in the top-10." in answer
    assert f"top-10: **{want.smallest_limit:,}**" in answer
    assert "lacks: " + ", ".join(f"`{t}`" for t in want.missing_terms) in answer
    # Above the ten results (below them it went unseen), and with the passage's own arithmetic.
    values = markdown(at)
    assert values.index(answer) < next(i for i, v in enumerate(values) if v.startswith("**#1**"))
    found = direct.candidates(QUERY)
    row = found.row_of(cut.id)
    assert row is not None
    terms = tokenize(QUERY)
    mine = explain_score(
        terms, found.term_frequencies(row), int(found.doc_lengths[row]), found.stats
    )
    shown = {row["term"]: row["contribution"] for row in explanation_cells(at)}
    assert {t: shown[t] for t in (p.term for p in mine.terms)} == {
        p.term: f"{p.contribution:.4f}" for p in mine.terms
    }
    assert all(shown[t] == "0.0000" for t in shown.keys() - {p.term for p in mine.terms})
    total = f"**total = {mine.score:.4f}** = its score, every match scored"
    assert any(v.startswith(total) for v in values)

    # A passage no limit brings into the top-10 is said to be one, conditionally.
    fiftieth = rank_chunks(terms, found, 50)[49].chunk
    at.text_input(key="why_not_id").input(fiftieth.source_id).run()
    assert any(
        "Even with no limit it would not be in the top-10: every match scored, it would rank 50."
        in v
        for v in markdown(at)
    )

    at.text_input(key="why_not_id").input("no-such-source").run()
    assert [w.value for w in at.warning] == [
        "No passage or source “no-such-source” in this workspace."
    ]


def test_evaluate_runs_on_the_sample_judgments_and_shows_cores_means(
    cranfield: str, direct: Direct
) -> None:
    at = page("pages/evaluate.py", cranfield)
    assert at.title[0].value == "Evaluate"
    at.button(key="ev_sample").click().run()
    at.button(key="ev_run").click().run()
    no_exception(at)
    a, b = direct.runs(10, [1000, 100])
    metrics = {m.label: (m.value, m.delta) for m in at.metric}
    assert metrics["nDCG@10 · limit 1,000"][0] == f"{a.mean_ndcg:.4f}"
    assert metrics["nDCG@10 · limit 100"] == (
        f"{b.mean_ndcg:.4f}",
        f"{b.mean_ndcg - a.mean_ndcg:+.4f}",
    )
    assert metrics["Recall@10 · limit 100"][0] == f"{b.mean_recall:.4f}"
    assert metrics["MRR@10 · limit 1,000"][0] == f"{a.mean_mrr:.4f}"

    table = at.dataframe[0].value
    assert list(table["query id"]) == [r.query_id for r in a.rows]
    assert list(table["A: limit 1,000"]) == [r.ndcg for r in a.rows]
    assert list(table["B: limit 100"]) == [r.ndcg for r in b.rows]
    assert list(table["B − A"]) == [
        rb.ndcg - ra.ndcg for ra, rb in zip(a.rows, b.rows, strict=True)
    ]
    first = table.iloc[0]
    assert first["Search B"].startswith("./?q=what+similarity+laws")
    assert first["Search B"].endswith(f"&k=10&limit=100&ws={cranfield}")

    at.radio(key="ev_metric").set_value("MRR").run()
    assert list(at.dataframe[0].value["A: limit 1,000"]) == [r.mrr for r in a.rows]


def judged_ids() -> set[str]:
    """Distinct documents the sample's qrels judge, read from the file itself."""
    lines = SAMPLE_CORPUS.with_name("qrels.tsv").read_text().splitlines()[1:]
    return {line.split("\t")[1] for line in lines if line.strip()}


def judged_documents() -> int:
    return len(judged_ids())


def test_evaluate_in_a_workspace_without_the_judged_documents_warns_instead_of_zeros() -> None:
    at = page("pages/evaluate.py", f"nojudged-{uuid.uuid4().hex[:8]}")
    at.button(key="ev_sample").click().run()
    no_exception(at)
    (warning,) = [w.value for w in at.warning]
    assert warning.startswith(f"None of the {judged_documents():,} documents these judgments name")
    assert at.button(key="ev_run").disabled
    assert not at.metric and not at.dataframe


def test_evaluate_says_how_many_judged_documents_the_workspace_holds(cranfield: str) -> None:
    at = page("pages/evaluate.py", cranfield)
    at.button(key="ev_sample").click().run()
    records = [json.loads(line) for line in SAMPLE_CORPUS.read_text().splitlines()]
    # Empty records (docs 471, 995) are not passages, so a judged empty one is not there.
    stored = {r["_id"] for r in records if (r.get("title", "") + r.get("text", "")).strip()}
    n, present = judged_documents(), len(judged_ids() & stored)
    assert f"{present:,} of the {n:,} judged documents are in this workspace." in [
        c.value for c in at.caption
    ]


def test_unreadable_judgments_are_reported_in_plain_words(cranfield: str) -> None:
    at = page("pages/evaluate.py", cranfield)
    at.session_state["ev_judgments"] = ("bad.tsv", b"1\twing\n", b"1\t184\n")
    at.run()
    at.button(key="ev_run").click().run()
    no_exception(at)
    message = "qrels file: line 1: expected 3 (BEIR) or 4 (TREC) columns, found 2"
    assert [e.value for e in at.error] == [f"The judgments cannot be used: {escape_text(message)}"]
    assert not at.metric


@pytest.mark.parametrize(
    ("path", "title"),
    [("pages/truncation.py", "Truncation"), ("pages/evaluate.py", "Evaluate")],
)
def test_the_new_pages_run_from_the_entry_point_on_an_empty_workspace(
    path: str, title: str
) -> None:
    at = page(path, f"empty-{uuid.uuid4().hex[:8]}")
    assert at.title[0].value == title
    assert "load_sample" in [b.key for b in at.button]


def test_evaluate_diagnoses_run_a_of_the_sample_judgments_with_cores_causes(
    cranfield: str,
) -> None:
    from core.service import LexplainService

    at = page("pages/evaluate.py", cranfield)
    at.button(key="ev_sample").click().run()
    at.number_input(key="ev_limit_a").set_value(100).run()
    at.button(key="ev_diagnose").click().run()
    no_exception(at)
    queries, qrels = LexplainService.sample_judgments()
    want = get_service().diagnose_files(queries, qrels, 10, 100, workspace=cranfield)
    assert any(want.ceiling_note in i.value for i in at.info)
    (table,) = [d.value for d in at.dataframe if "nDCG lost" in d.value.columns]
    assert list(table["query"]) == [q.query for q in want.queries]
    assert list(table["nDCG@10"]) == [q.ndcg for q in want.queries]


def test_truncation_narrowed_to_sources_counts_the_filters_exclusions_apart(
    cranfield: str,
) -> None:
    from core.service import PassageFilter

    query = "similarity laws aeroelastic models"
    at = page("pages/truncation.py", cranfield, q=query, k="5", limit="20")
    at.query_params["src"] = ["184", "486", "12"]
    at.run()
    no_exception(at)
    within = PassageFilter(sources=("184", "486", "12"))
    want = get_service().truncation(query, 5, 20, workspace=cranfield, within=within)
    assert want.filtered_out > 0
    assert any(
        f"{want.filtered_out:,} passages holding a query term excluded by the filter" in c.value
        for c in at.caption
    )
    assert any(
        f"{want.report.matching:,} matching passages the filter admits" in m.value
        for m in at.markdown
    )


def test_an_evaluate_run_narrowed_to_one_source_ranks_only_its_passages(
    cranfield: str,
) -> None:
    from core.service import LexplainService, PassageFilter, RunSpec

    queries, qrels = LexplainService.sample_judgments()
    within = PassageFilter(sources=("184",))
    (run,) = get_service().evaluate_runs(
        queries, qrels, 10, [RunSpec(workspace=cranfield, limit=1000, within=within)]
    )
    assert {d for ranked in run.ranked.values() for d in ranked} <= {"184"}
    assert any(ranked == ["184"] for ranked in run.ranked.values())
    assert "within source" in run.label
