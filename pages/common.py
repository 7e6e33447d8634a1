"""What every screen shares: the one service, the active workspace, chart builders.

Not a screen (app.py registers only the screen files with ``st.navigation``).
The service is created once per server process with ``st.cache_resource``: the
store and its event-loop thread must outlive reruns and be shared by sessions;
per-session creation would give every browser tab its own empty in-memory store.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import plotly.graph_objects as go
import streamlit as st
from streamlit.auth_util import get_secrets_auth_section
from streamlit.navigation.page import StreamlitPage
from streamlit.runtime.pages_manager import PagesManager
from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

from core.analysis.sentences import escape_text, link_int, log_ticks, other_workspace_results
from core.service import (
    DEFAULT_K,
    DEFAULT_LIMIT,
    DEFAULT_WORKSPACE,
    SAMPLE_LABEL,
    SAMPLE_QUERY,
    EvaluationRun,
    LexplainService,
    LimitCeiling,
    TruncationView,
)
from core.service import K_MAX as K_MAX  # re-exported: the screens' bounds (core's)
from core.service import LIMIT_MAX as LIMIT_MAX
from core.service import signed_in_email as proven_email

#: Session key app.py sets right before it runs a screen: a screen run without it ran bare.
FRAMED_KEY = "_framed"
#: The service app.py obtained for the run under way, handed to the screen it runs (``framed``).
#: Per thread: each session's script run has its own thread.
_HANDED = threading.local()
#: Session key marking the one rerun a bare screen asks for.
REFRAMING_KEY = "_reframing"
#: Session-state key of the active workspace name.
WORKSPACE_KEY = "workspace"
#: URL query parameter of the workspace (shared by every page).
WORKSPACE_PARAM = "ws"
#: Suffix of the session key holding what a result was computed from (settings, grades): a
#: result whose inputs have changed since is marked out of date, never shown as current.
INPUTS = "_inputs"


#: Each screen's ``st.Page``, made once per process and app folder (``screen_page``).
_PAGES: dict[tuple[str, str, str, str, bool], StreamlitPage] = {}


def screen_page(path: str, title: str, icon: str, default: bool = False) -> StreamlitPage:
    """``st.Page(path, title=..., icon=..., default=...)``, its checks made once per process:
    each made page resolves its file on the disk and checks its icon, ~0.07 ms, nine of them
    on every rerun of every screen (bench/bench_rerun.py, issue 50). Each run gets its own
    copy: ``st.navigation`` marks the page it returns as the one to run, and ``run`` unmarks
    it, so one object shared by two sessions' runs at once would refuse to run in one."""
    ctx = get_script_run_ctx()
    if ctx is None:  # bare mode: st.Page keeps nothing of the path, nothing to keep here
        return st.Page(path, title=title, icon=icon, default=default)
    key = (str(ctx.pages_manager.main_script_parent), path, title, icon, default)
    made = _PAGES.get(key)
    if made is None:  # two runs racing here make two equal pages: either is kept
        made = _PAGES[key] = st.Page(path, title=title, icon=icon, default=default)
    return copy.copy(made)


@st.cache_resource(show_spinner="Opening the store…")
def get_service() -> LexplainService:
    """The process-wide service, configured from ``LEXPLAIN_*`` settings."""
    return LexplainService.from_settings()


def sign_in_configured() -> bool:
    """Whether lexplain requires sign-in: ``.streamlit/secrets.toml`` has an ``[auth]`` section.

    Read with the function ``st.login`` itself uses, so the two never disagree; a sign-in
    state reported by Streamlit (``st.user.is_logged_in``) also counts, failing closed.
    """
    return "is_logged_in" in st.user.to_dict() or bool(get_secrets_auth_section())


def signed_in_email() -> str | None:
    """The verified e-mail of the person signed in (``core.service.signed_in_email``); None
    without sign-in, before signing in, or when the provider proves no address."""
    if not sign_in_configured() or not st.user.is_logged_in:
        return None
    return proven_email(st.user.to_dict())


