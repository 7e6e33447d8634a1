"""Twenty analysts on one server: Enter to page finished while N sessions search at once (issue 22).

Streamlit runs every session's script in one interpreter, so what an analyst waits for is the
queue behind the other sessions' reruns. N browsers on this 2-core machine would measure the
browsers (five Chromium pages already took more CPU than the server), so each analyst here is a
websocket client speaking Streamlit's own protocol, as the browser's client does: it connects to
``/_stcore/stream``, sends a ``BackMsg.rerun_script`` with the widget states it changed (the query
typed into the Search page's text input, or the first result's "why this score" expander
opened) and the URL the server last gave it, and reads ``ForwardMsg`` deltas until
``script_finished``. Rejected: one Chromium with N contexts (its CPU would compete with the server
for the same two cores and blur what saturates first); the single-analyst browser figures come
from ``bench_browser`` against the same server (``--browser``).

Workload, per analyst: a Search query typed every ``INTERVAL_S`` seconds (uniform jitter of
``JITTER_S``; the next one at once if a page was slower than that), and ``THINK_S`` after each
page finished, the first result's explanation opened (closed again by the next query). Every
analyst has its own queries, so the result cache only serves the explanation's rerun. An error is a
run that ended otherwise than finished, showed an exception, or lacks the Terms line (query) or the
explanation's total (opening). The server is ``bench_browser``'s: the corpus built in memory in
the server's own process (Cranfield, or the synthetic Zipf corpus of ``bench_scale``), ``app.py``
served by Streamlit's bootstrap. ``--processes 2`` starts two such servers and gives analyst i to
server i mod 2, as a sticky proxy would (docs/scaling.md); each process holds its own copy.

    .venv/bin/python -m bench.bench_users --passages 0                 # Cranfield: 1, 10 and 20
    flock /tmp/lexplain-big.lock .venv/bin/python -m bench.bench_users --passages 1000000 --browser
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import psutil  # type: ignore[import-untyped]

from bench import bench_browser, bench_scale

ROOT = Path(__file__).resolve().parents[1]

#: Concurrent analysts per measurement (issue 22's target is 20; one alone is the server's part of
#: a single analyst's query, with no browser on the machine).
ANALYSTS = (1, 10, 20)
#: Seconds each measurement lasts after the analysts' first pages (45 s: 9 queries each, so 20
#: analysts use 180 distinct queries, fewer than either corpus's query list).
DURATION_S = 45.0
#: Seconds between one analyst's queries, and the uniform jitter around it.
INTERVAL_S, JITTER_S = 5.0, 1.0
#: Seconds between a page finished and its first explanation opened.
THINK_S = 1.0
#: k and limit of every query (the Search page's defaults).
K, LIMIT = 10, 1000
#: Seconds a single page may take before it counts as an error (and the analyst reconnects).
PAGE_TIMEOUT_S = 120.0
#: Labels of the widgets an analyst changes (the Search page's own).
QUERY_LABEL, WHY_LABEL = "Query", "why this score"
#: Evidence in a finished page that it answered: the query's Terms line, an explanation's total.
TERMS_MARK, TOTAL_MARK = "**Terms:**", "**total ="


@dataclass
class Page:
    """What one script run sent: whether it finished cleanly and the markdown it showed."""

    finished: bool = False
    exception: bool = False
    markdown: list[str] = field(default_factory=list)

    def shows(self, mark: str) -> bool:
        return any(body.startswith(mark) for body in self.markdown)


class Session:
    """One analyst's websocket session, speaking the browser client's part of the protocol."""

    def __init__(self, url: str, workspace: str) -> None:
        self.ws_url = url.replace("http://", "ws://") + "/_stcore/stream"
        self.query_string = urlencode({"ws": workspace, "k": str(K), "limit": str(LIMIT)})
        self.ids: dict[str, str] = {}  # widget label -> id (the first one of that label)
        self.fragments: dict[str, str] = {}  # widget label -> the fragment drawing it
        self.states: dict[str, Any] = {}  # widget id -> WidgetState sent so far
        self.ws: Any = None

    async def connect(self) -> Page:
        import websockets
        from websockets.typing import Subprotocol

        self.ws = await websockets.connect(
            self.ws_url,
            subprotocols=[Subprotocol("streamlit")],
            max_size=None,
            open_timeout=PAGE_TIMEOUT_S,
        )
        return await self.rerun({})

    async def close(self) -> None:
        if self.ws is not None:
            await self.ws.close()

    async def rerun(self, changes: dict[str, str | bool]) -> Page:
        """Send the widgets changed (by label) and wait for the run's script_finished."""
        from streamlit.proto.BackMsg_pb2 import BackMsg
        from streamlit.proto.WidgetStates_pb2 import WidgetState

        for label, value in changes.items():
            state = WidgetState(id=self.ids[label])
            if isinstance(value, bool):
                state.bool_value = value
            else:
                state.string_value = value
            self.states[state.id] = state
        msg = BackMsg()
        # As the browser does: a change only to widgets of one fragment reruns that fragment.
        fragments = {self.fragments.get(label, "") for label in changes}
        if len(fragments) == 1:
            msg.rerun_script.fragment_id = fragments.pop()
        msg.rerun_script.query_string = self.query_string
        msg.rerun_script.widget_states.widgets.extend(self.states.values())
        await self.ws.send(msg.SerializeToString())
        return await asyncio.wait_for(self._read_run(), PAGE_TIMEOUT_S)

    async def _read_run(self) -> Page:
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

        page = Page()
        seen: set[str] = set()
        while True:
            msg = ForwardMsg()
            msg.ParseFromString(await self.ws.recv())
            kind = msg.WhichOneof("type")
            if kind == "script_finished":
                page.finished = msg.script_finished in (
                    ForwardMsg.FINISHED_SUCCESSFULLY,
                    ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY,
                )
                return page
            if kind == "page_info_changed":
                self.query_string = msg.page_info_changed.query_string
            elif kind == "delta":
                self._read_delta(msg.delta, page, seen)

    def _read_delta(self, delta: Any, page: Page, seen: set[str]) -> None:
        if delta.WhichOneof("type") == "add_block":
            if delta.add_block.WhichOneof("type") == "expandable":
                self._widget(delta.add_block.expandable, seen, delta.fragment_id)
            return
        if delta.WhichOneof("type") != "new_element":
            return
        element = delta.new_element
        kind = element.WhichOneof("type")
        if kind == "markdown":
            page.markdown.append(element.markdown.body)
        elif kind == "exception":
            page.exception = True
        elif kind == "text_input":
            self._widget(element.text_input, seen, delta.fragment_id)

    def _widget(self, proto: Any, seen: set[str], fragment: str) -> None:
        if proto.id and proto.label not in seen:  # the first of a label: result #1's expander
            seen.add(proto.label)
            self.ids[proto.label] = proto.id
            self.fragments[proto.label] = fragment


