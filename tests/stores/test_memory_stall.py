"""The in-memory store's writes give way in small pieces (issue 20 item 5: a write never stalls
a reader).

A light search waits for the piece of long work running when it arrives, so these tests count
the work done between two checkpoints, never its time: postings turned into arrays, pieces
joined, outcomes counted; and where the image is built. The p99 figures are in
bench/bench_stall.py (``--steps``, ``--holds``) and bench/README.md ("No stall").
"""

from __future__ import annotations

import asyncio
import gc
import itertools
import threading
from collections.abc import Callable, Iterator
from typing import Any
from uuid import UUID, uuid4

import numpy as np
import pytest

from core.analysis import truncation
from core.analysis.truncation import top_document_steps, top_documents
from core.checkpoint import install
from core.domain import postings as postings_module
from core.domain.chunks import SourceDocument, StoredChunk
from core.domain.steps import finish
from core.domain.tokenize import DEFAULT_PROFILE, Profile
from core.ingest import indexing
from core.ingest.report import Tally
from core.service.facade import LexplainService
from core.settings import Settings
from core.stores.memory import InMemoryChunkStore
from core.stores.memory import index as memory_image
from core.stores.memory import store as memory
from core.stores.memory import writer as memory_writer
from core.stores.memory.index import Image
from core.stores.memory.writer import STEP_POSTINGS, TEXT_STEP_CHARS
from core.stores.port import Workspace
from tests.stores.compliance import make_chunk

#: Distinct words per passage: a group of 200 passages is ~5 pieces of ``STEP_POSTINGS``.
WORDS = 100


def _text(i: int) -> str:
    return " ".join(f"w{(i * 7 + j) % 997}x" for j in range(WORDS))


def _sources(
    tenant: UUID, n: int, prefix: str = "s", text: Callable[[int], str] = _text
) -> list[tuple[str, list[StoredChunk]]]:
    out = []
    for i in range(n):
        words = text(i)
        chunk = StoredChunk(tenant_id=tenant, source_id=f"{prefix}{i}", chunk_index=0,
                            text=words, start_char=0, end_char=len(words))  # fmt: skip
        out.append((f"{prefix}{i}", [chunk]))
    return out


@pytest.fixture
def events(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[str, int]]]:
    """("build", postings) per piece turned into arrays from term counts, ("build", -chars)
    per piece tokenised from texts; ``_paused`` adds ("pause", 0) per checkpoint."""
    seen: list[tuple[str, int]] = []
    piece = memory_writer._piece
    text_piece = memory_writer._text_piece

    def counted_piece(passages: Any, vocabulary: Any) -> Any:
        seen.append(("build", sum(map(len, passages))))
        return piece(passages, vocabulary)

    def counted_text_piece(texts: Any, profile: Any, vocabulary: Any) -> Any:
        seen.append(("build", -sum(map(len, texts))))
        return text_piece(texts, profile, vocabulary)

    monkeypatch.setattr(memory_writer, "_piece", counted_piece)
    monkeypatch.setattr(memory_writer, "_text_piece", counted_text_piece)
    yield seen


def _paused(seen: list[tuple[str, int]]) -> Callable[[], Any]:
    async def pause() -> None:
        seen.append(("pause", 0))

    return pause


def _check_pieces(seen: list[tuple[str, int]]) -> None:
    builds = [n for kind, n in seen if kind == "build"]
    assert len(builds) >= 4, f"{builds}: the group was built in too few pieces to tell"
    postings, chars = [n for n in builds if n >= 0], [-n for n in builds if n < 0]
    assert max(postings, default=0) <= STEP_POSTINGS + WORDS, f"a piece of {max(builds)} postings"
    assert max(chars, default=0) <= TEXT_STEP_CHARS, f"{max(chars)} characters in one piece"
    kinds = [kind for kind, _ in seen]
    for a, b in itertools.pairwise(kinds):
        assert (a, b) != ("build", "build"), "two pieces built with no checkpoint between"
    last = len(kinds) - 1 - kinds[::-1].index("build")
    # Joining the pieces gives way per piece too (one step per piece after the last build).
    assert kinds[last:].count("pause") >= len(builds) - 1, "the pieces were joined in one go"


async def test_a_write_group_is_indexed_a_piece_of_postings_at_a_time(
    events: list[tuple[str, int]],
) -> None:
    store = InMemoryChunkStore()
    tenant = uuid4()
    await store.upsert_workspace(Workspace(tenant_id=tenant, name="notes"))

    async def write() -> list[int]:
        install(_paused(events))
        return await store.replace_sources(tenant, _sources(tenant, 200))

    assert await asyncio.create_task(write()) == [0] * 200
    _check_pieces(events)
    found = await store.lexical_candidates(["w0x"], tenant, 1000)
    assert found.stats.n_docs == 200 and len(found) == sum("w0x" in _text(i) for i in range(200))