def current_service(sign_in: bool | None = None) -> LexplainService:
    """The service as the person signed in may use it (every workspace without sign-in).

    ``sign_in``: whether sign-in is configured, when the caller has just asked
    (``sign_in_configured`` reads the secrets and the user's claims each time). With sign-in
    and nobody signed in, the script stops here: nothing is shown or read (app.py draws the
    sign-in screen before it gets this far).
    """
    if not (sign_in_configured() if sign_in is None else sign_in):
        return get_service()
    email = signed_in_email()
    if email is None:
        st.stop()
    return get_service().for_user(email)


def screen() -> LexplainService:
    """Start a screen inside app.py's frame; returns the service as the person signed in may
    use it (``current_service``). Every screen calls it first.

    The screens live in ``pages/``, the folder Streamlit's legacy multipage mode discovers.
    Streamlit decides that mode from the folder's existence until ``st.navigation`` has run
    once in the process, so the first request a server answers, if it is a deep link to a
    screen, runs the screen file bare: no sidebar, no workspace (the previous session saw
    this and renamed the folder ``app_pages/``, which hid the cause). A bare run is detected
    here (app.py sets ``FRAMED_KEY`` just before it runs a screen): the screen turns the
    legacy mode off for the process, as ``st.navigation`` would, and reruns, so app.py
    draws the frame and runs the screen. Drawing the sidebar in every
    screen instead would keep the legacy menu, which lists helper modules as pages.
    """
    if st.session_state.pop(FRAMED_KEY, False):
        st.session_state.pop(REFRAMING_KEY, None)
        handed: LexplainService | None = _HANDED.__dict__.pop("service", None)
        return handed if handed is not None else current_service()
    _HANDED.__dict__.pop("empty", None)  # not this run's: a bare run read nothing
    if not st.session_state.get(REFRAMING_KEY):
        st.session_state[REFRAMING_KEY] = True  # one rerun, never a loop
        # What ``st.navigation`` itself does first (streamlit/commands/navigation.py); calling
        # st.navigation here instead shows the user a "page not found" dialog.
        PagesManager.uses_pages_directory = False
        st.rerun()
    return current_service()


def framed(service: LexplainService, empty: tuple[str, bool] | None = None) -> None:
    """app.py, right before it runs a screen: hand the screen the service this run already
    got (``screen``), so a run asks for it once. Asking again read the secrets and the user's
    claims twice more per rerun (bench/bench_rerun.py, issue 50). ``empty``: a workspace and
    whether it held no passage, as app.py read it in this run (``LexplainService.frame``), for
    ``offer_sample`` to use once instead of asking the store again."""
    st.session_state[FRAMED_KEY] = True
    _HANDED.service = service
    _HANDED.empty = empty


def workspace() -> str:
    """The workspace the sidebar selected."""
    name = st.session_state.get(WORKSPACE_KEY)
    return name if isinstance(name, str) and name else DEFAULT_WORKSPACE


def length_histogram(lengths: Sequence[int], avg_doc_length: float) -> go.Figure:
    """Passage lengths (tokens) with the corpus avgdl marked."""
    figure = go.Figure(go.Histogram(x=list(lengths), nbinsx=60, marker_color="#4C78A8"))
    figure.add_vline(
        x=avg_doc_length,
        line_dash="dash",
        line_color="#E45756",
        annotation_text=f"avgdl = {avg_doc_length:.2f}",
        annotation_position="top right",
    )
    figure.update_layout(
        height=320,
        margin={"l": 0, "r": 0, "t": 30, "b": 0},
        xaxis_title="passage length (tokens, stopwords excluded)",
        yaxis_title="passages",
        bargap=0.05,
    )
    return figure


#: Colours of kept and cut candidates (the same blue as the histograms; red for loss).
KEPT_COLOUR, CUT_COLOUR = "#4C78A8", "#E45756"


#: Colour of the smallest safe limit's line.
SAFE_COLOUR = "#54A24B"


#: Session key of the judgment files chosen on Evaluate (label, queries, qrels); Truncation's
#: ceiling may use them too.
EVALUATE_JUDGMENTS_KEY = "ev_judgments"
#: Colours of the ceiling's two lines: BM25's nDCG@k and the best the kept candidates allow.
NDCG_COLOUR, CEILING_COLOUR = "#54A24B", "#B279A2"


