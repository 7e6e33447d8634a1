"""The facade, without Streamlit: one loop thread, core's numbers, reasons for empty results.

Runs on the in-memory store. Expected values come from the domain directly
(tokenize, corpus_stats, explain_score), so the facade cannot drift from core.
"""

from __future__ import annotations

import asyncio
import gc
import threading
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from core.domain.bm25 import corpus_stats, explain_score, inverse_document_frequency
from core.domain.tokenize import tokenize
from core.service import SAMPLE_LABEL, LexplainService
from core.service import library as library_module
from core.settings import Settings, describe_store

DOCS = {
    "a.txt": "Aeroelastic models of heated aircraft. Aeroelastic flutter of wings.",
    "b.txt": "Heated wings when flying at high speed; the aircraft models.",
    "c.txt": "Dr Ada Lovelace wrote notes at the Royal Society about engines.",
    "d.txt": "Models, models and more models of the rare zeppelin.",
}


@pytest.fixture(scope="module")
def service() -> Iterator[LexplainService]:
    svc = LexplainService.from_settings(Settings(store="memory"))
    reports = svc.upload_files(
        [(name, text.encode()) for name, text in DOCS.items()], workspace="unit"
    )
    assert all(r.error is None for r in reports)
    yield svc
    svc.close()


def expected_scores(query: str) -> dict[str, float]:
    terms = tokenize(query)
    tokens = {name: tokenize(text) for name, text in DOCS.items()}
    stats = corpus_stats(tokens.values(), terms)
    return {
        name: explain_score(terms, Counter(t), len(t), stats).score for name, t in tokens.items()
    }


def test_search_ranks_exactly_as_core_scores(service: LexplainService) -> None:
    query = "aeroelastic models of heated aircraft"
    result = service.search(query, k=10, limit=1000, workspace="unit")
    want = {n: s for n, s in expected_scores(query).items() if s > 0}
    assert [p.chunk.source_id for p in result.passages] == sorted(want, key=lambda n: -want[n])
    for passage in result.passages:
        assert passage.score == want[passage.chunk.source_id]
        assert passage.explanation.score == passage.score
    assert result.terms == ["aeroelastic", "models", "heated", "aircraft"]
    assert result.stopwords_dropped == ["of"]
    assert result.n_docs == 4
    assert result.matching_passages == 3
    assert (result.candidates_returned, result.cut_by_limit) == (3, 0)
    assert result.empty_reason is None


def test_the_limit_cut_is_counted_and_only_handed_candidates_are_ranked(
    service: LexplainService,
) -> None:
    result = service.search("aeroelastic models zeppelin", k=10, limit=1, workspace="unit")
    assert result.matching_passages == 3
    assert (result.candidates_returned, result.cut_by_limit) == (1, 2)
    # The candidate order is matched-term count first: a.txt and d.txt both match two terms.
    assert len(result.passages) == 1
    assert result.passages[0].candidate_position == 1


@pytest.mark.parametrize(
    ("query", "limit", "reason"),
    [
        ("the of and", 1000, "no terms left after stopwords"),
        ("qqqzzz", 1000, "no passage contains any term"),
    ],
)
def test_an_empty_result_says_why(
    service: LexplainService, query: str, limit: int, reason: str
) -> None:
    result = service.search(query, k=10, limit=limit, workspace="unit")
    assert result.passages == []
    assert result.empty_reason == reason


def test_a_query_with_no_terms_still_reports_the_whole_corpus(service: LexplainService) -> None:
    result = service.search("the of and", k=10, limit=1000, workspace="unit")
    summary = service.corpus(workspace="unit").summary
    assert (result.n_docs, result.avg_doc_length) == (summary.passages, summary.avg_doc_length)
    assert result.n_docs == 4


def test_the_sample_is_named_by_the_passages_it_loads(service: LexplainService) -> None:
    report = service.load_sample(workspace="sample-label")
    assert f"{report.passages_written:,} " in SAMPLE_LABEL


def test_the_bundled_example_has_names_for_the_entities_screen(service: LexplainService) -> None:
    service.load_example_with_names(workspace="names")
    kinds = {e.entity.kind for e in service.list_entities(workspace="names")}
    assert {"person", "organisation", "place"} <= kinds


def test_explain_gives_the_same_numbers_as_the_ranking(service: LexplainService) -> None:
    result = service.search("heated wings", k=10, limit=1000, workspace="unit")
    for passage in result.passages:
        again = service.explain("heated wings", passage.chunk.id, workspace="unit")
        assert again == passage.explanation
    other = next(
        p.chunk for p in service.search("engines", k=10, limit=1000, workspace="unit").passages
    )
    zero = service.explain("heated wings", other.id, workspace="unit")
    assert zero.score == 0.0 and all(t.tf == 0 for t in zero.terms)


def test_workspaces_are_isolated_and_listed(service: LexplainService) -> None:
    assert service.search("models", workspace="elsewhere").empty_reason == (
        "no passage contains any term"
    )
    service.create_workspace("  elsewhere ")
    assert "elsewhere" in service.list_workspaces()
    assert "unit" in service.list_workspaces()


