"""Long work never blocks another session's search (issue 13, item 5: no stall).

The service runs every store call on one event loop; an Evaluate or an upload on the
in-memory store never suspends by itself, so before checkpoints a search from another
thread waited for the whole run. These tests assert order, not time: a search started
while an Evaluate runs returns while it is still running; indexing reaches a checkpoint
per document. The p99 figures are in
bench/bench_stall.py and bench/README.md ("No stall").
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Callable, Iterator
from typing import Any
from uuid import uuid4

import pytest

from core.checkpoint import checkpoint, install
from core.domain.chunks import SourceDocument, StoredChunk
from core.domain.tokenize import Profile
from core.ingest.indexing import index_documents
from core.service import RunSpec, runner
from core.service.facade import LexplainService
from core.settings import Settings
from core.stores.memory import InMemoryChunkStore
from core.stores.port import Workspace


@pytest.fixture(scope="module")
def service() -> Iterator[LexplainService]:
    svc = LexplainService.from_settings(Settings(store="memory"))
    svc.load_sample(workspace="cranfield")
    yield svc
    svc.close()


def search_during(
    long_work: Callable[[Callable[[int, int, str], None]], object], service: LexplainService
) -> tuple[bool, int]:
    """Run ``long_work`` in a thread; at its first progress report, search from this thread.

    Returns whether the long work was still running when the search returned, and how many
    progress reports had arrived by then.
    """
    started = threading.Event()
    reports: list[int] = []

    def progress(done: int, total: int, label: str) -> None:
        reports.append(done)
        started.set()

    worker = threading.Thread(target=long_work, args=(progress,), daemon=True)
    worker.start()
    assert started.wait(60), "the long work never reported progress"
    service.search("flow over a heated flat plate", 10, 1000, workspace="cranfield")
    running = worker.is_alive()
    seen = len(reports)
    worker.join(120)
    return running, seen


def test_a_search_returns_while_another_sessions_evaluate_is_still_running(
    service: LexplainService,
) -> None:
    queries, qrels = service.sample_judgments()
    # Long work: the sample's queries six times over (an Evaluate takes two runs at most).
    queries = b"".join(queries.replace(b'"_id": "', b'"_id": "%d-' % n) for n in range(6))
    qrels = qrels.splitlines(keepends=True)[0] + b"".join(
        b"%d-" % n + line for n in range(6) for line in qrels.splitlines(keepends=True)[1:]
    )
    runs = [RunSpec(workspace="cranfield", limit=limit) for limit in (100, 1000)]

    def evaluate(progress: Callable[[int, int, str], None]) -> object:
        return service.evaluate_runs(queries, qrels, 10, runs, on_progress=progress)

    running, seen = search_during(evaluate, service)
    assert running, f"the search waited for the whole Evaluate ({seen} progress reports)"


async def test_indexing_gives_way_to_interactive_calls_before_every_document() -> None:
    """A load or upload reaches a checkpoint per document, where the service's pause runs.

    (An order test like the Evaluate one cannot tell here: an upload reports progress only
    after its first batch is written, and its writes already suspend between batches.)
    """
    paused: list[int] = []

    async def pause() -> None:
        paused.append(1)

    async def upload() -> int:
        install(pause)
        documents = [
            SourceDocument(source_id=f"note-{i}", text=f"Flutter of heated wings, note {i}.")
            for i in range(50)
        ]
        report = await index_documents(documents, InMemoryChunkStore(), uuid4(), extractor=None)
        return report.documents_indexed

    assert await asyncio.create_task(upload()) == 50
    assert len(paused) >= 50


async def test_the_indexer_itself_gives_way_before_every_document_it_cuts() -> None:
    """Documents come a part at a time and are cut in a plain loop; with a pause installed (the
    service) it is still awaited before every document, whatever the store's writes do."""
    paused: list[int] = []

    class Silent(InMemoryChunkStore):
        """Writes nothing and never gives way itself."""

        async def replace_sources(self, *args: Any, **kwargs: Any) -> list[int]:
            return [0] * len(args[1])

    async def pause() -> None:
        paused.append(1)

    async def upload() -> int:
        install(pause)
        documents = [SourceDocument(source_id=f"n{i}", text=f"wings {i}") for i in range(300)]
        report = await index_documents(documents, Silent(), uuid4(), extractor=None)
        return report.documents_indexed

    assert await asyncio.create_task(upload()) == 300
    assert len(paused) >= 300