def sweep_chart(view: TruncationView, ceiling: LimitCeiling | None = None) -> go.Figure:
    """Overlap of the limited with the unlimited top-k as the limit grows (points from core).

    The x-axis is logarithmic: a safe limit is usually a small fraction of the matching
    passages, and on a linear axis everything happened in its left few percent. With a
    ``ceiling`` (core's), BM25's nDCG@k at each limit and the best nDCG@k any ordering of the
    kept candidates reaches share the 0-1 scale. The limit
    and the smallest safe limit are lines named in the legend, not labels on the plot: two
    close limits put their labels on top of each other and of the lines.
    """
    report = view.report
    figure = go.Figure(
        go.Scatter(
            x=[p.limit for p in report.sweep],
            y=[p.overlap for p in report.sweep],
            mode="lines+markers",
            line={"color": KEPT_COLOUR},
            marker={"size": 4},
            hovertemplate="limit %{x:,}: overlap %{y:.0%}<extra></extra>",
            name=f"overlap with the unlimited top-{view.k}",
        )
    )
    if ceiling is not None and ceiling.points:
        for name, colour, dash, values in (
            (f"BM25 nDCG@{view.k}", NDCG_COLOUR, "solid", [p.ndcg for p in ceiling.points]),
            (
                f"best nDCG@{view.k} of the kept candidates",
                CEILING_COLOUR,
                "dot",
                [p.ceiling for p in ceiling.points],
            ),
        ):
            figure.add_trace(
                go.Scatter(
                    x=[p.limit for p in ceiling.points],
                    y=values,
                    mode="lines+markers",
                    line={"color": colour, "dash": dash},
                    marker={"size": 4},
                    name=name,
                    hovertemplate=f"limit %{{x:,}}: {name} %{{y:.3f}}<extra></extra>",
                )
            )
    for x, name, colour, dash in (
        (view.limit, f"limit {view.limit:,}", CUT_COLOUR, "solid"),
        (
            report.smallest_safe_limit,
            f"smallest safe limit {report.smallest_safe_limit:,}",
            SAFE_COLOUR,
            "dash",
        ),
    ):
        figure.add_trace(
            go.Scatter(
                x=[x, x],
                y=[0, 1],
                mode="lines",
                line={"color": colour, "dash": dash, "width": 2},
                name=name,
                hovertemplate=f"{name}<extra></extra>",
            )
        )
    figure.update_layout(
        height=320,
        margin={"l": 0, "r": 0, "t": 40, "b": 0},
        xaxis={
            "title": f"limit (candidates handed to BM25, log scale; {report.matching:,} match)",
            "type": "log",
            "tickvals": (ticks := log_ticks(max([p.limit for p in report.sweep], default=1))),
            "ticktext": [f"{t:,}" for t in ticks],
        },
        yaxis_title=f"share of the unlimited top-{view.k} kept"
        + ("; nDCG" if ceiling is not None and ceiling.points else ""),
        yaxis={"tickformat": ".1f" if ceiling is not None else ".0%", "range": [-0.05, 1.05]},
        legend={"orientation": "h", "y": 1.12, "x": 0},
    )
    return figure


def score_scatter(view: TruncationView) -> go.Figure:
    """Every matching passage: matched-term count against BM25 score, cut ones in red."""
    figure = go.Figure()
    for cut, name, colour in ((False, "kept", KEPT_COLOUR), (True, "cut", CUT_COLOUR)):
        rows = [r for r in view.report.candidates if r.cut is cut]
        figure.add_trace(
            go.Scatter(
                x=[r.matched_terms for r in rows],
                y=[r.score for r in rows],
                mode="markers",
                name=f"{name} ({len(rows):,})",
                marker={"color": colour, "size": 7, "opacity": 0.6},
                # Plotly reads hover text as a subset of HTML: source ids are user data.
                customdata=[
                    [escape_text(r.source_id), r.chunk_index + 1, r.position] for r in rows
                ],
                hovertemplate=(
                    "source %{customdata[0]} · passage %{customdata[1]}<br>"
                    "candidate #%{customdata[2]:,} · %{x} terms · score %{y:.2f}"
                    f"<extra>{name}</extra>"
                ),
            )
        )
    figure.update_layout(
        height=320,
        margin={"l": 0, "r": 0, "t": 30, "b": 0},
        xaxis_title=f"query terms matched (of {len(view.distinct_terms)})",
        yaxis_title="BM25 score",
        xaxis={"dtick": 1},
        legend={"orientation": "h", "y": 1.1},
    )
    return figure