def test_entities_come_with_names_and_mention_offsets(service: LexplainService) -> None:
    names = {e.entity.name: e for e in service.list_entities(workspace="unit")}
    assert "Ada Lovelace" in names
    (passage,) = service.entity_passages(names["Ada Lovelace"].entity.entity_id, workspace="unit")
    (mention,) = passage.mentions
    assert passage.chunk.text[mention.start : mention.end] == "Ada Lovelace"
    assert "Ada Lovelace" in [e.name for e in passage.entities]


def test_term_lookup_gives_df_idf_and_tf(service: LexplainService) -> None:
    (info,) = service.terms_with_prefix("Aeroel", workspace="unit")
    tokens = [tokenize(t) for t in DOCS.values()]
    stats = corpus_stats(tokens)
    assert (info.term, info.df) == ("aeroelastic", 1)
    assert info.idf == inverse_document_frequency("aeroelastic", stats)
    rows = service.term_passages("models", workspace="unit")
    assert [(r.chunk.source_id, r.tf) for r in rows] == [("d.txt", 3), ("a.txt", 1), ("b.txt", 1)]


def test_corpus_view_counts_and_lengths(service: LexplainService) -> None:
    view = service.corpus(workspace="unit")
    lengths = sorted(len(tokenize(t)) for t in DOCS.values())
    assert view.doc_lengths == lengths
    assert view.summary.passages == 4 and view.summary.sources == 4
    assert view.summary.avg_doc_length == sum(lengths) / 4


def test_deleting_a_source_removes_it_from_search(service: LexplainService) -> None:
    service.upload_files([("gone.txt", b"zeppelin zeppelin")], workspace="deleting")
    assert service.delete_source("gone.txt", workspace="deleting") == 1
    assert service.list_sources(workspace="deleting") == []


def test_a_bad_file_is_reported_in_plain_words_and_does_not_stop_the_batch(
    service: LexplainService,
) -> None:
    reports = service.upload_files(
        [("empty.txt", b""), ("fine.md", b"# Title\nbody text"), ("x.exe", b"MZ")],
        workspace="batch",
    )
    by_name = {r.file_name: r for r in reports}
    assert [r.file_name for r in reports] == ["empty.txt", "fine.md", "x.exe"]
    assert by_name["empty.txt"].error and "empty" in by_name["empty.txt"].error
    assert by_name["x.exe"].error and "unsupported" in by_name["x.exe"].error
    assert by_name["fine.md"].error is None and by_name["fine.md"].passages_written == 1


def test_reuploading_a_file_replaces_its_passages(service: LexplainService) -> None:
    text = ("First paragraph about wings. " * 30 + "\n\n") * 3
    (first,) = service.upload_files([("r.txt", text.encode())], workspace="replace")
    (again,) = service.upload_files([("r.txt", b"one short passage")], workspace="replace")
    assert again.passages_written == 1 and again.passages_removed == first.passages_written
    assert (again.passages_before, again.passages_unchanged) == (first.passages_written, 0)
    assert [s.passages for s in service.list_sources(workspace="replace")] == [1]


def test_reuploading_the_same_files_reports_every_passage_unchanged(
    service: LexplainService,
) -> None:
    """Nine files re-indexed showed "0 replaced" each: the count named leftovers removed."""
    files = [(f"f{i}.txt", (f"Passage {i} about wings. " * 80).encode()) for i in range(3)]
    first = service.upload_files(files, workspace="same")
    again = service.upload_files(files, workspace="same")
    for before, after in zip(first, again, strict=True):
        assert before.passages_before == 0 and before.passages_unchanged == 0
        assert after.passages_before == after.passages_written == before.passages_written
        assert after.passages_unchanged == after.passages_written
        assert after.passages_removed == 0


def test_progress_is_reported_in_the_calling_thread(service: LexplainService) -> None:
    seen: list[tuple[int, int, str]] = []
    threads: set[int] = set()

    def progress(done: int, total: int, label: str) -> None:
        seen.append((done, total, label))
        threads.add(threading.get_ident())

    service.upload_files(
        [("p1.txt", b"alpha"), ("p2.txt", b"beta")], workspace="progress", on_progress=progress
    )
    assert seen[-1][:2] == (2, 2)
    assert threads == {threading.get_ident()}