@dataclass
class Tally:
    """Seconds from the action sent to script_finished, and the runs that went wrong."""

    query: list[float] = field(default_factory=list)
    explanation: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


async def analyst(
    url: str, workspace: str, queries: list[str], until: float, tally: Tally, seed: int
) -> None:
    """One analyst: a query every INTERVAL_S (jittered), an explanation opened after each."""
    rng = random.Random(seed)
    session = Session(url, workspace)
    try:
        first = await session.connect()
        if not first.finished or QUERY_LABEL not in session.ids:
            tally.errors.append("first page: no Query input")
            return
        await asyncio.sleep(rng.uniform(0, INTERVAL_S))  # analysts do not start in step
        for query in queries:
            sent = time.perf_counter()
            if sent >= until:
                break
            changes: dict[str, str | bool] = {QUERY_LABEL: query}
            if WHY_LABEL in session.ids:
                changes[WHY_LABEL] = False
            try:
                page = await session.rerun(changes)
                tally.query.append(time.perf_counter() - sent)
                if not page.finished or page.exception or not page.shows(TERMS_MARK):
                    tally.errors.append(f"query {query!r}: no results page")
                    continue
                await asyncio.sleep(THINK_S)
                if WHY_LABEL in session.ids:  # a query with results has one
                    opened = time.perf_counter()
                    page = await session.rerun({WHY_LABEL: True})
                    tally.explanation.append(time.perf_counter() - opened)
                    if not page.finished or page.exception or not page.shows(TOTAL_MARK):
                        tally.errors.append(f"query {query!r}: no explanation")
            except TimeoutError:
                tally.errors.append(f"query {query!r}: no page in {PAGE_TIMEOUT_S:.0f} s")
                return
            next_at = sent + INTERVAL_S + rng.uniform(-JITTER_S, JITTER_S)
            await asyncio.sleep(max(0.0, next_at - time.perf_counter()))
    except Exception as exc:  # a dropped connection is an error of the run, not of the bench
        tally.errors.append(f"{type(exc).__name__}: {exc}")
    finally:
        await session.close()