def ndcg_histogram(runs: Sequence[EvaluationRun], names: Sequence[str]) -> go.Figure:
    """Per-query nDCG of each run, the runs' bars side by side in each bin, named in the legend.

    Overlaid translucent bars blended into a third colour that no legend named.
    """
    figure = go.Figure()
    for run, name, colour in zip(runs, names, (KEPT_COLOUR, CUT_COLOUR), strict=False):
        figure.add_trace(
            go.Histogram(
                x=[row.ndcg for row in run.rows],
                xbins={"start": 0.0, "end": 1.0001, "size": 0.05},
                name=name,
                marker_color=colour,
            )
        )
    figure.update_layout(
        barmode="group",
        showlegend=True,
        legend={"orientation": "h", "y": 1.15, "x": 0},
        height=300,
        margin={"l": 0, "r": 0, "t": 30, "b": 0},
        xaxis_title=f"nDCG@{runs[0].k if runs else ''} per query",
        yaxis_title="queries",
        bargap=0.05,
    )
    return figure


def try_sample_query(query_key: str) -> None:
    """Button callback: the suggested query goes into the page's query box (and the shared one)."""
    st.session_state[query_key] = st.session_state[SHARED_QUERY] = SAMPLE_QUERY


def offer_sample(service: LexplainService, query_key: str | None = None) -> None:
    """On an empty workspace: one click loads the sample collection; then, on a page with a
    query box (its session key ``query_key``), one more click tries the suggested query."""
    name = workspace()
    read: tuple[str, bool] | None = _HANDED.__dict__.pop("empty", None)
    empty = read[1] if read is not None and read[0] == name else service.is_empty(workspace=name)
    if not empty:
        return
    slot = st.empty()
    with slot.container():
        st.info(
            "This workspace is empty. Load the sample collection to get an explained ranking "
            "in seconds, or add your own files on the Upload page."
        )
        clicked = st.button(
            f"Load the sample collection ({SAMPLE_LABEL})", key="load_sample", type="primary"
        )
    if not clicked:
        return
    bar = slot.progress(0.0, text="Loading the sample…")

    def progress(done: int, total: int, _label: str) -> None:
        bar.progress(done / total, text=f"Loading the sample… {done:,} of {total:,} documents")

    report = service.load_sample(workspace=workspace(), on_progress=progress)
    with slot.container():
        st.success(
            f"Loaded {report.passages_written:,} passages from {report.documents:,} documents"
            + "".join(f"; {note}" for note in report.notes)
            + "."
        )
        if query_key is None:
            st.caption(f"Try a query on the Search page, e.g. “{escape_text(SAMPLE_QUERY)}”.")
        else:
            st.button(
                f"Try: {SAMPLE_QUERY}",
                key="try_sample_query",
                icon=":material/search:",
                on_click=try_sample_query,
                args=(query_key,),
            )


#: Query, k and limit before any screen set them: one default for Search, Truncation and Compare.
QUERY_DEFAULTS: dict[str, Any] = {"q": "", "k": DEFAULT_K, "limit": DEFAULT_LIMIT}


#: Session key of the query the query screens share: a query typed on one is there on the
#: others. Only the query: k and limit are each screen's own (Truncation's limit followed the
#: analyst to Search and cut its results without a word, issue 48).
SHARED_QUERY = "_shared_q"


def _kept(key: str) -> str:
    """Non-widget copy of a screen's k or limit: survives page switches (Streamlit drops the
    state of widgets that did not render)."""
    return f"_kept_{key}"


def _notes_key(marker: str) -> str:
    return f"{marker}_notes"


