"""``python -m core load``: folders, BEIR folders, dry runs, exit status, and both stores.

Without a URL the command writes into the embedded PostgreSQL of ``LEXPLAIN_DATA_DIR``, which
every test here points at its own temporary folder, never the project's ``.lexplain``.

The PostgreSQL tests load into a fresh schema of the shared server (``pg_store`` from
tests/conftest.py creates it; the command line reaches it through ``search_path`` in the URL)
and compare every stored passage with the same load into the in-memory store.
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import subprocess
import sys
from pathlib import Path
from uuid import UUID

import pytest

from core.analysis.diagnosis import CAUSE_NOTES
from core.analysis.expansion import ExpansionSpec
from core.analysis.sentences import dropped_characters_line
from core.domain.chunks import ChunkingOptions, workspace_tenant_id
from core.domain.entities import RuleBasedExtractor, load_entity_list
from core.domain.ranking import rank_chunks
from core.domain.tokenize import tokenize
from core.service import LexplainService, RunSpec
from core.settings import Settings
from core.stores.memory import InMemoryChunkStore
from core.stores.port import ChunkStore
from core.stores.postgres import embedded
from core.stores.select import open_store
from core.terminal import main
from core.terminal.load import load_into
from tests.fixtures.files import docx_bytes, image_only_pdf_bytes, pdf_bytes
from tests.unit.terminal.sample import QUERY, SAMPLE, run, table_rows

ROOT = Path(__file__).resolve().parents[3]
CRANFIELD = ROOT / "data" / "cranfield"


def mixed_folder(root: Path) -> Path:
    folder = root / "docs"
    (folder / "sub").mkdir(parents=True)
    (folder / "memo.txt").write_text("Dr Jane Whitfield visited NASA.\n\nThe tests went well.")
    (folder / "readme.md").write_text("# Setup\n\nInstall it from GitHub.")
    (folder / "page.html").write_bytes(
        b"<p>Siemens AG opened a plant in Berlin.</p><script>x</script>"
    )
    (folder / "sub" / "paper.pdf").write_bytes(pdf_bytes(["Flutter at NACA.", "Page two."]))
    (folder / "sub" / "letter.docx").write_bytes(docx_bytes(["Dear Mr Patel,", "Thanks."]))
    (folder / "ignored.png").write_bytes(b"\x89PNG not read")
    (folder / ".hidden").mkdir()
    (folder / ".hidden" / "secret.txt").write_text("never loaded")
    return folder


def test_a_dry_run_says_so_keeps_nothing_and_exits_zero(
    tmp_path: Path, no_default_database: Path
) -> None:
    status, out = run("load", str(mixed_folder(tmp_path)), "--workspace", "w", "--dry-run")
    assert status == 0
    assert "dry run:" in out and "nothing is kept" in out
    for name in ("memo.txt", "readme.md", "page.html", "sub/paper.pdf", "sub/letter.docx"):
        assert name in out
    # What is not read is named with its reason, never passed over in silence (issue 11, 15).
    assert "ignored.png: not read: unsupported file type" in out
    assert "secret.txt: hidden file or folder" in out
    assert "ok: 5 documents read and checked (dry run, nothing kept)" in out
    assert "stored" not in out.splitlines()[-1]
    assert not no_default_database.exists(), "a dry run started the embedded server"


def test_without_a_url_it_loads_into_the_embedded_store_the_app_opens(
    tmp_path: Path, no_default_database: Path
) -> None:
    status, out = run("load", str(mixed_folder(tmp_path)), "--workspace", "notes")
    assert status == 0, out
    assert "ok: 5 documents stored in workspace 'notes' (PostgreSQL (embedded," in out
    assert embedded.running(no_default_database) is None, "the command left its server running"

    async def what_the_app_sees() -> tuple[list[str], int]:
        store = await open_store(Settings())  # what the app opens from the same environment
        try:
            names = [w.name for w in await store.list_workspaces()]
            return names, (await store.corpus_summary(workspace_tenant_id("notes"))).passages
        finally:
            await store.close()

    names, passages = asyncio.run(what_the_app_sees())
    assert "notes" in names and passages >= 5


def test_a_data_folder_of_a_newer_postgresql_stops_the_load_in_plain_words(
    tmp_path: Path, no_default_database: Path
) -> None:
    pgdata = no_default_database / "pgdata"
    pgdata.mkdir(parents=True)
    (pgdata / "PG_VERSION").write_text("19\n")
    status, out = run("load", str(mixed_folder(tmp_path)), "--workspace", "w")
    assert status == 2
    assert "written by PostgreSQL 19, newer than the embedded PostgreSQL 18" in out
    assert sorted(p.name for p in pgdata.iterdir()) == ["PG_VERSION"]


def test_db_runs_the_embedded_pg_dump_against_the_embedded_server(
    tmp_path: Path, no_default_database: Path
) -> None:
    (tmp_path / "a.txt").write_text("Flutter of panels.")
    assert run("load", str(tmp_path / "a.txt"), "--workspace", "w")[0] == 0
    dump = tmp_path / "lexplain.sql"
    status, out = run("db", "pg_dump", "-f", str(dump))
    assert status == 0, out
    assert "pg_dump -h " in out
    assert "CREATE TABLE" in dump.read_text() and "Flutter of panels." in dump.read_text()
    assert embedded.running(no_default_database) is None
    status, out = run("db", "status")
    assert status == 0 and "not running" in out


def test_db_parity_says_identical_then_names_a_length_planted_behind_the_stores_back(
    tmp_path: Path, no_default_database: Path
) -> None:
    (tmp_path / "a.txt").write_text("Flutter of wing panels at Mach two.")
    (tmp_path / "b.txt").write_text("Wing flutter, and the flutter of a tail.")
    assert run("load", str(tmp_path), "--workspace", "w")[0] == 0
    status, out = run("db", "parity", "--workspace", "w", "--queries", "20")
    assert status == 0, out
    assert "20/20 identical (20 queries from the workspace's terms" in out
    planted = "UPDATE passages SET doc_length = doc_length + 1"
    assert run("db", "psql", "-c", planted)[0] == 0
    status, out = run("db", "parity", "--workspace", "w", "--queries", "20")
    assert status == 1, out
    assert "differs at query 1/20" in out and "in memory but" in out
    assert "memory dl" in out and "store dl" in out
    assert run("db", "parity", "--workspace", "nowhere")[0] == 2


async def test_a_file_in_a_folder_keeps_its_path_relative_to_the_folder_as_source_id(
    tmp_path: Path,
) -> None:
    store = InMemoryChunkStore()
    report = await load_into(
        store, [mixed_folder(tmp_path)], "w", chunking=ChunkingOptions(), extractor=None
    )
    assert report.ok
    sources = [s.source_id for s in await store.list_sources(workspace_tenant_id("w"))]
    assert sources == ["memo.txt", "page.html", "readme.md", "sub/letter.docx", "sub/paper.pdf"]
    assert [w.name for w in await store.list_workspaces()] == ["w"]


async def test_a_load_leaves_the_garbage_collector_as_it_found_it(tmp_path: Path) -> None:
    thresholds, frozen = gc.get_threshold(), gc.get_freeze_count()
    await load_into(
        InMemoryChunkStore(), [mixed_folder(tmp_path)], "w", chunking=ChunkingOptions(),
        extractor=None,
    )  # fmt: skip
    assert gc.get_threshold() == thresholds
    assert gc.get_freeze_count() == frozen


def test_a_rejected_file_makes_the_exit_status_one_and_its_reason_is_printed(
    tmp_path: Path,
) -> None:
    folder = mixed_folder(tmp_path)
    (folder / "scan.pdf").write_bytes(image_only_pdf_bytes())
    (folder / "empty.txt").write_bytes(b"")
    status, out = run("load", str(folder), "--workspace", "w")
    assert status == 1
    assert "2 rejected:" in out
    assert "scan.pdf: scanned PDF without a text layer — nothing stored" in out
    assert "empty.txt: the file is empty — nothing stored" in out
    assert "memo.txt" in out  # the good files are still in the summary


def test_a_missing_path_is_a_rejection_not_a_crash(tmp_path: Path) -> None:
    status, out = run("load", str(tmp_path / "nope"), "--workspace", "w", "--dry-run")
    assert status == 1 and "no such file or folder" in out


def test_a_bad_entity_list_stops_the_command_before_anything_is_read(tmp_path: Path) -> None:
    bad = tmp_path / "list.csv"
    bad.write_text("Mars,planet,\n")
    status, out = run("load", str(tmp_path), "--workspace", "w", "--entities", str(bad))
    assert status == 2 and "unknown kind 'planet'" in out


def test_an_unreachable_database_is_reported_with_exit_status_two(tmp_path: Path) -> None:
    url = "postgresql://nobody@127.0.0.1:1/none"
    status, out = run("load", str(tmp_path), "--workspace", "w", "--database-url", url)
    assert status == 2 and "cannot open the database" in out


def test_the_workspace_is_required_and_the_usage_says_so() -> None:
    with pytest.raises(SystemExit) as exited:
        main(["load", "x"])
    assert exited.value.code == 2


def test_python_dash_m_core_runs_the_command_line(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("Flutter of panels.")
    env = {k: v for k, v in os.environ.items() if k != "LEXPLAIN_DATABASE_URL"}
    done = subprocess.run(
        [sys.executable, "-m", "core", "load", str(tmp_path / "a.txt"), "--workspace", "w",
         "--dry-run"],
        capture_output=True, text=True, cwd=ROOT, env=env, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "ok: 1 documents read and checked (dry run, nothing kept)" in done.stdout


async def test_a_beir_folder_loads_each_record_under_its_corpus_id(tmp_path: Path) -> None:
    store = InMemoryChunkStore()
    report = await load_into(
        store, [CRANFIELD], "cran", chunking=ChunkingOptions(whole_documents=True), extractor=None
    )
    tenant = workspace_tenant_id("cran")
    assert report.ok and report.documents_indexed == 1398  # docs 471 and 995 are empty
    (doc,) = await store.get_by_source("184", tenant)
    assert doc.text.startswith("scale models for thermo-aeroelastic research .\nscale models")
    assert doc.metadata["title"] == "scale models for thermo-aeroelastic research ."
    summary = await store.corpus_summary(tenant)
    assert summary.sources == summary.passages == 1398


def test_a_beir_folder_names_every_other_file_it_holds_and_why_it_was_not_read(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "collection"
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text('{"_id": "d1", "title": "", "text": "lift and drag"}\n')
    (folder / "queries.jsonl").write_text('{"_id": "q1", "text": "lift"}\n')
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    (folder / "notes.txt").write_text("a note that is not part of the collection")
    (folder / "scan.pdf").write_bytes(pdf_bytes(["Flutter at NACA."]))
    (folder / "data.csv").write_text("a,b\n")
    status, out = run("load", str(folder), "--workspace", "w", "--dry-run")
    assert status == 0
    assert "ok: 1 documents read and checked" in out
    lines = [line for line in out.splitlines() if line.startswith("skipped: ")]
    named = {line.split(": ")[1].rsplit("/", 1)[-1] for line in lines}
    assert named == {"queries.jsonl", "test.tsv", "notes.txt", "scan.pdf", "data.csv"}
    assert any("queries.jsonl: BEIR queries, not documents" in line for line in lines)
    assert any("notes.txt: not read: in a BEIR folder only corpus.jsonl" in line for line in lines)


# --- both stores ---------------------------------------------------------------------------


def schema_url(database_url: str, schema: str) -> str:
    return f"{database_url}{'&' if '?' in database_url else '?'}search_path={schema}"


async def snapshot(store: ChunkStore, tenant: UUID) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for source in await store.list_sources(tenant):
        rows.extend(
            c.model_dump(mode="json") for c in await store.get_by_source(source.source_id, tenant)
        )
    return rows


@pytest.mark.postgres
async def test_loading_cranfield_fills_postgres_and_memory_with_identical_passages(
    pg_store: ChunkStore, database_url: str, pg_schema: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LEXPLAIN_DATABASE_URL", schema_url(database_url, pg_schema))
    status, out = await _run_in_thread(
        "load", str(CRANFIELD), "--workspace", "cranfield", "--whole-documents"
    )
    assert status == 0, out
    memory = InMemoryChunkStore()
    await load_into(
        memory, [CRANFIELD], "cranfield", chunking=ChunkingOptions(whole_documents=True),
        extractor=RuleBasedExtractor(),
    )  # fmt: skip
    tenant = workspace_tenant_id("cranfield")
    in_postgres = await snapshot(pg_store, tenant)
    assert len(in_postgres) == 1398
    assert in_postgres == await snapshot(memory, tenant)
    in_pg, in_memory = await pg_store.corpus_summary(tenant), await memory.corpus_summary(tenant)
    assert in_pg.model_dump() == in_memory.model_dump()
    assert [w.name for w in await pg_store.list_workspaces()] == ["cranfield"]
    terms = tokenize("similarity laws for aeroelastic models of heated high speed aircraft")
    ranked = [
        [
            (r.chunk.id, r.score)
            for r in rank_chunks(terms, await s.lexical_candidates(terms, tenant, 1000), 10)
        ]
        for s in (pg_store, memory)
    ]
    assert ranked[0] == ranked[1] and len(ranked[0]) == 10


@pytest.mark.postgres
async def test_mixed_files_with_entities_are_identical_in_both_stores(
    pg_store: ChunkStore, database_url: str, pg_schema: str, tmp_path: Path
) -> None:
    folder = mixed_folder(tmp_path)
    url = schema_url(database_url, pg_schema)
    status, out = await _run_in_thread(
        "load", str(folder), "--workspace", "mixed", "--database-url", url
    )
    assert status == 0, out
    memory = InMemoryChunkStore()
    await load_into(
        memory, [folder], "mixed", chunking=ChunkingOptions(), extractor=RuleBasedExtractor()
    )
    tenant = workspace_tenant_id("mixed")
    assert await snapshot(pg_store, tenant) == await snapshot(memory, tenant)
    assert await pg_store.list_entities(tenant) == await memory.list_entities(tenant)
    assert len(await pg_store.list_entities(tenant)) >= 5


async def _run_in_thread(*argv: str) -> tuple[int, str]:
    """``main`` runs its own event loop, so from an async test it runs in a worker thread."""
    import asyncio

    return await asyncio.to_thread(run, *argv)


async def test_an_entity_list_given_to_the_command_line_links_its_aliases(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("the jpl team and the Jet Propulsion Laboratory")
    listing = tmp_path / "entities.csv"
    listing.write_text("name,kind,aliases\nJet Propulsion Laboratory,organisation,JPL\n")
    status, out = await _run_in_thread(
        "load", str(tmp_path / "a.txt"), "--workspace", "w", "--entities", str(listing)
    )
    assert status == 0 and "entity list: 1 entities" in out
    extractor = RuleBasedExtractor(load_entity_list(listing.read_text()))
    store = InMemoryChunkStore()
    await load_into(
        store, [tmp_path / "a.txt"], "w", chunking=ChunkingOptions(), extractor=extractor
    )
    (summary,) = await store.list_entities(workspace_tenant_id("w"))
    assert summary.entity.name == "Jet Propulsion Laboratory" and summary.passages == 1


def test_the_entities_column_says_rows_count_per_document_and_the_total_distinct_entities(
    tmp_path: Path,
) -> None:
    (tmp_path / "a.txt").write_text("Dr Jane Whitfield visited NASA.")
    (tmp_path / "b.txt").write_text("Dr Jane Whitfield wrote to NASA.")
    status, out = run("load", str(tmp_path), "--workspace", "w", "--dry-run")
    assert status == 0
    assert "entities (per document)" in out
    assert "2 distinct" in out  # 2 + 2 on the file rows, the same two entities in total


def test_the_load_command_runs_at_lower_priority_unless_told_to_run_at_full(
    tmp_path: Path,
) -> None:
    """``python -m core load`` is bulk background work: it adds ``LOAD_NICENESS`` to its own
    niceness (its staging worker inherits it); ``--full-priority`` keeps it as it was, and a
    caller of ``main`` in passing (this test process) is never reniced."""
    from core.ingest.bulk import LOAD_NICENESS

    (tmp_path / "note.txt").write_text("Flutter of heated wings.")
    program = (
        "import atexit, os, runpy, sys;"
        "atexit.register(lambda: print('niceness', os.nice(0)));"
        "sys.argv = ['core', *sys.argv[1:]];"
        "runpy.run_module('core', run_name='__main__')"
    )
    before = os.nice(0)
    found = {}
    for extra in ([], ["--full-priority"]):
        argv = ["load", str(tmp_path / "note.txt"), "--workspace", "w", "--dry-run", *extra]
        done = subprocess.run(
            [sys.executable, "-c", program, *argv], cwd=ROOT, capture_output=True, text=True,
            check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        found[bool(extra)] = int(done.stdout.split()[-1])
    assert found == {False: min(before + LOAD_NICENESS, 19), True: before}
    assert main(["load", str(tmp_path / "note.txt"), "--workspace", "w", "--dry-run"]) == 0
    assert os.nice(0) == before


def test_a_load_that_starts_no_server_lowers_its_priority_before_its_imports(
    tmp_path: Path,
) -> None:
    """Importing the command is most of a small load's CPU (~1.3 of Cranfield's 1.8 s), and
    ran at full priority beside the app's searches: a dry run, or a load into a server named by
    ``--database-url``, is niced before numpy (the first heavy import) is imported. A load that
    may start the embedded server is not (its server must start at the app's priority), nor a
    ``--full-priority`` one."""
    from core.__main__ import lower_priority_early
    from core.ingest.bulk import LOAD_NICENESS

    (tmp_path / "note.txt").write_text("Flutter of heated wings.")
    program = (
        "import os, runpy, sys;"
        "seen = [];"
        "spy = type('Spy', (), {'find_spec': staticmethod(lambda name, *a: seen.append("
        "os.nice(0)) if name == 'numpy' and not seen else None)});"
        "sys.meta_path.insert(0, spy());"
        "sys.argv = ['core', *sys.argv[1:]];"
        "code = 0\n"
        "try: runpy.run_module('core', run_name='__main__')\n"
        "except SystemExit as stop: code = stop.code\n"
        "print('numpy imported at', seen[0], code)"
    )
    before = os.nice(0)
    argv = ["load", str(tmp_path / "note.txt"), "--workspace", "w", "--dry-run"]
    done = subprocess.run(
        [sys.executable, "-c", program, *argv], cwd=ROOT, capture_output=True, text=True,
        check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[-2:] == [str(min(before + LOAD_NICENESS, 19)), "0"]
    for stays in (["load", "f", "--workspace", "w"], ["load", "f", "--dry-run", "--full-priority"]):
        assert not lower_priority_early(stays)
    assert os.nice(0) == before


def test_an_embedded_server_a_load_starts_runs_at_the_priority_the_app_needs(
    tmp_path: Path, no_default_database: Path
) -> None:
    """A load runs at ``LOAD_NICENESS``, but the embedded server it starts outlives it while
    the app uses it: the server (and every backend it forks for the app) keeps the niceness it
    started with, so it must start before the load lowers its own priority."""
    (tmp_path / "note.txt").write_text("Flutter of heated wings.")
    program = (
        "import os, runpy, sys;"
        "from core.stores.postgres import embedded;"
        "real = embedded.acquire;"
        "spy = lambda *a, **k: (s := real(*a, **k), print('server niceness',"
        " os.getpriority(os.PRIO_PROCESS, s.pid)))[0];"
        "embedded.acquire = spy;"
        "sys.argv = ['core', *sys.argv[1:]];"
        "runpy.run_module('core', run_name='__main__')"
    )
    done = subprocess.run(
        [sys.executable, "-c", program, "load", str(tmp_path / "note.txt"), "--workspace", "w"],
        cwd=ROOT, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    (line,) = [row for row in done.stdout.splitlines() if row.startswith("server niceness")]
    assert int(line.split()[-1]) == os.nice(0), "the server started at the load's priority"


# --- search and evaluate: the screens' numbers in a terminal ------------------------------


@pytest.mark.postgres
def test_search_json_holds_every_number_of_the_facades_result_in_elasticsearchs_explain_shape(
    facade: LexplainService,
) -> None:
    status, out = run(
        "search", QUERY, "--workspace", SAMPLE, "--k", "5", "--limit", "50", "--explain", "--json"
    )
    assert status == 0, out
    expected = facade.search(QUERY, 5, 50, workspace=SAMPLE)
    assert expected.cut_by_limit > 0 and len(expected.passages) == 5
    lacking = [p for p in expected.passages if p.explanation.unmatched]
    assert lacking, "every passage holds every term: the rows of a term it lacks go untested"
    head, *passages = [json.loads(line) for line in out.splitlines()]
    assert head == {
        "kind": "query",
        "workspace": SAMPLE,
        "query": QUERY,
        "k": 5,
        "limit": 50,
        "profile": expected.profile.value,
        "terms": expected.terms,
        "stopwords_dropped": expected.stopwords_dropped,
        "characters_dropped": expected.characters_dropped,
        "n_docs": expected.n_docs,
        "avg_doc_length": expected.avg_doc_length,
        "doc_frequencies": expected.doc_frequencies,
        "matching_passages": expected.matching_passages,
        "candidates_returned": expected.candidates_returned,
        "cut_by_limit": expected.cut_by_limit,
        "shown": 5,
        "empty_reason": None,
    }
    for line, passage in zip(passages, expected.passages, strict=True):
        assert line["kind"] == "passage"
        assert (line["rank"], line["chunk_id"], line["source_id"], line["candidate_position"]) == (
            passage.rank, passage.chunk.id, passage.chunk.source_id, passage.candidate_position
        )  # fmt: skip
        explanation = passage.explanation
        score = line["score"]
        assert score["value"] == passage.score  # a JSON float reads back as the same float
        parts = explanation.every_term()
        assert [node["term"] for node in score["details"]] == [p.term for p in parts]
        for node, part in zip(score["details"], parts, strict=True):
            assert node["value"] == part.contribution
            idf, tf_part = node["details"]
            assert idf["value"] == part.idf and idf["description"].startswith("idf")
            assert [d["value"] for d in idf["details"]] == [part.df, part.n_docs]
            assert tf_part["value"] == part.tf_part and tf_part["description"].startswith("tf")
            assert [d["value"] for d in tf_part["details"]] == [
                part.tf, explanation.k1, explanation.b, part.doc_length, part.avg_doc_length
            ]  # fmt: skip


@pytest.mark.postgres
def test_the_search_tables_show_the_facades_numbers_each_as_its_repr(
    facade: LexplainService,
) -> None:
    status, out = run("search", QUERY, "--workspace", SAMPLE, "--k", "5", "--limit", "50",
                      "--explain")  # fmt: skip
    assert status == 0, out
    expected = facade.search(QUERY, 5, 50, workspace=SAMPLE)
    assert (
        f"corpus: N = {expected.n_docs} passages, avgdl = {expected.avg_doc_length!r} tokens · "
        f"5 of {expected.matching_passages} matching passages shown · {expected.cut_by_limit} cut "
        f"by the limit ({expected.candidates_returned} scored)"
    ) in out
    rows = table_rows(out)
    results = [r for r in rows if len(r) == 7]
    assert [(r[0], r[1], r[2], r[3], r[4], r[5]) for r in results] == [
        (str(p.rank), repr(p.score), p.chunk.source_id, str(p.chunk.chunk_index + 1),
         str(p.candidate_position), p.chunk.id)
        for p in expected.passages
    ]  # fmt: skip
    explained = [r for r in rows if len(r) == 9]
    per_passage = len(expected.distinct_terms)
    assert len(explained) == per_passage * len(expected.passages)
    for i, passage in enumerate(expected.passages):
        shown = {r[0]: r[1:] for r in explained[i * per_passage : (i + 1) * per_passage]}
        assert shown == {
            p.term: [str(p.tf), str(p.df), str(p.n_docs), repr(p.idf), str(p.doc_length),
                     repr(p.avg_doc_length), repr(p.tf_part), repr(p.contribution)]
            for p in passage.explanation.every_term()
        }  # fmt: skip
        assert f"total = {passage.score!r} (the sum of the contribution column)" in out


@pytest.mark.postgres
def test_without_explain_search_shows_the_scores_alone(facade: LexplainService) -> None:
    expected = facade.search(QUERY, 3, 1000, workspace=SAMPLE)
    status, out = run("search", QUERY, "--workspace", SAMPLE, "--k", "3")
    assert status == 0, out
    assert [r[1] for r in table_rows(out)] == [repr(p.score) for p in expected.passages]
    status, out = run("search", QUERY, "--workspace", SAMPLE, "--k", "3", "--json")
    assert status == 0, out
    _, *passages = [json.loads(line) for line in out.splitlines()]
    assert [(p["score"]["value"], p["score"]["details"]) for p in passages] == [
        (p.score, []) for p in expected.passages
    ]


@pytest.mark.postgres
def test_evaluate_prints_the_means_and_per_query_figures_of_evaluate_judged(
    facade: LexplainService,
) -> None:
    graded = {"similarity laws for heated wings": [3, 0, 2], "flutter of panels": [1, 0, 0, 2]}
    texts = [*graded, "boundary layer transition nobody graded"]
    facade.save_query_set("cli set", "\n".join(texts), "lines", workspace=SAMPLE)
    for query, grades in graded.items():
        top = facade.search(query, workspace=SAMPLE).passages
        for passage, grade in zip(top, grades, strict=False):
            facade.grade(query, passage.chunk.id, grade, workspace=SAMPLE)
    (expected,) = facade.evaluate_judged(
        "cli set", 10, [RunSpec(workspace=SAMPLE, limit=20)], workspace=SAMPLE
    )
    assert len(expected.rows) == 2 and 0 < expected.mean_ndcg < 1

    status, out = run("evaluate", "--workspace", SAMPLE, "--set", "cli set", "--limit", "20",
                      "--json")  # fmt: skip
    assert status == 0, out
    means, *queries = [json.loads(line) for line in out.splitlines()]
    assert means["kind"] == "means" and (means["k"], means["limit"]) == (10, 20)
    assert means["queries"] == 2 and means["level"] == "passage"
    for field in ("mean_ndcg", "mean_recall", "mean_mrr", "mean_judged_share",
                  "mean_precision", "mean_ap"):  # fmt: skip
        assert means[field] == getattr(expected, field), field
    assert len(queries) == len(expected.rows)
    for line, row in zip(queries, expected.rows, strict=True):
        assert line["kind"] == "query"
        for field in ("query_id", "query", "judged", "ndcg", "recall", "mrr", "judged_share",
                      "precision", "average_precision"):  # fmt: skip
            assert line[field] == getattr(row, field), field
        assert line["ranked"] == expected.ranked[row.query_id]
        assert line["grades"] == expected.grades[row.query_id]

    status, out = run("evaluate", "--workspace", SAMPLE, "--set", "cli set", "--limit", "20")
    assert status == 0, out
    rows = table_rows(out)
    assert rows[0] == [
        repr(expected.mean_ndcg), repr(expected.mean_recall), repr(expected.mean_mrr),
        repr(expected.mean_judged_share),
    ]  # fmt: skip
    assert rows[1:] == [
        [row.query_id, row.query, str(row.judged), repr(row.ndcg), repr(row.recall),
         repr(row.mrr), repr(row.judged_share)]
        for row in expected.rows
    ]  # fmt: skip
    assert f"Judged@10 is {expected.mean_judged_share!r}" in out


@pytest.mark.postgres
def test_an_unknown_workspace_or_query_set_or_a_set_nobody_graded_is_exit_status_two(
    facade: LexplainService,
) -> None:
    status, out = run("search", QUERY, "--workspace", "nowhere")
    assert status == 2 and "there is no workspace 'nowhere' (names are not listed" in out
    status, out = run("evaluate", "--workspace", "nowhere", "--set", "any")
    assert status == 2 and "there is no workspace 'nowhere'" in out
    status, out = run("evaluate", "--workspace", SAMPLE, "--set", "no such set")
    assert status == 2 and "no query set “no such set”" in out
    facade.save_query_set("ungraded", "transonic drag rise of swept wings", "lines",
                          workspace=SAMPLE)  # fmt: skip
    status, out = run("evaluate", "--workspace", SAMPLE, "--set", "ungraded")
    assert status == 2 and "has a grade yet" in out
    status, out = run("search", QUERY, "--workspace", SAMPLE, "--k", "0", "--json")
    assert status == 2 and "k must be a whole number from 1 to 1,000, got 0" in out


@pytest.mark.postgres
def test_a_query_of_stopwords_only_says_why_nothing_is_listed_and_exits_zero(
    facade: LexplainService,
) -> None:
    status, out = run("search", "of the", "--workspace", SAMPLE)
    assert status == 0 and "no results: no terms left after stopwords" in out
    status, out = run("search", "of the", "--workspace", SAMPLE, "--json")
    (head,) = [json.loads(line) for line in out.splitlines()]
    assert head["empty_reason"] == "no terms left after stopwords" and head["n_docs"] == 1398


@pytest.mark.postgres
def test_search_names_the_characters_no_term_holds_in_the_screens_words(
    facade: LexplainService,
) -> None:
    query = "wing flutter?! (swept) 🙂"
    expected = facade.search(query, 3, 1000, workspace=SAMPLE)
    assert expected.characters_dropped == ["?", "!", "(", ")", "🙂"]
    status, out = run("search", query, "--workspace", SAMPLE, "--k", "3")
    assert status == 0, out
    assert "dropped as neither letters nor digits: “?” “!” “(” “)” “🙂”" in out
    assert dropped_characters_line(expected.characters_dropped) in out
    status, out = run("search", "wing flutter", "--workspace", SAMPLE, "--k", "3")
    assert status == 0 and "neither letters nor digits" not in out
    status, out = run("search", query, "--workspace", SAMPLE, "--k", "3", "--json")
    head = json.loads(out.splitlines()[0])
    assert head["characters_dropped"] == expected.characters_dropped


@pytest.mark.postgres
def test_search_takes_a_question_longer_than_cisis_longest_and_refuses_by_cost_in_one_line(
    facade: LexplainService,
) -> None:
    from tests.fixtures.queries import long_question, too_many_terms

    status, out = run("search", long_question(), "--workspace", SAMPLE, "--k", "3", "--json")
    assert status == 0, out
    assert json.loads(out.splitlines()[0])["shown"] == 3
    status, out = run("search", too_many_terms(1_025), "--workspace", SAMPLE)
    assert status == 2
    refused = "error: not searched: the query has 1,025 distinct terms; at most 1,024 are searched"
    assert refused in out


@pytest.mark.postgres
def test_diagnose_prints_the_facades_cause_of_every_lost_passage_and_the_share_of_each(
    facade: LexplainService,
) -> None:
    from core.service import SAMPLE_QUERY_SET

    facade.import_sample_grades(workspace=SAMPLE)
    expected = facade.diagnose(SAMPLE_QUERY_SET, 10, 50, workspace=SAMPLE)
    assert expected.lost > 0 and len(expected.by_cause) == 3

    status, out = run(
        "diagnose", "--workspace", SAMPLE, "--set", SAMPLE_QUERY_SET, "--limit", "50", "--json"
    )
    assert status == 0, out
    summary, *lost = [json.loads(line) for line in out.splitlines()]
    assert summary["kind"] == "summary" and summary["lost"] == expected.lost
    assert summary["by_cause"] == {c.value: n for c, n in expected.by_cause.items()}
    assert summary["shares"] == {c.value: expected.share(c) for c in expected.by_cause}
    want = [(q, p) for q in expected.queries for p in q.lost]
    assert len(lost) == len(want)
    for line, (query, passage) in zip(lost, want, strict=True):
        assert (line["query_id"], line["chunk_id"]) == (query.query_id, passage.chunk_id)
        assert line["cause"] == passage.cause.value
        assert line["ndcg"] == query.ndcg
        assert line["smallest_limit"] == passage.smallest_limit
        assert line["score"] == passage.score and line["kth_score"] == passage.kth_score

    status, out = run("diagnose", "--workspace", SAMPLE, "--set", SAMPLE_QUERY_SET, "--limit", "50")
    assert status == 0, out
    rows = table_rows(out)
    assert rows[: len(expected.by_cause)] == [
        [c.value, str(n), repr(expected.share(c)), CAUSE_NOTES[c]]
        for c, n in expected.by_cause.items()
    ]
    assert expected.ceiling_note[:40] in out


@pytest.mark.postgres
def test_search_expand_rm3_prints_the_facades_expansion_and_each_weight_as_a_factor(
    facade: LexplainService,
) -> None:
    status, out = run(
        "search", QUERY, "--workspace", SAMPLE, "--k", "5", "--explain", "--json",
        "--expand", "rm3", "--fb-docs", "8", "--fb-terms", "12", "--original-weight", "0.6",
    )  # fmt: skip
    assert status == 0, out
    spec = ExpansionSpec(fb_docs=8, fb_terms=12, original_weight=0.6)
    expected = facade.search(QUERY, 5, 1000, workspace=SAMPLE, expand=spec)
    assert expected.expansion is not None and expected.expansion.added
    head, *passages = [json.loads(line) for line in out.splitlines()]
    assert head["expansion"] == json.loads(expected.expansion.model_dump_json())
    assert head["doc_frequencies"] == expected.doc_frequencies
    for line, passage in zip(passages, expected.passages, strict=True):
        assert (line["chunk_id"], line["rank_before"], line["brought_by"]) == (
            passage.chunk.id, passage.rank_before, passage.brought_by
        )  # fmt: skip
        assert line["score"]["value"] == passage.score
        for node, part in zip(
            line["score"]["details"], passage.explanation.every_term(), strict=True
        ):
            weight, idf, tf_part = node["details"]
            assert weight["value"] == part.weight == expected.expansion.weights[part.term]
            assert (node["value"], idf["value"], tf_part["value"]) == (
                part.contribution, part.idf, part.tf_part
            )  # fmt: skip
            assert "(weight * idf) * tf part" in node["description"]


@pytest.mark.postgres
def test_an_expansion_parameter_out_of_range_is_refused_in_one_line(
    facade: LexplainService,
) -> None:
    status, out = run("search", QUERY, "--workspace", SAMPLE, "--expand", "rm3", "--fb-docs", "0")
    assert status == 2
    assert out.strip().splitlines() == [
        "error: not searched: --fb-docs: Input should be greater than or equal to 1"
    ]


@pytest.mark.postgres
def test_evaluate_expand_rm3_prints_the_facades_expanded_run(facade: LexplainService) -> None:
    texts = ["similarity laws for heated wings", "flutter of panels"]
    facade.save_query_set("cli rm3 set", "\n".join(texts), "lines", workspace=SAMPLE)
    for query in texts:
        top = facade.search(query, workspace=SAMPLE).passages[:3]
        for passage, grade in zip(top, (3, 0, 2), strict=True):
            facade.grade(query, passage.chunk.id, grade, workspace=SAMPLE)
    spec = RunSpec(workspace=SAMPLE, limit=50, expand=ExpansionSpec())
    (expected,) = facade.evaluate_judged("cli rm3 set", 10, [spec], workspace=SAMPLE)
    status, out = run("evaluate", "--workspace", SAMPLE, "--set", "cli rm3 set", "--limit", "50",
                      "--expand", "rm3", "--json")  # fmt: skip
    assert status == 0, out
    means, *queries = [json.loads(line) for line in out.splitlines()]
    assert "RM3" in means["label"] and means["mean_ndcg"] == expected.mean_ndcg
    assert [q["ranked"] for q in queries] == [expected.ranked[r.query_id] for r in expected.rows]


# --- import-queries: a query-set file, its refused lines listed ----------------------------


@pytest.mark.postgres
def test_import_queries_keeps_a_long_question_and_lists_each_refused_line_with_status_one(
    facade: LexplainService, tmp_path: Path
) -> None:
    from tests.fixtures.queries import cranfield_questions, long_question, too_many_terms

    rows = [cranfield_questions()[0], ("56", long_question())]
    rows += [("57", too_many_terms(1_025)), ("58", "wing " * 4_097), cranfield_questions()[1]]
    path = tmp_path / "queries.jsonl"
    path.write_text("".join(json.dumps({"_id": i, "text": t}) + "\n" for i, t in rows))
    argv = ("import-queries", str(path), "--workspace", SAMPLE, "--set", "cisi-like")
    status, out = run(*argv, "--format", "beir")
    assert status == 1, out
    assert f"saved 'cisi-like' in '{SAMPLE}': 3 queries" in out
    assert "2 lines left out, the rest kept: each asks more than a query may." in out
    assert (
        "  line 3: the query has 1,025 distinct terms; at most 1,024 are searched: shorten it"
        in out
    )
    assert "  line 4: the query has 4,097 words; at most 4,096 are searched: shorten it" in out
    kept = facade.query_set("cisi-like", workspace=SAMPLE).queries
    assert [q.query_id for q in kept] == ["1", "56", "2"]
    status, out = run(*argv, "--format", "beir", "--json")
    head, *refused = [json.loads(line) for line in out.splitlines()]
    assert status == 1 and head == {"kind": "set", "name": "cisi-like", "queries": 3, "refused": 2}
    assert [r["line"] for r in refused] == [3, 4]
    path.write_text(json.dumps({"_id": "1", "text": long_question()}) + "\n")
    assert run(*argv, "--format", "beir") == (0, f"saved 'cisi-like' in '{SAMPLE}': 1 query\n")


@pytest.mark.postgres
def test_import_queries_that_stores_nothing_says_why_in_one_line_with_status_two(
    facade: LexplainService, tmp_path: Path
) -> None:
    from tests.fixtures.queries import too_many_terms

    path = tmp_path / "queries.txt"
    path.write_text(too_many_terms(1_025) + "\n")
    argv = ("import-queries", str(path), "--workspace", SAMPLE, "--set", "none kept")
    status, out = run(*argv)
    assert status == 2
    assert out.startswith("error: no query can be kept: line 1: the query has 1,025")
    assert "none kept" not in [s.name for s in facade.query_sets(workspace=SAMPLE)]
    status, out = run("import-queries", str(tmp_path / "absent.txt"), "--workspace", SAMPLE,
                      "--set", "x")  # fmt: skip
    assert status == 2 and out.startswith("error: cannot read")


@pytest.mark.postgres
def test_import_queries_refuses_a_nul_in_a_query_in_judges_sentence_keeping_the_stored_set(
    facade: LexplainService, tmp_path: Path
) -> None:
    path = tmp_path / "queries.jsonl"
    path.write_text(json.dumps({"_id": "1", "text": "wing flutter"}) + "\n")
    argv = ("import-queries", str(path), "--workspace", SAMPLE, "--set", "nul set")
    assert run(*argv, "--format", "beir")[0] == 0
    for text in ("aero\x00", "aero\ud800"):
        path.write_text(json.dumps({"_id": "1", "text": text}) + "\n")
        status, out = run(*argv, "--format", "beir")
        assert status == 2, out
        assert "line 1: a query contains a" in out and "at offset 4" in out
    kept = facade.query_set("nul set", workspace=SAMPLE).queries
    assert [q.text for q in kept] == ["wing flutter"]