async def test_a_write_group_where_nobody_waits_is_tokenised_in_one_batch(
    events: list[tuple[str, int]],
) -> None:
    """``load`` installs no pause: cutting its groups into 8 KB batches only cost it time
    (each batch's tokenising setup: six 42 MB files 107 s CPU against 33 in one batch)."""
    store = InMemoryChunkStore()
    tenant = uuid4()
    await store.upsert_workspace(Workspace(tenant_id=tenant, name="notes"))
    assert await store.replace_sources(tenant, _sources(tenant, 200)) == [0] * 200
    chars = sum(len(_text(i)) for i in range(200))
    assert chars > 4 * TEXT_STEP_CHARS
    assert events == [("build", -chars)]


async def test_a_reindex_is_indexed_a_piece_of_postings_at_a_time(
    events: list[tuple[str, int]],
) -> None:
    store = InMemoryChunkStore()
    tenant = uuid4()
    await store.upsert_workspace(Workspace(tenant_id=tenant, name="notes"))
    await store.replace_sources(tenant, _sources(tenant, 200))
    events.clear()

    async def reindex() -> int:
        install(_paused(events))
        return await store.reindex(tenant, Profile.ENGLISH)

    assert await asyncio.create_task(reindex()) == 200
    _check_pieces(events)


async def test_a_load_counts_its_report_a_few_documents_between_checkpoints(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A group's outcomes are counted into the report with a checkpoint every ``COUNT_STEP``
    (Cranfield's 1,398 in one go held the loop 11 ms), and still in input order."""
    seen: list[str] = []
    stored = Tally.stored

    def counted(self: Tally, *args: Any, **kwargs: Any) -> Any:
        seen.append("stored")
        return stored(self, *args, **kwargs)

    monkeypatch.setattr(Tally, "stored", counted)
    documents = [SourceDocument(source_id=f"d{i:03}", text=f"note {i}") for i in range(300)]

    async def load() -> indexing.IndexReport:
        install(lambda: _mark(seen))
        return await indexing.index_documents(
            documents, InMemoryChunkStore(), uuid4(), extractor=None
        )

    report = await asyncio.create_task(load())
    assert report.documents_indexed == 300
    run = longest = 0
    for kind in seen:
        run = run + 1 if kind == "stored" else 0
        longest = max(longest, run)
    assert seen.count("stored") == 300
    assert longest <= indexing.COUNT_STEP, f"{longest} outcomes counted with no checkpoint"
    assert [row.source_id for row in report.rows] == [d.source_id for d in documents]


async def _mark(seen: list[str]) -> None:
    seen.append("pause")


async def test_a_write_into_a_workspace_with_passages_builds_its_image_off_the_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """From ``_THREAD_ROWS`` rows the next image (the arrays copied, segments merged) is built
    in a thread: on the loop, ten Cranfield-sized segments merging held it ~100 ms."""
    store = InMemoryChunkStore()
    tenant = uuid4()
    await store.upsert_workspace(Workspace(tenant_id=tenant, name="notes"))
    await store.replace_sources(tenant, _sources(tenant, 2_500, text=lambda i: f"note {i}"))
    threads: list[int] = []
    written = Image.written

    def where(self: Image, *args: Any, **kwargs: Any) -> Image:
        threads.append(threading.get_ident())
        return written(self, *args, **kwargs)

    monkeypatch.setattr(Image, "written", where)
    await store.replace_sources(tenant, _sources(tenant, 3, prefix="more"))
    assert threads and threading.get_ident() not in threads, "the image was built on the loop"
    assert (await store.corpus_summary(tenant)).passages == 2_503


def test_a_service_leaves_what_is_alive_at_its_start_out_of_later_collections() -> None:
    """A full collection walks every object the process tracks (most of them the modules and
    the framework): with Cranfield loaded one held a session's step 130-160 ms."""
    gc.unfreeze()
    alive = [object()]  # any tracked object alive before the service starts
    assert any(o is alive for o in gc.get_objects())
    service = LexplainService.from_settings(Settings(store="memory"))
    try:
        assert not any(o is alive for o in gc.get_objects()), "the start was not frozen"
    finally:
        service.close()
        gc.unfreeze()


def test_a_heavy_querys_tf_columns_are_read_a_few_thousand_postings_at_a_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every posting scattered at once held the loop 8-9 ms for a 1,000-term query over
    Cranfield; in steps of ``COLUMN_STEP_POSTINGS`` the columns come out the same."""
    rng = np.random.default_rng(3)
    tf = rng.integers(0, 3, size=(300, 40))  # rows x terms, 0 = absent
    postings = [
        (np.flatnonzero(tf[:, j]).astype(np.int32), tf[tf[:, j] > 0, j].astype(np.int32))
        for j in range(tf.shape[1])
    ]
    whole = finish(postings_module.tf_column_steps(postings, np.arange(300), 300))
    monkeypatch.setattr(postings_module, "COLUMN_STEP_POSTINGS", 500)
    scatter = _steps_of(postings_module.tf_column_steps(postings, np.arange(300), 300))
    monkeypatch.setattr(postings_module, "COLUMN_STEP_POSTINGS", 64)
    monkeypatch.setattr(postings_module, "SEARCH_COST", 1)  # 20 rows: each term searched
    monkeypatch.setattr(postings_module, "CALL_COST", 0)
    few = np.arange(0, 300, 15)
    search = _steps_of(postings_module.tf_column_steps(postings, few, 300))
    assert scatter[1].tolist() == whole.tolist() == tf.tolist()
    assert search[1].tolist() == tf[few].tolist()
    total = sum(len(rows) for rows, _ in postings)
    assert scatter[0] >= total // 500 - 1, f"{scatter[0]} steps scattering {total} postings"
    # 20 rows searched per term: a step every 4 terms (80 >= 64), 10 in all.
    assert search[0] >= 9, f"{search[0]} steps searching 40 terms"


def test_one_common_terms_tf_column_is_read_a_few_thousand_postings_at_a_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A term in half of a million passages was one 50-90 ms step (an unlimited read's
    columns at 1M); its posting is cut into pieces like any other postings."""
    rows = np.arange(0, 3_000, 2, dtype=np.int32)
    postings = [(rows, (rows % 5 + 1).astype(np.int32)), (rows[:10], rows[:10] + 1)]
    selected = np.arange(3_000)
    whole = finish(postings_module.tf_column_steps(postings, selected, 3_000))
    monkeypatch.setattr(postings_module, "COLUMN_STEP_POSTINGS", 100)
    taken, stepped = _steps_of(postings_module.tf_column_steps(postings, selected, 3_000))
    assert stepped.tolist() == whole.tolist()
    assert whole[::2, 0].tolist() == (rows % 5 + 1).tolist()
    assert taken >= len(rows) // 100 - 1, f"{taken} steps for one posting of {len(rows)}"


def _steps_of(steps: Iterator[None]) -> tuple[int, Any]:
    """How many steps ``steps`` took, and its result."""
    taken = 0
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return taken, done.value
        taken += 1


async def test_listing_a_big_workspaces_sources_gives_way_every_few_hundred() -> None:
    """An upload lists the workspace's sources first (to report what it left unchanged):
    12,600 summaries built in one piece held the loop 136 ms on the shared machine."""
    store = InMemoryChunkStore()
    tenant = uuid4()
    await store.upsert_workspace(Workspace(tenant_id=tenant, name="notes"))
    await store.replace_sources(tenant, _sources(tenant, 2_500, text=lambda i: f"note {i}"))
    seen: list[tuple[str, int]] = []

    async def listed() -> list[str]:
        install(_paused(seen))
        return [summary.source_id for summary in await store.list_sources(tenant)]

    assert await asyncio.create_task(listed()) == sorted(f"s{i}" for i in range(2_500))
    assert len(seen) >= 2_500 // memory_image.SUMMARY_STEP, f"{len(seen)} checkpoints"
    # One fields set for all: a set per summary was 2,500 more objects for the collector.
    summaries = await store.list_sources(tenant)
    assert len({id(summary.__pydantic_fields_set__) for summary in summaries}) == 1


async def test_an_uploads_source_counts_are_read_in_pieces_and_add_up_across_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The counts an upload reads first (``source_passage_counts``) compare ``COUNT_KEYS``
    passages' source ids a step; a source whose passages straddle two pieces counts once."""
    monkeypatch.setattr(memory_image, "COUNT_KEYS", 4)
    store = InMemoryChunkStore()
    tenant = uuid4()
    await store.upsert_workspace(Workspace(tenant_id=tenant, name="notes"))
    sizes = {"a": 3, "b": 6, "c": 1, "d": 2}  # b runs over pieces 1-3: a a a b | b b b b | b c d d
    for source, size in sizes.items():
        chunks = [make_chunk(tenant, source, f"{source} {i}", i) for i in range(size)]
        await store.replace_source(source, tenant, chunks)
    seen: list[tuple[str, int]] = []

    async def counted() -> dict[str, int]:
        install(_paused(seen))
        return await store.source_passage_counts(tenant)

    assert await asyncio.create_task(counted()) == sizes
    assert len(seen) >= 12 // 4, f"{len(seen)} checkpoints"


async def test_a_write_into_a_big_workspace_looks_its_sources_and_passages_up_in_pieces(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A write looks up the sources it replaces and the passages it writes among the image's
    string keys: 1,398 of each among 12,600 were ~8 ms in one piece on the loop. Per
    ``LOOKUP_STEP`` with a checkpoint between, the write is the same; the swap is a step of
    its own too (the caller's work after the write used to run on in the same step)."""
    store = InMemoryChunkStore()
    tenant = uuid4()
    await store.upsert_workspace(Workspace(tenant_id=tenant, name="notes"))
    await store.replace_sources(tenant, _sources(tenant, 2_500, text=lambda i: f"note {i}"))
    before = await store.generation(tenant)
    seen: list[tuple[str, int]] = []
    for name in ("rows_of_sources", "rows_of_ids"):
        lookup = getattr(Image, name)

        def counted(self: Image, keys: Any, lookup: Any = lookup) -> Any:
            seen.append(("look", len(keys)))
            return lookup(self, keys)

        monkeypatch.setattr(Image, name, counted)

    async def pause() -> None:
        seen.append(("pause", store._tenants[tenant].image.version))

    async def write() -> list[int]:
        install(pause)
        # 600 sources written again with new texts (their old passages leave), 600 new.
        again = _sources(tenant, 600, text=lambda i: f"again {i}")
        return await store.replace_sources(tenant, again + _sources(tenant, 600, prefix="new"))

    assert await asyncio.create_task(write()) == [1] * 600 + [0] * 600
    looks = [n for kind, n in seen if kind == "look"]
    assert sum(looks) == 2 * 1_200 and max(looks) <= memory.LOOKUP_STEP, looks
    kinds = [kind for kind, _ in seen]
    for a, b in itertools.pairwise(kinds):
        assert (a, b) != ("look", "look"), "two lookups with no checkpoint between"
    assert seen[-1] == ("pause", await store.generation(tenant)) != ("pause", before)
    assert (await store.corpus_summary(tenant)).passages == 3_100


async def test_an_evaluates_query_is_ranked_a_step_per_limit() -> None:
    """Evaluate scores a query once and ranks it per limit; in one piece that was its longest
    hold of the loop. In steps, the documents per limit are those ``top_documents`` gives."""
    store = InMemoryChunkStore()
    tenant = uuid4()
    await store.upsert_workspace(Workspace(tenant_id=tenant, name="notes"))
    await store.replace_sources(tenant, _sources(tenant, 50))
    terms = ["w0x", "w7x", "w14x"]
    full = await store.lexical_candidates(terms, tenant, 1000)
    limits = [5, 20, 1000]
    taken, documents = _steps_of(top_document_steps(terms, full, 3, limits))
    assert documents == top_documents(terms, full, 3, limits) and documents[2]
    assert taken >= len(limits), f"{taken} steps for {len(limits)} limits"


def test_a_truncations_sweep_is_measured_a_few_limits_per_step() -> None:
    """The overlap at each of the sweep's ~40 limits, all in one piece, was ~5 ms of a
    1,000-term Truncation; per ``OVERLAP_STEP`` limits the shares are the same."""
    rng = np.random.default_rng(5)
    scores = rng.random(500)
    ranking = truncation._Ranking(scores, np.arange(500, dtype=np.int64))
    limits = list(range(0, 500, 10))
    taken, overlaps = _steps_of(truncation._overlap_steps(ranking, 10, limits))
    top = set(np.argsort(-scores)[:10].tolist())
    assert overlaps == [
        len(top & set(np.argsort(-scores[:limit])[:10].tolist())) / 10 for limit in limits
    ]
    assert taken >= len(limits) // truncation.OVERLAP_STEP, f"{taken} steps, {len(limits)} limits"


def test_an_upload_counts_the_passages_before_it_without_sorting_the_sources(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The report's 'unchanged' needs each source's passages before the upload, not their
    order: the natural sort of 12,600 source ids held the GIL ~100-280 ms in the caller."""
    from core.analysis import presentation
    from core.service import library

    sorted_ids: list[str] = []
    natural = presentation.natural_key

    def counted(value: str) -> Any:
        sorted_ids.append(value)
        return natural(value)

    monkeypatch.setattr(library, "natural_key", counted)
    service = LexplainService.from_settings(Settings(store="memory"))
    try:
        service.create_workspace("notes")
        service.upload_files([("a.txt", b"Flutter of heated wings.")], workspace="notes")
        (report,) = service.upload_files(
            [("a.txt", b"Flutter of heated wings.")], workspace="notes"
        )
        assert report.passages_unchanged == 1
        assert sorted_ids == [], "the upload sorted the workspace's sources"
    finally:
        service.close()


def test_an_evaluate_gives_way_between_the_metrics_of_two_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A run's metrics over Cranfield's 225 queries are 5-13 ms of the loop; two runs' in
    one piece were an Evaluate's longest hold left."""
    from core.analysis.evaluation import evaluate_run_steps
    from core.service import analysis

    events: list[str] = []

    def counted(*args: Any, **kwargs: Any) -> Any:
        events.append("run")
        return (yield from evaluate_run_steps(*args, **kwargs))

    monkeypatch.setattr(analysis, "evaluate_run_steps", counted)
    service = LexplainService.from_settings(Settings(store="memory"))
    try:
        service.create_workspace("notes")
        service.upload_files([("a.txt", b"Flutter of heated wings.")], workspace="notes")
        give_way = service._give_way

        async def pause() -> None:
            events.append("pause")
            await give_way()

        service._give_way = pause  # type: ignore[method-assign]
        queries = b'{"_id": "q1", "text": "flutter"}\n{"_id": "q2", "text": "wings"}\n'
        qrels = b"query-id\tcorpus-id\tscore\nq1\ta.txt\t1\nq2\ta.txt\t1\n"
        service.evaluate(queries, qrels, 10, (10, 1000), workspace="notes")
        assert events.count("run") == 2
        runs = "".join("r" if event == "run" else "p" for event in events)
        assert "rr" not in runs, f"two runs' metrics with no checkpoint between: {runs}"
    finally:
        service.close()


def test_a_runs_metrics_are_computed_a_few_dozen_queries_per_step() -> None:
    """One run's metrics over Cranfield's 225 queries were 5-17 ms in one piece."""
    from core.analysis import evaluation

    queries = {f"q{i}": f"query {i}" for i in range(200)}
    qrels = {f"q{i}": {f"d{i}": 1, "d0": 2} for i in range(200)}
    ranked = {f"q{i}": [f"d{j}" for j in range(i % 7, i % 7 + 10)] for i in range(200)}
    steps = evaluation.evaluate_run_steps(queries, qrels, ranked, 10, 100)
    taken, run = _steps_of(steps)
    assert run == evaluation.evaluate_run(queries, qrels, ranked, 10, 100)
    assert len(run.rows) == 200
    assert taken >= 200 // evaluation.METRIC_STEP - 1, f"{taken} steps for 200 queries"


def test_a_merge_gives_segments_a_shared_vocabulary_a_piece_of_terms_per_c_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A merge runs in a thread beside the loop, and a C call holds the GIL whatever the switch
    interval: one ``fromiter`` over a Cranfield segment's ~9k terms kept a search off it ~1-5
    ms, nine per merge. Terms get their shared slots ``SLOT_PIECE`` at a time instead, and
    every term still maps to the one slot of its word."""
    monkeypatch.setattr(memory_image, "SLOT_PIECE", 8)
    lengths: list[int] = []
    fromiter = np.fromiter

    def counted(iterable: Any, dtype: Any, count: int = -1) -> Any:
        lengths.append(count)
        return fromiter(iterable, dtype, count)

    monkeypatch.setattr(memory_image.np, "fromiter", counted)
    writers = [memory_writer.SegmentWriter() for _ in range(3)]
    for k, writer in enumerate(writers):
        texts = [f"w{i} shared{k % 2} common" for i in range(k, 30 + 7 * k)]
        writer.add_texts(texts, DEFAULT_PROFILE)
    segments = [writer.finish()[0] for writer in writers]
    lengths.clear()  # numpy's own fromiter is patched: count the merge's calls only
    slots, maps = memory_image.shared_slots(segments)
    assert lengths and max(lengths) <= 8, f"{max(lengths)} terms in one call"
    for segment, mapped in zip(segments, maps, strict=True):
        assert [slots[term] for term in segment.terms] == mapped.tolist()
    assert sorted(slots.values()) == list(range(len(slots)))