def sync_query_params(keys: Mapping[str, str], defaults: Mapping[str, Any], marker: str) -> None:
    """Adopt q/k/limit from the URL when a link carries them and they changed, and say on
    screen what a link asked for that is not used as given.

    ``keys`` maps the URL names (q, k, limit) to this page's widget keys. ``marker``
    remembers the URL this page last adopted. A k or limit out of range or not a number is
    replaced by core's rule (``link_int``), and its sentence stays on screen while the
    widget still holds the replacement.
    """
    params = st.query_params
    url = (params.get("q"), params.get("k"), params.get("limit"))
    notes = _notes_key(marker)
    if "q" in params and url != st.session_state.get(marker):
        st.session_state[marker] = url
        st.session_state[SHARED_QUERY] = st.session_state[keys["q"]] = params.get("q", "")
        read = {
            "k": link_int("k", params.get("k"), defaults["k"], 1, K_MAX),
            # 0 is let through: core refuses it in its own words (a limit of 0 scores nothing).
            "limit": link_int("limit", params.get("limit"), defaults["limit"], 0, LIMIT_MAX),
        }
        st.session_state[notes] = []
        for name, value in read.items():
            st.session_state[keys[name]] = st.session_state[_kept(keys[name])] = int(value.value)
            if value.note:
                st.session_state[notes].append((keys[name], int(value.value), value.note))
    for name, key in keys.items():
        if key not in st.session_state:
            kept = SHARED_QUERY if name == "q" else _kept(key)
            st.session_state[key] = st.session_state.get(kept, defaults[name])
    for key, used, note in st.session_state.get(notes, []):
        if st.session_state.get(key) == used:
            st.warning(note, icon=":material/link:")


def write_query_params(
    keys: Mapping[str, str], marker: str, query: str, k: int, limit: int
) -> None:
    """Put q/k/limit in the URL (a shareable link), the query in the session's shared key and
    k and limit in this screen's own."""
    st.session_state[SHARED_QUERY] = query
    st.session_state[_kept(keys["k"])] = k
    st.session_state[_kept(keys["limit"])] = limit
    st.query_params.update({"q": query, "k": str(k), "limit": str(limit)})
    st.session_state[marker] = (query, str(k), str(limit))


def grades_state(service: LexplainService, query_set: str, ws: str) -> tuple[int, str]:
    """A query set's grades as a comparable state: how many, and the latest grade's time (a
    grade replaced or added changes it)."""
    texts = [q.text for q in service.query_set(query_set, workspace=ws).queries]
    grades = service.judgments(workspace=ws, queries=texts)
    return len(grades), max((g.judged_at.isoformat() for g in grades), default="")


def remember(key: str, settings: tuple[object, ...], grades: object = None) -> None:
    """Keep what the result under ``key`` was computed from: ``settings`` and ``grades``."""
    st.session_state[key + INPUTS] = (settings, grades)


def mark_out_of_date(
    key: str,
    settings: tuple[object, ...],
    grades_now: Callable[[], object] | None,
    button: str,
) -> None:
    """Say so above a result whose settings or grades changed since it was computed
    (``grades_now``: the grades' state today, None when the result used no grades)."""
    kept = st.session_state.get(key + INPUTS)
    if kept is None:
        return
    then_settings, then_grades = kept
    changed = [
        what
        for what, moved in (
            ("the settings above", then_settings != settings),
            ("the grades", grades_now is not None and then_grades != grades_now()),
        )
        if moved
    ]
    if changed:
        st.warning(
            f"Out of date: {' and '.join(changed)} changed since this was computed. "
            f"Click {button} again for current numbers.",
            icon=":material/history:",
        )


def drop_other_workspace_results(marker: str, keys: Sequence[str]) -> None:
    """Results under ``keys`` computed in another workspace than the sidebar's are dropped and
    the drop said once (``marker``: the session key of the workspace they were computed in).
    Kept, they stood under the new workspace marked "the grades changed" or "the settings
    above changed", and Runs saved them into it."""
    held = st.session_state.get(marker)
    if held == workspace():
        return
    if [key for key in keys if st.session_state.pop(key, None) is not None]:
        st.caption(other_workspace_results(str(held), workspace()))
    st.session_state[marker] = workspace()
