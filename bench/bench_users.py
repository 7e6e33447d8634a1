"""Twenty analysts on one server: Enter to page finished while N sessions search at once (issue 22).

Streamlit runs every session's script in one interpreter, so what an analyst waits for is the
queue behind the other sessions' reruns. N browsers on this 2-core machine would measure the
browsers (five Chromium pages already took more CPU than the server), so each analyst here is a
websocket client speaking Streamlit's own protocol, as the browser's client does: it connects to
``/_stcore/stream``, sends a ``BackMsg.rerun_script`` with the widget states it changed (the query
typed into the Search page's text input, or the first result's "why this score" expander
opened) and the URL the server last gave it, and reads ``ForwardMsg`` deltas until
``script_finished``. Rejected: one Chromium with N contexts (its CPU would compete with the server
for the two cores); one analyst in a browser: ``bench_browser`` on the same server (``--browser``).

Workload, per analyst: a Search query typed every ``INTERVAL_S`` seconds (uniform jitter of
``JITTER_S``; the next one at once if a page was slower than that), and ``THINK_S`` after each
page finished, the first result's explanation opened (closed again by the next query). Every
analyst has its own queries, so the result cache only serves the explanation's rerun. An error is a
run that ended otherwise than finished, showed an exception, or lacks the Terms line (query) or the
explanation's total (opening). The server is ``bench_browser``'s: the corpus built in memory in
the server's own process (Cranfield, or the synthetic Zipf corpus of ``bench_scale``), ``app.py``
served by Streamlit's bootstrap. ``--processes 2`` starts two such servers and gives analyst i to
server i mod 2, as a sticky proxy would (docs/scaling.md); each process holds its own copy.

``--truncation`` adds a third action: after the explanation, the Truncation page opened on the
query (the sidebar's link; the page takes the query from the URL the Search page wrote), and the
next query is then a link back to Search carrying it. ``--embedded DATA_DIR`` is issue 20's run
(``users_embedded``): ``app.py`` by ``streamlit run`` on the embedded default holding the Zipf
workspace (put there by ``load`` once), Truncation on, a colleague's ``load`` of ``--load-passages``
into another workspace during each row, and CPU by process group: what saturates first.

    .venv/bin/python -m bench.bench_users --passages 0                 # Cranfield: 1, 10 and 20
    flock /tmp/lexplain-big.lock .venv/bin/python -m bench.bench_users --passages 1000000 --browser
    .venv/bin/python -m bench.bench_users --passages 20000 --analysts 3 --embedded /tmp/users-20k
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode

import psutil  # type: ignore[import-untyped]

from bench import bench_browser, bench_load, scale_setup, users_embedded

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
#: Labels of the widgets an analyst changes (Search's; "why this score" is now a <details>).
QUERY_LABEL, WHY_LABEL = "Query", "why this score"
#: Evidence in a finished page that it answered: the query's Terms line, an explanation's total,
#: Truncation's candidate line.
TERMS_MARK, TOTAL_MARK, CANDIDATES_MARK = "**Terms:**", "**total =", "**Candidate order:**"
#: The pages an analyst visits, by their titles in app.py's navigation.
SEARCH, TRUNCATION = "Search", "Truncation"
#: Passages a colleague loads into another workspace during each embedded row (issue 20: 100k).
LOAD_PASSAGES = 100_000
#: The actions timed, in the order reported.
ACTIONS = ("query", "explanation", "truncation")


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
        self.pages: dict[str, str] = {}  # page title -> script hash (the server's navigation)
        self.page = ""  # script hash of the page shown ("": the default, Search)
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

    def showing(self, query: str) -> bool:
        """Whether the page's URL (which the Search and Truncation pages write) names ``query``."""
        return dict(parse_qsl(self.query_string)).get("q") == query

    async def switch(self, title: str, params: dict[str, str] | None = None) -> Page:
        """Open another page (as the sidebar's link does), the URL's parameters updated.

        The browser forgets the widgets of the page it leaves; so does this session.
        """
        self.page = self.pages[title]
        self.ids, self.fragments, self.states = {}, {}, {}
        if params:
            query = dict(parse_qsl(self.query_string, keep_blank_values=True))
            self.query_string = urlencode(query | params)
        return await self.rerun({})

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
        msg.rerun_script.page_script_hash = self.page
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
            elif kind == "navigation":
                for app_page in msg.navigation.app_pages:
                    self.pages[app_page.page_name] = app_page.page_script_hash
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
    """Per action, when it was sent and the seconds to its script_finished; what went wrong."""

    times: dict[str, list[tuple[float, float]]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)

    def add(self, action: str, sent: float) -> None:
        self.times.setdefault(action, []).append((sent, time.perf_counter() - sent))

    def seconds(self, action: str, within: tuple[float, float] | None = None) -> list[float]:
        """The action's seconds; with ``within``, only those sent inside that window."""
        return [
            s
            for sent, s in self.times.get(action, [])
            if within is None or within[0] <= sent <= within[1]
        ]