def test_full_collections_are_rare_while_uploads_run_and_as_before_once_the_last_ends(
    service: LexplainService, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A full collection walks an upload's documents in flight (~45 ms, 47 times for 300k tiny
    # records, collecting nothing); two uploads at once restore the thresholds once, after both.
    before = gc.get_threshold()
    original = (701, 11, 12)  # this test's own, so that no earlier upload decides them
    gc.set_threshold(*original)
    seen: list[tuple[int, int, int]] = []
    index_files = library_module.index_files
    both = threading.Barrier(2)

    async def watched(*args: object, **kwargs: object) -> object:
        first = not seen
        seen.append(gc.get_threshold())
        await asyncio.sleep(0.5 if first else 0)  # the other upload starts and ends meanwhile
        seen.append(gc.get_threshold())
        return await index_files(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(library_module, "index_files", watched)

    def upload(name: str, data: bytes) -> str | None:
        both.wait()
        (report,) = service.upload_files([(name, data)], workspace="collections")
        return report.error

    try:
        with ThreadPoolExecutor(2) as pool:
            files = ["good.txt", "bad.pdf"], [b"alpha beta", b"not a pdf"]
            errors = list(pool.map(upload, *files))
        after = gc.get_threshold()
    finally:
        gc.set_threshold(*before)
    assert after == original
    assert errors[0] is None and errors[1]  # the bad file refused, the thresholds still restored
    full = library_module.UPLOAD_FULL_COLLECTION_EVERY
    assert len(seen) == 4 and all(t == (original[0], original[1], full) for t in seen), seen


def test_an_upload_writes_its_documents_in_groups_of_the_upload_batch(
    service: LexplainService, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each in-memory write rebuilds the image (O(stored)): a million tiny records in the
    # indexer's 5,000s were 200 rebuilds, in the upload's 20,000s 50.
    groups: list[int] = []
    store = type(service._store)
    replace_sources = store.replace_sources

    async def counted(
        self: object, tenant_id: object, sources: list[object], *rest: object
    ) -> object:
        groups.append(len(sources))
        return await replace_sources(self, tenant_id, sources, *rest)  # type: ignore[arg-type]

    monkeypatch.setattr(store, "replace_sources", counted)
    records = b"".join(b'{"_id": "r%d", "text": "word%d"}\n' % (n, n) for n in range(6_000))
    (report,) = service.upload_files([("many.jsonl", records)], workspace="groups")
    assert report.error is None and report.documents == 6_000
    assert library_module.UPLOAD_BATCH_PASSAGES > 6_000 > 5_000
    assert groups == [6_000]


def test_a_source_id_repeated_in_one_upload_is_refused_and_reported_stored_once(
    service: LexplainService,
) -> None:
    # The report lists a file's sources as the indexer stored them, with no dict to dedupe.
    files = [("same.txt", b"first text"), ("same.txt", b"second text")]
    (report,) = service.upload_files(files, workspace="repeated")
    assert report.source_ids == ["same.txt"] and report.documents == 1
    assert any("same source id as same.txt" in note for note in report.notes), report.notes


def test_calls_from_many_threads_share_one_store_loop(service: LexplainService) -> None:
    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(
            pool.map(
                lambda _: service.search("models", workspace="unit").matching_passages, range(32)
            )
        )
    assert set(results) == {3}


def test_the_sample_collection_loads_whole_documents(service: LexplainService) -> None:
    report = service.load_sample(workspace="sample")
    assert report.error is None
    assert report.passages_written == report.documents == 1398  # 2 empty records skipped
    top = service.search("aeroelastic models of heated aircraft", k=1, workspace="sample")
    assert top.passages[0].chunk.source_id == "184"
    assert top.passages[0].chunk.start_char == 0


def test_export_carries_every_explanation(service: LexplainService) -> None:
    result = service.search("aeroelastic models heated", workspace="unit")
    lines = result.to_csv().strip().splitlines()
    assert len(lines) == 1 + len(result.passages) * 3
    assert lines[0].startswith("rank,score,source_id")
    assert type(result).model_validate_json(result.to_json()) == result


def test_the_store_label_never_shows_a_password() -> None:
    label = describe_store(Settings(database_url="postgresql://lex:s3cret@db.example:5433/x"))
    assert label == "PostgreSQL x@db.example:5433"
    assert "s3cret" not in label and "lex:" not in label
    assert describe_store(Settings(store="memory")) == "in-memory (lost on restart)"


def test_settings_read_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LEXPLAIN_STORE", raising=False)
    monkeypatch.setenv("LEXPLAIN_DATABASE_URL", "postgresql://u:pw@h/db")
    monkeypatch.setenv("LEXPLAIN_CHUNK_SIZE", "800")
    settings = Settings()
    assert settings.database_url is not None
    assert "pw" not in repr(settings)
    assert settings.chunk_size == 800


def test_a_closed_service_refuses_calls() -> None:
    svc = LexplainService.from_settings(Settings(store="memory"))
    svc.close()
    svc.close()
    with pytest.raises(RuntimeError):
        svc.list_workspaces()


def test_a_repeated_search_is_answered_again_only_until_the_workspace_changes() -> None:
    service = LexplainService.from_settings(Settings(store="memory"))
    try:
        service.upload_files([("a.txt", DOCS["a.txt"].encode())], workspace="cache")
        first = service.search("zeppelin models", workspace="cache")
        assert service.search("zeppelin models", workspace="cache") is first  # a rerun
        assert service.search("zeppelin models", k=3, workspace="cache") is not first
        service.upload_files([("d.txt", DOCS["d.txt"].encode())], workspace="cache")
        after = service.search("zeppelin models", workspace="cache")
        assert [p.chunk.source_id for p in after.passages] == ["d.txt", "a.txt"]
        service.delete_source("d.txt", workspace="cache")
        assert [
            p.chunk.source_id for p in service.search("zeppelin models", workspace="cache").passages
        ] == ["a.txt"]
    finally:
        service.close()
