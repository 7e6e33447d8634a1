"""Rules the screens show, held in core: words, orders, counts, and how the service finds them.

The wording rules (plurals, ties, comparing two rankers) are pure functions of
``core.analysis.presentation``; the service rules (a workspace's profile by one
``get_workspace``, the count of workspaces nobody owns) run on a real in-memory store.
"""

from __future__ import annotations

import ast
import tomllib
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.analysis.presentation import compare_explanations, natural_key, ordinal, rankers_summary
from core.analysis.rankers import Ranker, RankerKind
from core.analysis.sentences import count
from core.domain.bm25 import QueryScorer, ScoreExplanation, corpus_stats, explain_score
from core.domain.tokenize import Profile, tokenize
from core.service import LexplainService
from core.settings import Settings
from core.stores.memory import InMemoryChunkStore
from core.stores.port import Workspace

ROOT = Path(__file__).resolve().parents[3]
DOCS = [
    "aeroelastic models of heated wings",
    "heated wings and heated bodies at high speed",
    "boundary layer on a flat plate",
]
QUERY = "heated wings"


def explained(text: str, ranker: Ranker | None = None) -> ScoreExplanation:
    terms = tokenize(QUERY)
    stats = corpus_stats([tokenize(d) for d in DOCS], terms)
    tokens = tokenize(text)
    if ranker is None:
        return explain_score(terms, Counter(tokens), len(tokens), stats)
    scorer = QueryScorer(terms, stats, k1=ranker.k1, b=ranker.b, idf_form=ranker.idf_form)
    return scorer.explain(Counter(tokens), len(tokens))


def test_two_passages_that_score_the_same_are_said_to_tie_in_words() -> None:
    a = explained(DOCS[0])
    summary = compare_explanations(a, a).summary
    assert summary == f"A and B score the same, {a.score:.4f}: every term contributes the same."
    assert "by 0.0000" not in summary and "A every" not in summary


def test_a_passage_under_two_rankers_is_described_by_ranks_and_shares_never_a_score_gap() -> None:
    workspace, classic = Ranker.of(RankerKind.WORKSPACE), Ranker.of(RankerKind.CLASSIC)
    a, b = explained(DOCS[1], workspace), explained(DOCS[1], classic)
    assert a.score != b.score
    summary = rankers_summary(a, b, (1, 2))
    assert summary.startswith("This passage ranks 1st under A and 2nd under B.")
    assert "not compared" in summary
    for word in ("outscores", "scores below", f"{abs(a.score - b.score):.4f}"):
        assert word not in summary
    share = next(p.contribution for p in a.terms if p.term == "heated") / a.score
    assert f"heated {share:.0%} →" in summary or "same share" in summary
    assert rankers_summary(a, a, (3, 3)).startswith("This passage ranks 3rd under both A and B.")


def test_numbers_read_as_words_in_the_right_number() -> None:
    assert count(1, "passage") == "1 passage"
    assert count(2, "passage") == "2 passages"
    assert count(1_398, "entity", "entities") == "1,398 entities"
    assert [ordinal(n) for n in (1, 2, 3, 4, 11, 12, 13, 21, 102)] == [
        "1st",
        "2nd",
        "3rd",
        "4th",
        "11th",
        "12th",
        "13th",
        "21st",
        "102nd",
    ]


def test_source_ids_sort_as_people_count() -> None:
    ids = ["100", "10", "2", "1", "doc10", "doc9", "Doc1", "b.txt", "a.txt"]
    assert sorted(ids, key=natural_key) == [
        "1",
        "2",
        "10",
        "100",
        "a.txt",
        "b.txt",
        "Doc1",
        "doc9",
        "doc10",
    ]


def string_literals(path: Path) -> Iterator[str]:
    """Every string the module can show: its constants and f-string pieces, not docstrings."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
    }
    for node in ast.walk(tree):
        is_text = isinstance(node, ast.Constant) and isinstance(node.value, str)
        if is_text and id(node) not in docstrings:
            yield str(node.value)


def screen_sources() -> list[Path]:
    files = [ROOT / "app.py", *sorted((ROOT / "pages").glob("*.py"))]
    files += sorted((ROOT / "core" / "service").glob("*.py"))
    return files + sorted((ROOT / "core" / "ingest").glob("*.py"))


def test_no_screen_text_writes_a_plural_as_s_in_brackets() -> None:
    """ "1 mention(s)" read as a form, not a sentence: every count goes through ``count``."""
    offenders = [
        f"{path.relative_to(ROOT)}: {text!r}"
        for path in screen_sources()
        for text in string_literals(path)
        if "(s)" in text or "(es)" in text
    ]
    assert offenders == []


def test_sizes_on_screen_are_in_the_uploaders_unit() -> None:
    """Streamlit's uploader prints "64MB per file": "64 MiB" beside it read as two limits."""
    offenders = [
        f"{path.relative_to(ROOT)}: {text!r}"
        for path in screen_sources()
        for text in string_literals(path)
        if "MiB" in text
    ]
    assert offenders == []


class NoListing(InMemoryChunkStore):
    """A store whose listing of every workspace fails once ``queries`` is set: creating a
    workspace may list them (look-alike names), a query may not."""

    queries = False

    async def list_workspaces(self) -> list[Workspace]:
        if self.queries:
            raise AssertionError("listed every workspace to find one")
        return await super().list_workspaces()


STORES: list[NoListing] = []


@pytest.fixture
def unlisted() -> Iterator[LexplainService]:
    async def factory() -> InMemoryChunkStore:
        STORES.append(NoListing())
        return STORES[-1]

    service = LexplainService(factory, settings=Settings(store="memory"))
    yield service
    service.close()


def test_a_query_finds_its_workspaces_profile_without_listing_every_workspace(
    unlisted: LexplainService,
) -> None:
    unlisted.create_workspace("stemmed", Profile.ENGLISH)
    unlisted.upload_files([("m.txt", b"Models of heated models.")], workspace="stemmed")
    STORES[-1].queries = True
    assert unlisted.workspace_profile("stemmed") is Profile.ENGLISH
    assert unlisted.workspace_profile("never-made") is Profile.PLAIN
    result = unlisted.search("model", 10, 10, workspace="stemmed")
    assert result.passages[0].explanation.terms[0].tf == 2  # "models" stemmed at query time
    assert unlisted.truncation("models", 10, 10, workspace="stemmed").terms == ["model"]


def test_workspaces_with_passages_and_no_owner_are_counted_for_a_signed_in_person() -> None:
    service = LexplainService.from_settings(Settings(store="memory"))
    try:
        ada = service.for_user("ada@example.org")
        assert ada.unowned_workspaces() == 0  # the empty default workspace does not count
        name = f"before-sign-in-{uuid.uuid4().hex[:6]}"
        service.create_workspace(name)
        service.upload_files([("a.txt", b"passages nobody owns")], workspace=name)
        ada.create_workspace("adas-own")
        ada.upload_files([("b.txt", b"passages ada owns")], workspace="adas-own")
        assert ada.unowned_workspaces() == 1
        assert name not in ada.list_workspaces()
    finally:
        service.close()


def test_the_app_runs_without_a_file_watcher() -> None:
    """Its thread printed "InotifyEmitter.queue_events() called when the thread is inactive"
    on Ctrl-C, and an analyst's tool has no source to reload."""
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text(encoding="utf-8"))
    assert config["server"]["fileWatcherType"] == "none"