def tree_cpu(pids: list[int]) -> float:
    """CPU seconds (user + system) of these processes and all their descendants so far."""
    total = 0.0
    for pid in pids:
        try:
            root = psutil.Process(pid)
            for proc in [root, *root.children(recursive=True)]:
                times = proc.cpu_times()
                total += times.user + times.system
        except psutil.NoSuchProcess:
            continue
    return total


def own_cpu() -> float:
    """CPU seconds of this process alone (the analysts' clients)."""
    times = psutil.Process().cpu_times()
    return float(times.user + times.system)


def measure(
    urls: list[str], workspace: str, queries: list[str], analysts: int, servers: list[int]
) -> dict[str, Any]:
    """One measurement: ``analysts`` sessions for DURATION_S; latencies, errors and CPU."""
    tally = Tally()
    share = len(queries) // analysts

    async def everyone() -> None:
        until = time.perf_counter() + DURATION_S + INTERVAL_S
        await asyncio.gather(
            *(
                analyst(
                    urls[i % len(urls)],
                    workspace,
                    queries[i * share : (i + 1) * share],
                    until,
                    tally,
                    seed=i,
                )
                for i in range(analysts)
            )
        )

    server_before, client_before = tree_cpu(servers), own_cpu()
    started = time.perf_counter()
    asyncio.run(everyone())
    wall = time.perf_counter() - started
    server_cpu, client_cpu = tree_cpu(servers) - server_before, own_cpu() - client_before

    def pct(values: list[float], q: int) -> float:
        if not values:
            return float("nan")
        return (
            statistics.quantiles(values, n=100, method="inclusive")[q - 1]
            if len(values) > 1
            else values[0]
        )

    return {
        "analysts": analysts,
        "processes": len(urls),
        "queries": len(tally.query),
        "query_p50_s": pct(tally.query, 50),
        "query_p95_s": pct(tally.query, 95),
        "query_max_s": max(tally.query, default=float("nan")),
        "explanation_p50_s": pct(tally.explanation, 50),
        "explanation_p95_s": pct(tally.explanation, 95),
        "errors": len(tally.errors),
        "error_examples": tally.errors[:3],
        "wall_s": wall,
        "server_cores": server_cpu / wall,
        "client_cores": client_cpu / wall,
        "load_average": os.getloadavg()[0],
    }


def query_texts(passages: int) -> list[str]:
    """Cranfield's 225 queries, or 200 of the synthetic corpus's (drawn as bench_scale draws)."""
    if passages == 0:
        lines = (ROOT / "data" / "cranfield" / "queries.jsonl").read_text().splitlines()
        return [json.loads(line)["text"] for line in lines]
    _, _, token_lists = bench_scale.zipf_corpus(10_000)
    return [" ".join(tokens) for tokens in token_lists]