async def analyst(
    url: str,
    workspace: str,
    queries: list[str],
    until: float,
    tally: Tally,
    seed: int,
    truncation: bool = False,
) -> None:
    """One analyst: a query every INTERVAL_S (jittered), an explanation opened after each, and
    with ``truncation`` the Truncation page opened on the query after that (the next query is
    then a link back to Search carrying it, as the page's URL does)."""
    rng = random.Random(seed)
    session = Session(url, workspace)
    on_truncation = False
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
                if on_truncation:
                    page = await session.switch(SEARCH, {"q": query})
                    on_truncation = False
                else:
                    page = await session.rerun(changes)
                tally.add("query", sent)
                if not page.finished or page.exception or not page.shows(TERMS_MARK):
                    tally.errors.append(f"query {query!r}: no results page")
                    continue
                if truncation and not session.showing(query):  # a link back to Search
                    tally.errors.append(f"query {query!r}: Search shows another query")
                    continue
                await asyncio.sleep(THINK_S)
                if WHY_LABEL in session.ids:  # a query with results has one
                    opened = time.perf_counter()
                    page = await session.rerun({WHY_LABEL: True})
                    tally.add("explanation", opened)
                    if not page.finished or page.exception or not page.shows(TOTAL_MARK):
                        tally.errors.append(f"query {query!r}: no explanation")
                if truncation:
                    await asyncio.sleep(THINK_S)
                    opened = time.perf_counter()
                    page = await session.switch(TRUNCATION)
                    on_truncation = True
                    tally.add("truncation", opened)
                    if not page.finished or page.exception or not page.shows(CANDIDATES_MARK):
                        tally.errors.append(f"query {query!r}: no truncation")
                    elif not session.showing(query):
                        tally.errors.append(f"query {query!r}: Truncation shows another query")
            except TimeoutError:
                tally.errors.append(f"query {query!r}: no page in {PAGE_TIMEOUT_S:.0f} s")
                return
            next_at = sent + INTERVAL_S + rng.uniform(-JITTER_S, JITTER_S)
            await asyncio.sleep(max(0.0, next_at - time.perf_counter()))
    except Exception as exc:  # a dropped connection is an error of the run, not of the bench
        tally.errors.append(f"{type(exc).__name__}: {exc}")
    finally:
        await session.close()


async def warm_up(url: str, query: str) -> float:
    """One session's query and its Truncation before the rows, as an analyst opening the app
    first: it starts the embedded server (so no load started it, at the load's low priority)
    and reads the workspace's image, which every later search reuses. Its seconds."""
    started = time.perf_counter()
    session = Session(url, scale_setup.WORKSPACE)
    try:
        await session.connect()
        await session.rerun({QUERY_LABEL: query})
        page = await session.switch(TRUNCATION)
        if not page.finished or page.exception or not page.shows(CANDIDATES_MARK):
            raise SystemExit("the first session's Truncation page did not answer")
    finally:
        await session.close()
    return time.perf_counter() - started


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


def pct(values: list[float], q: int) -> float:
    if not values:
        return float("nan")
    return (
        statistics.quantiles(values, n=100, method="inclusive")[q - 1]
        if len(values) > 1
        else values[0]
    )


@dataclass
class Embedded:
    """The embedded mode's extras: the data folder (for PostgreSQL's processes) and the
    corpus file a colleague loads during each measurement (None: no load)."""

    data_dir: Path
    load_path: Path | None


