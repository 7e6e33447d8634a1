"""What an RM3 search costs against the same query unexpanded (issue 47's speed targets).

The facade's search (``LexplainService.search``, k 10, limit 1000) of bench_scale's Zipf
queries over its synthetic corpus in the in-memory store, each query once as typed and once
with ``ExpansionSpec()`` (Anserini's defaults), alternated query by query so load drifts hit
both alike. Each search's text is new (the query plus its own count of trailing spaces, which
tokenise to the same terms), so the service's result cache never answers. The target: an RM3
search at most 2.5x the unexpanded one (two rankings and a second
read are its floor). Also Cranfield, the sample. Results: bench/results/expansion.json.
``--store postgres``: the same on the server at ``DATABASE_URL``, in a schema of the bench's
own, dropped before and after (the issue's bound at 100k in PostgreSQL).

``--evaluate``: issue 47's other bound, an expanded Evaluate (``evaluate_judged``, documents,
k 10, limit 1000) of bench_judge's 300 graded Zipf queries at 100k passages at most 3x the
same Evaluate typed; the two alternated, the median of EVALUATE_REPEATS each (a whole Evaluate
is seconds, so a few runs are its sample, not 100 as for a search).

    .venv/bin/python -m bench.bench_expansion --sizes 100000
    .venv/bin/python -m bench.bench_expansion --sizes '' --evaluate
    .venv/bin/python -m bench.bench_expansion --sizes 100000 --store postgres
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Iterator
from contextlib import contextmanager

from pydantic import SecretStr

from bench.bench_judge import SET_QUERIES, graded_set
from bench.bench_query_probes import database_url, drop_schema, server_label
from bench.results import record
from bench.scale_setup import cranfield_corpus, zipf_corpus
from core.domain.chunks import StoredChunk, workspace_tenant_id
from core.service import ExpansionSpec, LexplainService, RunSpec
from core.settings import Settings

#: The workspace the corpus is written to.
WORKSPACE = "bench-expansion"
#: k and limit of every search (Search's defaults).
K, LIMIT = 10, 1000
#: Queries timed per corpus (each twice: typed and expanded).
QUERIES = 100
#: Passages written per batch.
BATCH = 5_000
#: The Evaluate bound's corpus (Zipf passages) and how many times each Evaluate is timed.
EVALUATE_PASSAGES, EVALUATE_REPEATS = 100_000, 3
#: The schema ``--store postgres`` keeps its tables in (dropped before and after a run).
SCHEMA = "bench_expansion"


@contextmanager
def opened(store: str) -> Iterator[tuple[LexplainService, str]]:
    """A service on an empty store of kind ``store`` (memory, or postgres at DATABASE_URL)
    and how a row names that store."""
    if store == "memory":
        service = LexplainService.from_settings(Settings(store="memory"))
        try:
            yield service, "memory"
        finally:
            service.close()
        return
    url = database_url()
    drop_schema(url, SCHEMA)
    service = LexplainService.from_settings(
        Settings(database_url=SecretStr(url), database_schema=SCHEMA)
    )
    try:
        yield service, server_label(url)
    finally:
        service.close()
        drop_schema(url, SCHEMA)


def build(service: LexplainService, name: str) -> list[str]:
    """Corpus ``name`` written to ``service``'s workspace; its queries as text."""
    if name == "cranfield":
        ids, texts, queries = cranfield_corpus()
    else:
        ids, texts, queries = zipf_corpus(int(name))
    service.create_workspace(WORKSPACE)
    tenant = workspace_tenant_id(WORKSPACE)
    chunks = [
        StoredChunk(
            tenant_id=tenant, source_id=i, text=t, chunk_index=0, start_char=0, end_char=len(t)
        )
        for i, t in zip(ids, texts, strict=True)
    ]
    for start in range(0, len(chunks), BATCH):
        service._call(service._store.upsert_many(chunks[start : start + BATCH]))
    return [" ".join(q) for q in queries[:QUERIES]]