def browser_single(url: str, passages: int, servers: list[int]) -> dict[str, Any]:
    """One analyst in Chromium (bench_browser's drive) on the first server; the server's CPU
    and the browser's (Chromium and Playwright's driver: this process's other descendants,
    read before the browser closes) apart."""
    queries = bench_browser.typed_queries(passages)
    browser_cpu: list[float] = []

    def browser_tree() -> None:
        servers_and_theirs = set(servers)
        for pid in servers:
            servers_and_theirs |= {c.pid for c in psutil.Process(pid).children(recursive=True)}
        total = 0.0
        for proc in psutil.Process().children(recursive=True):
            if proc.pid not in servers_and_theirs:
                with contextlib.suppress(psutil.NoSuchProcess):
                    times = proc.cpu_times()
                    total += times.user + times.system
        browser_cpu.append(total)

    server_before = tree_cpu(servers[:1])
    started = time.perf_counter()
    times = bench_browser.drive(url, queries, pages=("Search",), before_close=browser_tree)
    wall = time.perf_counter() - started
    return {
        "times": {what: statistics.median(values) for what, values in times.items()},
        "max": {what: max(values) for what, values in times.items()},
        "server_cores": (tree_cpu(servers[:1]) - server_before) / wall,
        "browser_cores": browser_cpu[0] / wall,
        "load_average": os.getloadavg()[0],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--passages", type=int, default=0, help="0: Cranfield; else Zipf N")
    parser.add_argument("--analysts", default=",".join(map(str, ANALYSTS)))
    parser.add_argument("--processes", type=int, default=1, help="servers, analysts spread")
    parser.add_argument("--browser", action="store_true", help="then one analyst in Chromium")
    args = parser.parse_args()
    servers = [bench_browser.start_server(args.passages) for _ in range(args.processes)]
    results: list[dict[str, Any]] = []
    browser: dict[str, Any] | None = None
    try:
        for server, url in servers:
            bench_browser.wait_healthy(server, url)
        urls = [url for _, url in servers]
        pids = [server.pid for server, _ in servers]
        queries = query_texts(args.passages)
        for n in (int(x) for x in args.analysts.split(",")):
            results.append(measure(urls, bench_scale.WORKSPACE, queries, n, pids))
            print(json.dumps(results[-1]), flush=True)
        if args.browser:
            browser = browser_single(urls[0], args.passages, pids)
            print(json.dumps(browser), flush=True)
    finally:
        for server, _ in servers:
            server.terminate()
            server.wait(60)
    report(args.passages, results, browser)


def report(passages: int, results: list[dict[str, Any]], browser: dict[str, Any] | None) -> None:
    name = "Cranfield (1,398 passages)" if passages == 0 else f"Zipf {passages:,} passages"
    print(f"\n{name} in memory; k = {K}, limit = {LIMIT:,}; {DURATION_S:.0f} s per row\n")
    print(
        "| analysts | processes | queries | Enter → finished p50 / p95 / max s | "
        "explanation p50 / p95 s | errors | server cores | client cores | load avg |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in results:
        print(
            f"| {r['analysts']} | {r['processes']} | {r['queries']} | "
            f"{r['query_p50_s']:.2f} / {r['query_p95_s']:.2f} / {r['query_max_s']:.2f} | "
            f"{r['explanation_p50_s']:.2f} / {r['explanation_p95_s']:.2f} | {r['errors']} | "
            f"{r['server_cores']:.2f} | {r['client_cores']:.2f} | {r['load_average']:.1f} |"
        )
    if browser:
        print("\n| one analyst in Chromium | p50 s | max s |\n|---|---:|---:|")
        for what, p50 in browser["times"].items():
            print(f"| {what} | {p50:.2f} | {browser['max'][what]:.2f} |")
        print(
            f"\nserver {browser['server_cores']:.2f} cores, browser (Chromium + Playwright) "
            f"{browser['browser_cores']:.2f} cores, load average {browser['load_average']:.1f}"
        )


if __name__ == "__main__":
    main()