def measure(
    urls: list[str],
    workspace: str,
    queries: list[str],
    analysts: int,
    servers: list[int],
    truncation: bool = False,
    embedded: Embedded | None = None,
) -> dict[str, Any]:
    """One measurement: ``analysts`` sessions for DURATION_S; latencies, errors and CPU (with
    ``embedded``: while a colleague's load runs, CPU by group)."""
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
                    truncation=truncation,
                )
                for i in range(analysts)
            )
        )

    loader = sampler = None
    if embedded is not None:
        if embedded.load_path is not None:
            name = f"{users_embedded.LOAD_WORKSPACE}-{analysts}-{int(time.time())}"
            loader = users_embedded.Loader(embedded.data_dir, embedded.load_path, name)
        sampler = users_embedded.Sampler(servers[0], embedded.data_dir, loader)
    server_before, client_before = tree_cpu(servers), own_cpu()
    with sampler or contextlib.nullcontext():
        started = time.perf_counter()
        if loader is not None:
            loader.start()
        asyncio.run(everyone())
        wall = time.perf_counter() - started
    server_cpu, client_cpu = tree_cpu(servers) - server_before, own_cpu() - client_before
    load = loader.wait() if loader is not None else None
    query = tally.seconds("query")
    result: dict[str, Any] = {
        "analysts": analysts,
        "processes": len(urls),
        "queries": len(query),
        "query_p50_s": pct(query, 50),
        "query_p95_s": pct(query, 95),
        "query_max_s": max(query, default=float("nan")),
        "explanation_p50_s": pct(tally.seconds("explanation"), 50),
        "explanation_p95_s": pct(tally.seconds("explanation"), 95),
        "errors": len(tally.errors),
        "error_examples": tally.errors[:3],
        "wall_s": wall,
        "server_cores": server_cpu / wall,
        "client_cores": client_cpu / wall,
        "load_average": os.getloadavg()[0],
    }
    if truncation or embedded is not None:
        window = None
        if loader is not None and loader.ended is not None:
            window = (loader.started, loader.ended)
        result["actions"] = {
            action: {
                "n": len(tally.seconds(action)),
                "p50_s": pct(tally.seconds(action), 50),
                "p95_s": pct(tally.seconds(action), 95),
                "max_s": max(tally.seconds(action), default=float("nan")),
                "during_load_n": len(tally.seconds(action, window)) if window else 0,
                "during_load_p50_s": pct(tally.seconds(action, window), 50) if window else None,
                "during_load_p95_s": pct(tally.seconds(action, window), 95) if window else None,
            }
            for action in ACTIONS
            if action in tally.times
        }
    if sampler is not None:
        result["cpu"] = sampler.summary()
        result["postmaster_nice"] = sampler.postmaster_nice
        result["load"] = load
    return result


def query_texts(passages: int) -> list[str]:
    """Cranfield's 225 queries, or 200 of the synthetic corpus's (drawn as bench_scale draws)."""
    if passages == 0:
        lines = (ROOT / "data" / "cranfield" / "queries.jsonl").read_text().splitlines()
        return [json.loads(line)["text"] for line in lines]
    _, _, token_lists = scale_setup.zipf_corpus(10_000)
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
    parser.add_argument("--truncation", action="store_true", help="each query on Truncation too")
    parser.add_argument(
        "--embedded",
        type=Path,
        metavar="DATA_DIR",
        help="serve the embedded default on DATA_DIR (the Zipf workspace loaded there first "
        "unless it holds it already), with Truncation and a colleague's load",
    )
    parser.add_argument(
        "--load-passages",
        type=int,
        default=LOAD_PASSAGES,
        help="with --embedded: passages a colleague loads during each row (0: none)",
    )
    args = parser.parse_args()
    if args.embedded is not None:
        embedded_main(args)
        return
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
            results.append(measure(urls, scale_setup.WORKSPACE, queries, n, pids, args.truncation))
            print(json.dumps(results[-1]), flush=True)
        if args.browser:
            browser = browser_single(urls[0], args.passages, pids)
            print(json.dumps(browser), flush=True)
    finally:
        for server, _ in servers:
            server.terminate()
            server.wait(60)
    report(args.passages, results, browser)
    if args.truncation:
        users_embedded.report_actions(results)


def embedded_main(args: argparse.Namespace) -> None:
    """The embedded default on ``args.embedded``: build it if needed, serve, measure."""
    if args.passages <= 0:
        raise SystemExit("--embedded needs --passages N (the Zipf corpus loaded there)")
    data_dir = args.embedded.resolve()
    built = users_embedded.build(data_dir, args.passages)
    print(json.dumps({"workspace": built}), flush=True)
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as folder:
        load_path = None
        if args.load_passages > 0:
            load_path = Path(folder) / "corpus.jsonl"
            ids, texts, _ = scale_setup.zipf_corpus(args.load_passages)
            bench_load.write_corpus(load_path, ids, texts)
            del ids, texts
        server, url = users_embedded.start_server(data_dir)
        try:
            bench_browser.wait_healthy(server, url)
            queries = query_texts(args.passages)
            first = asyncio.run(warm_up(url, queries[-1]))
            print(json.dumps({"first_session_s": first}), flush=True)
            for n in (int(x) for x in args.analysts.split(",")):
                row = measure(
                    [url],
                    scale_setup.WORKSPACE,
                    queries,
                    n,
                    [server.pid],
                    truncation=True,
                    embedded=Embedded(data_dir, load_path),
                )
                results.append(row)
                print(json.dumps(row), flush=True)
        finally:
            server.terminate()
            server.wait(60)
    how = f"loaded in {built['seconds']:.0f} s" if built.get("built") else "reused"
    print(
        f"\nZipf {args.passages:,} passages on the embedded default ({how}); k = {K}, "
        f"limit = {LIMIT:,}; {DURATION_S:.0f} s per row; {os.cpu_count()} cores"
    )
    users_embedded.report(results)


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
