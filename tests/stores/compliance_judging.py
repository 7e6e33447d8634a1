"""The judging half of the store contract: query sets, judgments, saved runs.

A second class beside ``ChunkStoreCompliance`` (every adapter's test class subclasses both)
rather than more cases in that file: the contract is one, the file was already the longest
in the suite. Subclasses provide the same ``store`` fixture.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta, timezone
from uuid import UUID

import pytest
from pydantic import ValidationError

from core.domain.judging import (
    MAX_QUERIES,
    Judgment,
    QuerySet,
    RunRecord,
    SavedRun,
    SetQuery,
)
from core.stores.port import ChunkStore, Workspace, WorkspaceGone

#: A fixed time, so reads can be compared with what was written.
WHEN = datetime(2026, 5, 4, 3, 2, 1, 123456, tzinfo=UTC)


async def workspace(store: ChunkStore, name: str = "judging") -> UUID:
    tenant = uuid.uuid4()
    await store.upsert_workspace(Workspace(tenant_id=tenant, name=f"{name} {tenant.hex[:8]}"))
    return tenant


def query_set(
    tenant: UUID, name: str = "core", texts: tuple[str, ...] = ("wing", "body")
) -> QuerySet:
    queries = tuple(SetQuery(query_id=str(n), text=t) for n, t in enumerate(texts, 1))
    return QuerySet(tenant_id=tenant, name=name, queries=queries, created_at=WHEN)


def judgment(
    tenant: UUID, query: str = "wing", chunk: str = "c1", grade: int = 2, rater: str = "local"
) -> Judgment:
    return Judgment(
        tenant_id=tenant,
        query=query,
        chunk_id=chunk,
        source_id=f"doc-{chunk}",
        grade=grade,
        rater=rater,
        judged_at=WHEN,
    )


def saved_run(tenant: UUID, name: str = "baseline", minutes: int = 0) -> SavedRun:
    record = RunRecord(
        ranker="bm25",
        k1=1.2,
        b=0.75,
        profile="plain",
        limit=1000,
        k=10,
        query_set="core",
        judgments={"wing": {"c1": 2, "c2": 0}},
        metrics={"wing": {"nDCG@10": 0.5, "Judged@10": 0.2}},
        ranked={"wing": ["c1", "c9", "c2"]},
    )
    return SavedRun(
        tenant_id=tenant,
        run_id=uuid.uuid4(),
        name=name,
        saved_at=WHEN + timedelta(minutes=minutes),
        record=record,
    )


class JudgingCompliance:
    """Query sets, judgments and saved runs: per workspace, and gone with it."""

    @pytest.fixture
    async def store(self) -> AsyncIterator[ChunkStore]:
        raise NotImplementedError("a subclass provides the store under test")
        yield  # pragma: no cover

    async def test_a_name_or_query_holding_nul_is_found_nowhere_alike_on_every_store(
        self, store: ChunkStore
    ) -> None:
        # PostgreSQL raised CharacterNotInRepertoireError where memory answered (issue 49).
        tenant = await workspace(store)
        await store.save_query_set(query_set(tenant))
        await store.put_judgments(tenant, [judgment(tenant)])
        for bad in ("co\x00re", "core\ud800"):
            assert await store.get_query_set(tenant, bad) is None
            assert await store.delete_query_set(tenant, bad) is False
            assert await store.list_judgments(tenant, [bad]) == []
            assert await store.delete_judgment(tenant, bad, "c1", "local") is False
            assert await store.delete_judgment(tenant, "wing", bad, "local") is False
        assert await store.list_judgments(tenant, ["wing", "wi\x00ng"]) == [judgment(tenant)]
        assert await store.get_query_set(tenant, "core") == query_set(tenant)

    async def test_a_query_set_reads_back_equal_and_is_listed_by_name(
        self, store: ChunkStore
    ) -> None:
        tenant = await workspace(store)
        core, extra = query_set(tenant, "zeta"), query_set(tenant, "alpha", ("x",))
        await store.save_query_set(core)
        await store.save_query_set(extra)
        assert await store.get_query_set(tenant, "zeta") == core
        assert [(s.name, s.queries) for s in await store.list_query_sets(tenant)] == [
            ("alpha", 1),
            ("zeta", 2),
        ]
        assert (await store.list_query_sets(tenant))[1].created_at == WHEN

    async def test_saving_a_set_under_its_name_again_replaces_it(self, store: ChunkStore) -> None:
        tenant = await workspace(store)
        await store.save_query_set(query_set(tenant))
        newer = query_set(tenant, texts=("flutter",))
        await store.save_query_set(newer)
        assert await store.get_query_set(tenant, "core") == newer
        assert len(await store.list_query_sets(tenant)) == 1

    async def test_a_query_set_at_the_maximum_size_reads_back_whole(
        self, store: ChunkStore
    ) -> None:
        tenant = await workspace(store)
        texts = tuple(f"query number {n} ünïcode" for n in range(MAX_QUERIES))
        big = query_set(tenant, "big", texts)
        await store.save_query_set(big)
        assert await store.get_query_set(tenant, "big") == big

    async def test_deleting_a_query_set_says_whether_there_was_one(self, store: ChunkStore) -> None:
        tenant = await workspace(store)
        await store.save_query_set(query_set(tenant))
        await store.put_judgments(tenant, [judgment(tenant)])
        assert await store.delete_query_set(tenant, "core") is True
        assert await store.delete_query_set(tenant, "core") is False
        assert await store.get_query_set(tenant, "core") is None
        assert len(await store.list_judgments(tenant)) == 1  # judgments belong to the query

    async def test_judgments_read_back_ordered_by_query_passage_and_rater(
        self, store: ChunkStore
    ) -> None:
        tenant = await workspace(store)
        written = [
            judgment(tenant, "wing", "c2", 1, "b@example.org"),
            judgment(tenant, "body", "c9", 0),
            judgment(tenant, "wing", "c2", 3, "a@example.org"),
            judgment(tenant, "wing", "c1", 2),
        ]
        assert await store.put_judgments(tenant, written) == 4
        read = await store.list_judgments(tenant)
        assert read == sorted(written, key=lambda j: (j.query, j.chunk_id, j.rater))
        assert [j.query for j in await store.list_judgments(tenant, ["body"])] == ["body"]
        assert await store.list_judgments(tenant, []) == []

    async def test_a_rater_grading_a_pair_again_replaces_only_their_grade(
        self, store: ChunkStore
    ) -> None:
        tenant = await workspace(store)
        await store.put_judgments(
            tenant, [judgment(tenant, rater="a@example.org"), judgment(tenant, rater="local")]
        )
        later = judgment(tenant, grade=0, rater="a@example.org").model_copy(
            update={"judged_at": WHEN + timedelta(hours=1)}
        )
        await store.put_judgments(tenant, [later])
        read = {j.rater: j for j in await store.list_judgments(tenant)}
        assert read["a@example.org"] == later
        assert read["local"].grade == 2

    async def test_a_time_in_another_zone_reads_back_as_the_same_instant_in_utc(
        self, store: ChunkStore
    ) -> None:
        tenant = await workspace(store)
        elsewhere = datetime(2026, 5, 4, 5, 2, 1, 123456, tzinfo=timezone(timedelta(hours=2)))
        written = Judgment.model_validate({**judgment(tenant).model_dump(), "judged_at": elsewhere})
        await store.put_judgments(tenant, [written])
        (read,) = await store.list_judgments(tenant)
        assert read.judged_at == WHEN
        assert read.judged_at.utcoffset() == timedelta(0)

    async def test_a_judgment_batch_with_one_of_another_workspace_writes_nothing(
        self, store: ChunkStore
    ) -> None:
        tenant, other = await workspace(store), await workspace(store, "other")
        with pytest.raises(ValueError, match="another workspace"):
            await store.put_judgments(tenant, [judgment(tenant), judgment(other, chunk="c2")])
        assert await store.list_judgments(tenant) == []
        assert await store.list_judgments(other) == []

    async def test_deleting_a_judgment_removes_that_raters_grade_only(
        self, store: ChunkStore
    ) -> None:
        tenant = await workspace(store)
        await store.put_judgments(tenant, [judgment(tenant), judgment(tenant, rater="x@y.org")])
        assert await store.delete_judgment(tenant, "wing", "c1", "local") is True
        assert await store.delete_judgment(tenant, "wing", "c1", "local") is False
        assert [j.rater for j in await store.list_judgments(tenant)] == ["x@y.org"]

    def test_a_grade_outside_0_to_3_cannot_even_be_made(self) -> None:
        for grade in (-1, 4):
            with pytest.raises(ValidationError):
                judgment(uuid.uuid4(), grade=grade)

    async def test_a_saved_run_reads_back_whole_and_runs_list_by_time(
        self, store: ChunkStore
    ) -> None:
        tenant = await workspace(store)
        later, earlier = saved_run(tenant, "tuned", 5), saved_run(tenant, "baseline", 0)
        await store.save_run(later)
        await store.save_run(earlier)
        assert await store.get_run(tenant, later.run_id) == later
        listed = await store.list_runs(tenant)
        assert [(r.name, r.query_set, r.saved_at) for r in listed] == [
            ("baseline", "core", earlier.saved_at),
            ("tuned", "core", later.saved_at),
        ]
        assert await store.get_run(tenant, uuid.uuid4()) is None

    async def test_a_returned_run_is_the_callers_to_change(self, store: ChunkStore) -> None:
        tenant = await workspace(store)
        run = saved_run(tenant)
        await store.save_run(run)
        read = await store.get_run(tenant, run.run_id)
        assert read is not None
        read.record.metrics["wing"]["nDCG@10"] = 99.0
        run.record.ranked["wing"].append("c77")
        again = await store.get_run(tenant, run.run_id)
        assert again is not None
        assert again.record.metrics["wing"]["nDCG@10"] == 0.5
        assert again.record.ranked["wing"] == ["c1", "c9", "c2"]

    async def test_deleting_a_run_says_whether_there_was_one(self, store: ChunkStore) -> None:
        tenant = await workspace(store)
        run = saved_run(tenant)
        await store.save_run(run)
        assert await store.delete_run(tenant, run.run_id) is True
        assert await store.delete_run(tenant, run.run_id) is False
        assert await store.list_runs(tenant) == []

    async def test_nothing_judging_is_written_into_a_workspace_that_does_not_exist(
        self, store: ChunkStore
    ) -> None:
        tenant = uuid.uuid4()
        with pytest.raises(KeyError):
            await store.save_query_set(query_set(tenant))
        with pytest.raises(KeyError):
            await store.put_judgments(tenant, [judgment(tenant)])
        with pytest.raises(KeyError):
            await store.save_run(saved_run(tenant))
        assert await store.list_query_sets(tenant) == []
        assert await store.list_judgments(tenant) == []
        assert await store.list_runs(tenant) == []

    async def test_judging_goes_with_its_workspace_and_only_with_it(
        self, store: ChunkStore
    ) -> None:
        gone, kept = await workspace(store, "gone"), await workspace(store, "kept")
        for tenant in (gone, kept):
            await store.save_query_set(query_set(tenant))
            await store.put_judgments(tenant, [judgment(tenant)])
            await store.save_run(saved_run(tenant))
        await store.delete_workspace(gone)
        assert await store.list_query_sets(gone) == []
        assert await store.get_query_set(gone, "core") is None
        assert await store.list_judgments(gone) == []
        assert await store.list_runs(gone) == []
        assert len(await store.list_query_sets(kept)) == 1
        assert len(await store.list_judgments(kept)) == 1
        assert len(await store.list_runs(kept)) == 1
        # A deleted workspace's id is never used again: a late grade is refused.
        with pytest.raises(WorkspaceGone):
            await store.put_judgments(gone, [judgment(gone)])

    async def test_workspaces_do_not_see_each_others_judging(self, store: ChunkStore) -> None:
        first, second = await workspace(store, "first"), await workspace(store, "second")
        await store.save_query_set(query_set(first))
        await store.put_judgments(first, [judgment(first)])
        run = saved_run(first)
        await store.save_run(run)
        assert await store.get_query_set(second, "core") is None
        assert await store.list_judgments(second) == []
        assert await store.get_run(second, run.run_id) is None
        assert await store.delete_run(second, run.run_id) is False
        assert await store.delete_judgment(second, "wing", "c1", "local") is False