def timed(service: LexplainService, query: str, expand: ExpansionSpec | None) -> float:
    start = time.perf_counter()
    service.search(query, K, LIMIT, workspace=WORKSPACE, expand=expand)
    return (time.perf_counter() - start) * 1000


def measure(name: str, store: str) -> dict[str, object]:
    with opened(store) as (service, label):
        queries = build(service, name)
        for query in queries[:5]:  # warm: the first searches build the image and caches
            timed(service, query, None)
        plain: list[float] = []
        expanded: list[float] = []
        for i, query in enumerate(queries):
            # A text no earlier pass searched: the result cache cannot answer it.
            typed, rm3 = query + " " * (2 * i + 1), query + " " * (2 * i + 2)
            plain.append(timed(service, typed, None))
            expanded.append(timed(service, rm3, ExpansionSpec()))
    p50_plain, p50_rm3 = statistics.median(plain), statistics.median(expanded)
    ratio = p50_rm3 / p50_plain
    print(f"{label} {name}: typed p50 {p50_plain:.2f} ms, RM3 p50 {p50_rm3:.2f} ms, {ratio:.2f}x")
    return {
        "workload": f"RM3 search vs typed, {label}, {name} passages, k {K}, limit {LIMIT}",
        "lexplain": f"{p50_rm3:.2f} ms (typed {p50_plain:.2f} ms)",
        "peer": "the same query unexpanded",
        "ratio": f"{ratio:.2f}x (target <= 2.5x)",
        "command": f"python -m bench.bench_expansion --sizes {name}"
        + ("" if store == "memory" else f" --store {store}"),
    }


def measure_evaluate() -> dict[str, object]:
    """An expanded Evaluate of the graded set against the same Evaluate typed (seconds)."""
    with opened("memory") as (service, _):
        build(service, str(EVALUATE_PASSAGES))
        graded_set(service, WORKSPACE)
        typed = RunSpec(workspace=WORKSPACE, limit=LIMIT)
        rm3 = RunSpec(workspace=WORKSPACE, limit=LIMIT, expand=ExpansionSpec())

        def evaluated(spec: RunSpec) -> float:
            start = time.perf_counter()
            service.evaluate_judged("bench", K, [spec], workspace=WORKSPACE, by_document=True)
            return time.perf_counter() - start

        evaluated(typed)  # warm: the first Evaluate builds the image and caches
        plain: list[float] = []
        expanded: list[float] = []
        for _ in range(EVALUATE_REPEATS):
            plain.append(evaluated(typed))
            expanded.append(evaluated(rm3))
    mid_plain, mid_rm3 = statistics.median(plain), statistics.median(expanded)
    ratio = mid_rm3 / mid_plain
    print(f"evaluate: typed {mid_plain:.3f} s, RM3 {mid_rm3:.3f} s, {ratio:.2f}x")
    return {
        "workload": (
            f"RM3 Evaluate vs typed, memory, {SET_QUERIES} graded queries, "
            f"{EVALUATE_PASSAGES} passages, k {K}, limit {LIMIT}, by document"
        ),
        "lexplain": f"{mid_rm3:.3f} s (typed {mid_plain:.3f} s)",
        "peer": "the same Evaluate unexpanded",
        "ratio": f"{ratio:.2f}x (target <= 3x)",
        "command": "python -m bench.bench_expansion --sizes '' --evaluate",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="cranfield,100000")
    parser.add_argument("--no-write", action="store_true", help="print only")
    parser.add_argument("--evaluate", action="store_true", help="also the Evaluate bound")
    parser.add_argument("--store", choices=("memory", "postgres"), default="memory")
    args = parser.parse_args()
    rows = [measure(name, args.store) for name in args.sizes.split(",") if name]
    if args.evaluate:
        rows.append(measure_evaluate())
    print(f"load {os.getloadavg()[0]:.1f}")
    if not args.no_write:
        record("expansion", rows)


if __name__ == "__main__":
    main()