def test_a_checkpoint_is_due_at_once_with_a_pause_and_after_a_turn_s_without(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from core import checkpoint as module

    monkeypatch.setattr(module, "_TURN_S", 60.0)  # a slow machine must not reach the next turn
    monkeypatch.setattr(module, "_last_turn", [0.0])

    async def nothing() -> None:
        return None

    async def run() -> list[bool]:
        first = module.turn_due()
        await module.checkpoint()  # turns the loop: the next turn is _TURN_S away
        without = module.turn_due()
        module.install(nothing)
        return [first, without, module.turn_due()]

    assert asyncio.run(run()) == [True, False, True]


def test_long_work_does_not_advance_while_an_interactive_call_is_pending(
    service: LexplainService,
) -> None:
    """The runner's rule itself: a search that waits on the database (here: a sleep) holds
    the long work at its next checkpoint until the search's caller has the answer."""
    steps = [0]
    advanced, _ = _during_a_slow_search(service, lambda: steps[0], steps)
    assert advanced <= 1, f"the long work advanced {advanced} steps during the search"


def _during_a_slow_search(
    service: LexplainService, counter: Callable[[], int], steps: list[int] | None = None
) -> tuple[int, threading.Thread]:
    """Long work of 100,000 checkpoints in another session, and once it runs, a search that
    waits 0.2 s (as on the database): how far ``counter`` moved during the search, and the
    long work's thread once given up to 30 s to end (``steps[0]`` counts its steps)."""
    started = threading.Event()

    async def long_work(report: Callable[[int, int, str], None]) -> int:
        for _ in range(100_000):
            if steps is not None:
                steps[0] += 1
            started.set()
            await checkpoint()
        return 100_000

    async def slow_search() -> int:
        before = counter()
        await asyncio.sleep(0.2)
        return counter() - before

    worker = threading.Thread(
        target=service._call_with_progress, args=(long_work, None), daemon=True
    )
    worker.start()
    assert started.wait(30)
    moved = service._call(slow_search())
    worker.join(30)
    return moved, worker


async def test_an_in_memory_reindex_gives_way_before_every_passage() -> None:
    """A re-index reaches a checkpoint per passage (every 500 held the loop ~120 ms at a time:
    search p99 39x idle in bench/bench_stall.py --work reindex)."""
    paused: list[int] = []

    async def pause() -> None:
        paused.append(1)

    store = InMemoryChunkStore()
    tenant = uuid4()
    await store.upsert_workspace(Workspace(tenant_id=tenant, name="notes"))
    documents = [
        SourceDocument(source_id=f"note-{i}", text=f"Flutter of heated wings, note {i}.")
        for i in range(60)
    ]
    await index_documents(documents, store, tenant, extractor=None)

    async def reindex() -> int:
        install(pause)
        return await store.reindex(tenant, Profile.ENGLISH)

    assert await asyncio.create_task(reindex()) == 60
    assert len(paused) >= 60


async def test_an_in_memory_write_gives_way_per_passage_and_still_lands_whole() -> None:
    """One ``replace_sources`` group (an upload writes up to thousands of passages at once)
    tokenises before it takes the store's lock, reaching a checkpoint per passage; readers at
    those checkpoints still see none of the group (search p99 45x idle while uploading before)."""
    store = InMemoryChunkStore()
    tenant = uuid4()
    await store.upsert_workspace(Workspace(tenant_id=tenant, name="notes"))
    seen: list[int] = []

    async def pause() -> None:
        seen.append((await store.corpus_summary(tenant)).passages)

    sources = [
        (f"note-{i}", [StoredChunk(tenant_id=tenant, source_id=f"note-{i}", chunk_index=0,
                                   text=f"Flutter of heated wings, note {i}.", start_char=0,
                                   end_char=33 + len(str(i)))])
        for i in range(40)
    ]  # fmt: skip

    async def write() -> list[int]:
        install(pause)
        return await store.replace_sources(tenant, sources)

    assert await asyncio.create_task(write()) == [0] * 40
    assert len(seen) >= 40
    # None of the group, then (after the swap, a step of its own) all of it: never a part.
    assert set(seen) <= {0, 40} and seen == sorted(seen) and seen[0] == 0, seen
    assert (await store.corpus_summary(tenant)).passages == 40


async def test_a_group_into_an_empty_workspace_is_indexed_aside_and_swapped_in_at_once() -> None:
    """Into an empty workspace the group is indexed aside, giving way per source copied and
    per few thousand characters tokenised (``TEXT_STEP_CHARS``, tests/stores/test_memory_stall;
    a source with no rows yet has nothing to look up, so no turn for it); readers meanwhile
    see none of it, then all."""
    store = InMemoryChunkStore()
    tenant = uuid4()
    await store.upsert_workspace(Workspace(tenant_id=tenant, name="notes"))
    seen: list[int] = []

    async def pause() -> None:
        seen.append((await store.corpus_summary(tenant)).passages)

    sources = [
        (f"note-{i}", [StoredChunk(tenant_id=tenant, source_id=f"note-{i}", chunk_index=0,
                                   text=f"Flutter of heated wings, note {i}.", start_char=0,
                                   end_char=33 + len(str(i)))])
        for i in range(40)
    ]  # fmt: skip

    async def write() -> list[int]:
        install(pause)
        return await store.replace_sources(tenant, sources)

    assert await asyncio.create_task(write()) == [0] * 40
    assert len(seen) > 40, f"{len(seen)} checkpoints: the insertion did not give way"
    assert set(seen) <= {0, 40} and seen == sorted(seen) and seen[0] == 0, seen
    summary = await store.corpus_summary(tenant)
    assert (summary.passages, summary.sources) == (40, 40)
    found = await store.lexical_candidates(["flutter"], tenant, 100)
    assert len(found) == 40 and found.stats.n_docs == 40


def test_a_query_of_many_words_runs_as_long_work_and_a_short_one_goes_first(
    service: LexplainService,
) -> None:
    """A query past HEAVY_QUERY_WORDS is not counted as pending and gives way at checkpoints;
    a person's query is an interactive call that long work (and heavy queries) wait for."""
    from core import checkpoint as checkpoints
    from core.service.runner import HEAVY_QUERY_WORDS

    async def seen() -> tuple[int, bool]:
        return service._interactive.count, checkpoints._PAUSE.get() is not None

    heavy = " ".join(f"w{i}" for i in range(HEAVY_QUERY_WORDS + 1))
    light = " ".join(f"w{i}" for i in range(HEAVY_QUERY_WORDS))
    assert service._call_query(heavy, seen()) == (0, True)
    assert service._call_query(light, seen()) == (1, False)


def test_a_truncation_gives_way_between_its_steps_and_ends_as_in_one_piece(
    service: LexplainService, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Scoring a big query's candidates and analysing them are steps (a checkpoint between
    them in the service), and running them whole gives the same report."""
    from core.analysis.truncation import analyse_truncation, truncation_steps
    from core.domain import bm25
    from core.domain.steps import finish
    from core.domain.tokenize import tokenize

    monkeypatch.setattr(bm25, "SCORE_BLOCK_CELLS", 640)  # scoring in many steps

    words = "flow wing pressure heat boundary layer plate shock number mach"
    terms = tokenize(words)
    full = service._call(
        service._store.lexical_candidates(terms, service.tenant("cranfield"), 10**9)
    )
    steps = truncation_steps(terms, full, 10, 100)
    taken = 0
    for _ in steps:
        taken += 1
    blocks = -(-len(full) // (640 // len(terms)))
    assert taken >= blocks + 4
    assert finish(truncation_steps(terms, full, 10, 100)) == analyse_truncation(
        terms, full, 10, 100
    )


async def test_a_group_checked_a_source_at_a_time_still_writes_nothing_when_its_last_is_bad() -> (
    None
):
    """The in-memory write checks its sources one at a time, giving way between them; a
    source named twice at the end of the group still refuses the whole group."""
    store = InMemoryChunkStore()
    tenant = uuid4()
    await store.upsert_workspace(Workspace(tenant_id=tenant, name="notes"))

    def note(i: int) -> tuple[str, list[StoredChunk]]:
        text = f"Flutter of heated wings, note {i}."
        chunk = StoredChunk(tenant_id=tenant, source_id=f"note-{i}", chunk_index=0, text=text,
                            start_char=0, end_char=len(text))  # fmt: skip
        return f"note-{i}", [chunk]

    with pytest.raises(ValueError, match="appears twice"):
        await store.replace_sources(tenant, [note(i) for i in range(30)] + [note(0)])
    assert (await store.corpus_summary(tenant)).passages == 0


def _heavy_cranfield_query(words: int) -> str:
    """``words`` of Cranfield's most common words: each matches most of the corpus."""
    import json
    from collections import Counter

    from core.service import SAMPLE_CORPUS

    counts: Counter[str] = Counter()
    for line in SAMPLE_CORPUS.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        counts.update(set(f"{record.get('title', '')} {record['text']}".lower().split()))
    return " ".join(w for w, _ in counts.most_common(words * 2) if w.isalpha())


@pytest.mark.parametrize("action", ["search", "truncation", "why_not", "compare", "explain"])
def test_every_action_on_a_heavy_query_gives_way_per_score_block_and_per_explained_result(
    service: LexplainService, monkeypatch: pytest.MonkeyPatch, action: str
) -> None:
    """A query of many words is long work in every screen's action: it pauses at a checkpoint
    at least once per ``SCORE_BLOCK_CELLS`` candidate x term cells scored and per result
    explained, so another session's light search waits for one step, never the whole query."""
    from core.domain import bm25
    from core.domain.tokenize import tokenize
    from core.service import Ranker, RankerKind

    block = 1_000
    monkeypatch.setattr(bm25, "SCORE_BLOCK_CELLS", block)
    query = _heavy_cranfield_query(100)
    terms = len(set(tokenize(query, service.workspace_profile("cranfield"))))
    first = service.search("flow", 10, 1000, workspace="cranfield").passages[0].chunk.id
    pauses: list[int] = []

    async def counted() -> None:
        pauses.append(1)

    monkeypatch.setattr(service, "_give_way", counted)
    k, limit = 10, 1000
    a, b = Ranker.of(RankerKind.WORKSPACE), Ranker.of(RankerKind.CLASSIC)
    run = {
        "search": lambda: service.search(query, k, limit, workspace="cranfield"),
        "truncation": lambda: service.truncation(query, k, limit, workspace="cranfield"),
        "why_not": lambda: service.why_not(query, first, k, limit, workspace="cranfield"),
        "compare": lambda: service.compare(query, a, b, k, limit, workspace="cranfield"),
        "explain": lambda: service.explain(query, first, workspace="cranfield"),
    }
    run[action]()
    blocks = limit // max(1, block // terms)  # at least ``limit`` rows are scored
    wanted = {"search": blocks + k, "truncation": blocks + 2 * k, "why_not": blocks,
              "compare": 2 * blocks + 2 * k, "explain": 2}[action]  # fmt: skip
    assert len(pauses) >= wanted, f"{action} gave way {len(pauses)} times, fewer than {wanted}"


def test_an_upload_counts_the_sources_before_it_as_long_work_without_listing_them() -> None:
    """An upload reads each source's passages before it writes (its report's "unchanged"). Read
    as an interactive listing (a ``SourceSummary`` per source, 12,600 in ~50 steps) every search
    arriving meanwhile took turns with it; as counts inside the long work, it gives way."""
    from core.checkpoint import giving_way

    counted: list[bool] = []

    class CountsOnly(InMemoryChunkStore):
        async def list_sources(self, tenant_id: Any) -> Any:
            raise AssertionError("an upload listed the workspace's sources")

        async def source_passage_counts(self, tenant_id: Any) -> dict[str, int]:
            counted.append(giving_way())
            return await super().source_passage_counts(tenant_id)

    async def factory() -> InMemoryChunkStore:
        return CountsOnly()

    service = LexplainService(factory, settings=Settings(store="memory"))
    try:
        files = [("notes.txt", b"Heated wings flutter.\n\nA second paragraph on heated wings.")]
        (first,) = service.upload_files(files, workspace="notes")
        (again,) = service.upload_files(files, workspace="notes")
    finally:
        service.close()
    assert counted == [True, True], "the counts were not read as the upload's long work"
    assert (first.passages_before, first.passages_new) == (0, first.passages_written)
    assert (again.passages_before, again.passages_unchanged) == (first.passages_written,) * 2


def test_a_service_keeps_another_threads_python_from_holding_the_gil_for_more_than_1_ms() -> None:
    """Beside a thread running Python (an upload's file parsed in a worker thread), a search on
    the loop thread waits a whole switch interval for the GIL each time it lets go of it; at
    CPython's default 5 ms a search ran in 5 ms slices. The service lowers it, never raises it."""
    import sys

    from core.service.runner import SWITCH_INTERVAL_S

    interval = sys.getswitchinterval()
    try:
        sys.setswitchinterval(0.005)
        LexplainService.from_settings(Settings(store="memory")).close()
        assert sys.getswitchinterval() <= SWITCH_INTERVAL_S <= 0.001
        sys.setswitchinterval(1e-6)
        LexplainService.from_settings(Settings(store="memory")).close()
        assert sys.getswitchinterval() == pytest.approx(1e-6)
    finally:
        sys.setswitchinterval(interval)


@pytest.mark.parametrize("how", ["upload", "sample"])
def test_an_uploads_file_is_read_in_a_worker_thread_that_gives_way_every_few_records(
    how: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An upload's JSONL is parsed in a worker thread (never the caller's, never the loop's),
    which pauses at a thread checkpoint every ``LINES_PER_PAUSE`` lines: there it sleeps while
    another session's call waits, instead of taking turns with its search for the GIL."""
    import json
    import sys

    from core.ingest.beir import LINES_PER_PAUSE
    from core.service import SAMPLE_CORPUS

    service = LexplainService.from_settings(Settings(store="memory"))
    paused: list[str] = []

    def pause() -> None:  # noted for the reader's calls (the image build makes its own)
        if sys._getframe(2).f_code.co_name == "_parts":
            paused.append(threading.current_thread().name)

    monkeypatch.setattr(service, "_thread_give_way", pause)
    try:
        if how == "upload":
            records = 300
            lines = (
                json.dumps({"_id": f"d{i}", "text": f"heated wing {i}"}) for i in range(records)
            )
            (report,) = service.upload_files(
                [("notes.jsonl", "\n".join(lines).encode())], workspace="notes"
            )
        else:
            records = len(SAMPLE_CORPUS.read_text(encoding="utf-8").splitlines())
            report = service.load_sample(workspace="notes")
    finally:
        service.close()
    assert report.documents > records * 0.99 and not report.error
    assert len(paused) >= records // LINES_PER_PAUSE
    here, loop = threading.current_thread().name, service._thread.name
    assert not {here, loop} & set(paused), "the file was read on the caller's or loop's thread"


def test_a_worker_threads_checkpoint_sleeps_while_an_interactive_call_is_pending() -> None:
    """The pause a worker thread of long work takes returns at once when no call is pending,
    and waits (the GIL let go) while one is, until it is done."""
    service = LexplainService.from_settings(Settings(store="memory"))
    try:
        service._thread_give_way()  # nothing pending: returns at once
        service._interactive.count += 1
        paused = threading.Thread(target=service._thread_give_way, daemon=True)
        paused.start()
        paused.join(0.1)
        assert paused.is_alive(), "the worker thread went on while a call was pending"
        service._interactive.count -= 1
        paused.join(5)
        assert not paused.is_alive()
    finally:
        service.close()


@pytest.mark.parametrize("action", ["truncation", "why_not", "compare"])
def test_a_heavy_querys_tokenising_term_lookups_and_explanations_are_steps_apart(
    service: LexplainService, monkeypatch: pytest.MonkeyPatch, action: str
) -> None:
    """Each piece of a heavy query's work that held the loop ~2-5 ms for 1,000 terms is a
    step of its own: the tokenising before the candidate read, the terms' postings looked up
    ``LOOKUP_STEP`` at a time, each of Compare's two explanations, and Truncation's report
    apart from the view made of it."""
    from core.analysis import truncation
    from core.analysis.rankers import Ranker, RankerKind
    from core.service import analysis, rankings
    from core.service.runner import ResultCache
    from core.stores.memory import store as memory
    from core.stores.memory.reads import View

    events: list[str] = []

    async def counted() -> None:
        events.append("pause")

    def marked(name: str, original: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            events.append(name)
            return original(*args, **kwargs)

        return wrapper

    monkeypatch.setattr(service, "_results", ResultCache(entries=0))
    monkeypatch.setattr(service, "_give_way", counted)
    monkeypatch.setattr(memory, "LOOKUP_STEP", 16)
    monkeypatch.setattr(View, "posting", marked("posting", View.posting))
    for module in (analysis, rankings):
        monkeypatch.setattr(module, "bounded_candidates", marked("read", module.bounded_candidates))
        monkeypatch.setattr(module, "query_view", marked("tokenise", module.query_view))
    monkeypatch.setattr(analysis, "checked_terms", marked("tokenise", analysis.checked_terms))
    monkeypatch.setattr(rankings, "explain_under", marked("explain", rankings.explain_under))
    monkeypatch.setattr(
        truncation, "TruncationReport", marked("report", truncation.TruncationReport)
    )
    monkeypatch.setattr(analysis, "TruncationView", marked("view", analysis.TruncationView))
    query = _heavy_cranfield_query(60)
    first = service.search("flow", 10, 1000, workspace="cranfield").passages[0].chunk.id
    events.clear()
    if action == "truncation":
        service.truncation(query, 10, 1000, workspace="cranfield")
    elif action == "why_not":
        service.why_not(query, first, 10, 1000, workspace="cranfield")
    else:
        a, b = Ranker.of(RankerKind.WORKSPACE), Ranker.of(RankerKind.CLASSIC)
        service.compare(query, a, b, 10, 1000, workspace="cranfield")
    read = events.index("read")
    tokenised = max(i for i, event in enumerate(events[:read]) if event == "tokenise")
    assert "pause" in events[tokenised:read], "the query's tokenising and its read were one step"
    run = longest = 0
    for event in events:
        run = run + 1 if event == "posting" else 0
        longest = max(longest, run)
    assert events.count("posting") > 16 and longest <= 16
    if action == "truncation":
        assert events[events.index("report") + 1] == "pause" and events[-1] == "view"
    if action == "compare":
        at = [i for i, event in enumerate(events) if event == "explain"]
        assert len(at) == 2
        assert all(events[i - 1] == "pause" for i in at) and events[at[-1] + 1] == "pause"


def test_explained_results_and_scores_build_their_scorer_in_steps_of_their_own(
    service: LexplainService, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Building a 1,000-term query's scorer (an IDF per term) and copying the results'
    passages were ~2 ms each, in the same step as the first explanation or score block."""
    import numpy as np

    from core.analysis.rankers import Ranker, RankerKind, score_all_steps
    from core.domain import ranking
    from core.domain.bm25 import QueryScorer
    from core.domain.tokenize import tokenize

    terms = tokenize(_heavy_cranfield_query(30))
    full = service._call(
        service._store.lexical_candidates(terms, service.tenant("cranfield"), 1000)
    )
    events: list[str] = []
    explain = QueryScorer.explain_columns
    monkeypatch.setattr(
        QueryScorer,
        "explain_columns",
        lambda *a, **kw: events.append("explain") or explain(*a, **kw),
    )
    scorer = Ranker.scorer
    monkeypatch.setattr(
        Ranker, "scorer", lambda *a, **kw: events.append("scorer") or scorer(*a, **kw)
    )
    rows = np.arange(5, dtype=np.int64)
    steps = ranking.ranked_row_steps(terms, full, rows, np.ones(len(full)))
    for _ in steps:
        events.append("step")
    assert events[:3] == ["step", "step", "explain"]
    events.clear()
    steps_all = score_all_steps(Ranker.of(RankerKind.CLASSIC), terms, full)
    for _ in steps_all:
        events.append("step")
    assert events[:3] == ["step", "scorer", "step"]


def test_a_worker_threads_checkpoint_never_pauses_the_loops_own_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Work that calls the thread checkpoint also runs on the loop when it is small (an image
    built for a small workspace): there a pause would hold up the very calls it waits for."""
    from core.service import runner

    monkeypatch.setattr(runner, "MAX_GIVE_WAY_S", 60.0)
    service = LexplainService.from_settings(Settings(store="memory"))

    async def on_the_loop() -> bool:
        service._thread_give_way()
        return True

    try:
        service._interactive.count += 1
        done = asyncio.run_coroutine_threadsafe(on_the_loop(), service._loop)
        assert done.result(timeout=5)
    finally:
        service._interactive.count -= 1
        service.close()


async def test_an_image_build_reaches_a_thread_checkpoint_between_its_c_level_pieces(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A write that merges ``MERGE_FACTOR`` segments builds its image in a worker thread in
    the service: it checks for a waiting call before each segment's part of the merge (twice)
    and between the image's other pieces, not once for the whole build."""
    import sys
    from collections import Counter

    from core.stores.memory import index as memory_image
    from core.stores.memory.index import MERGE_FACTOR

    store = InMemoryChunkStore()
    tenant = uuid4()
    await store.upsert_workspace(Workspace(tenant_id=tenant, name="notes"))

    def note(i: int) -> StoredChunk:
        text = f"Flutter of heated wings, note {i} on panel {i % 7}."
        return StoredChunk(tenant_id=tenant, source_id=f"note-{i}", chunk_index=0, text=text,
                           start_char=0, end_char=len(text))  # fmt: skip

    for i in range(MERGE_FACTOR - 1):
        await store.upsert_many([note(i)])
    calls: list[str] = []
    monkeypatch.setattr(
        memory_image, "thread_checkpoint", lambda: calls.append(sys._getframe(1).f_code.co_name)
    )
    await store.upsert_many([note(MERGE_FACTOR)])
    assert len(store._tenants[tenant].image.segments) == 1, "the write did not merge"
    where = Counter(calls)
    assert where["merged"] == 2 * MERGE_FACTOR, where  # each segment's plan, then its scatter
    assert where["shared_slots"] >= MERGE_FACTOR - 1, where  # a piece of each one's terms
    assert where["written"] >= 3 and where["_merged"] >= 1, where


def test_no_collection_runs_while_an_interactive_call_is_pending_and_the_collector_comes_back() -> (
    None
):
    """Another session's allocations make the collections, but whichever allocation crosses the
    threshold pays for one, often a search's own: the collector is off from the first pending
    call to the last one's end (overlapping calls included), and back on after; a collector
    someone else turned off stays off."""
    import gc

    service = LexplainService.from_settings(Settings(store="memory"))
    collections: list[int] = []

    def noted(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            collections.append(info["generation"])

    async def allocating() -> bool:
        kept = [[i] for i in range(20_000)]  # far over the young generation's threshold
        return gc.isenabled() and len(kept) > 0

    gc.callbacks.append(noted)
    try:
        assert gc.isenabled()
        assert service._call(allocating()) is False
        assert collections == [], "a collection ran inside an interactive call"
        assert gc.isenabled()
        service._interactive.add()  # another session's call still pending
        assert service._call(allocating()) is False and not gc.isenabled()
        service._interactive.done()
        assert gc.isenabled()
        [[i] for i in range(20_000)]
        assert collections, "the collector did not come back"
        gc.disable()
        try:
            service._call(allocating())
            assert not gc.isenabled(), "a collector turned off elsewhere was turned on"
        finally:
            gc.enable()
    finally:
        gc.callbacks.remove(noted)
        service.close()


def test_long_work_waiting_for_a_call_sleeps_until_it_ends_instead_of_looking_every_ms(
    service: LexplainService, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Long work held at a checkpoint is woken by the last pending call's end: while a search
    is pending the loop runs the search's own steps, not a wake-up of the waiting work every
    millisecond (~50 us each on the shared machine); and with the bound far away, the work
    goes on as soon as the call ended, not at the bound."""
    monkeypatch.setattr(runner, "MAX_GIVE_WAY_S", 60.0)
    loop_thread = service._thread.ident
    handles = [0]
    original = asyncio.Handle._run

    def counted(handle: asyncio.Handle) -> None:
        if threading.get_ident() == loop_thread:
            handles[0] += 1
        original(handle)

    monkeypatch.setattr(asyncio.Handle, "_run", counted)
    ran, worker = _during_a_slow_search(service, lambda: handles[0])
    assert not worker.is_alive(), "the long work stayed asleep after the call ended"
    assert ran < 20, f"the loop ran {ran} handles while one search slept 0.2 s"


async def test_long_work_holding_locks_gives_way_to_searches_but_not_to_an_interactive_write() -> (
    None
):
    """Inside ``holding_locks`` long work still pauses for pending calls (a search holds no
    lock it waits for), but not while an interactive write, which may wait for its locks, is
    under way; outside any write the pause runs as always."""
    from core.checkpoint import holding_locks, thread_checkpoint

    paused: list[str] = []
    writing, written = asyncio.Event(), asyncio.Event()

    async def pause() -> None:
        paused.append("loop")

    async def interactive_write() -> None:  # a call's task: no pause installed
        with holding_locks():
            writing.set()
            await written.wait()

    async def long_work() -> None:
        install(pause, lambda: paused.append("thread"))
        with holding_locks():
            await checkpoint()
            await asyncio.to_thread(thread_checkpoint)
            assert paused == ["loop", "thread"]
            other = asyncio.create_task(interactive_write(), context=contextvars.Context())
            await writing.wait()
            await checkpoint()
            await asyncio.to_thread(thread_checkpoint)
            assert paused == ["loop", "thread"]  # no wait for the write that waits on us
            written.set()
            await other
            await checkpoint()
        assert paused == ["loop", "thread", "loop"]

    await asyncio.create_task(long_work())
