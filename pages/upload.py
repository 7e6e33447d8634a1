"""Upload: files to passages and entities, with a report per file. Rendering only.

Reading, cutting, extraction and storing happen in ``service.upload_files``;
this page collects the files and options and shows one row per file.
"""

from __future__ import annotations

import streamlit as st

from core.analysis.sentences import count, escape_text
from core.service import UPLOAD_FILE_TYPES, ChunkingOptions
from pages.common import screen, workspace

#: Session key of the last upload: the workspace it went to and its report per file (shown
#: only in that workspace: under another, its rows named sources this one does not hold).
REPORTS_KEY = "upload_reports"

service = screen()
ws = workspace()
st.title("Upload")
st.markdown(
    f"Add documents to the workspace **{escape_text(ws)}**. Each document is cut into passages "
    "(or kept whole) and its entities are found; uploading a file again replaces its passages."
)
files = st.file_uploader(
    f"Files ({', '.join(t.lstrip('.') for t in UPLOAD_FILE_TYPES)}; jsonl is a BEIR corpus)",
    type=list(UPLOAD_FILE_TYPES),
    accept_multiple_files=True,
    key="files",
    # The uploader's "… MB per file" is the same setting core checks (LEXPLAIN_MAX_UPLOAD_MB).
    max_upload_size=service.settings.max_upload_mb,
)
st.caption(escape_text(service.upload_limits()))
whole = st.toggle(
    "Whole documents (one passage per document)",
    key="whole_documents",
    help="The natural choice for test collections with short documents.",
)
left, right = st.columns(2)
size = left.number_input(
    "Passage size (characters)",
    min_value=100,
    max_value=100_000,
    value=service.settings.chunk_size,
    step=100,
    disabled=whole,
    key="chunk_size",
)
overlap = right.number_input(
    "Overlap (characters)",
    min_value=0,
    max_value=10_000,
    value=service.settings.chunk_overlap,
    step=50,
    disabled=whole,
    key="chunk_overlap",
)
# The form is checked as it is filled in, before any file is read.
options: ChunkingOptions | None
try:
    options = service.chunking(int(size), int(overlap), whole_documents=whole)
except ValueError as exc:
    options = None
    st.error(f"Passage size and overlap: {escape_text(str(exc))}")
if st.button(
    "Index the files", type="primary", disabled=not files or options is None, key="index_files"
):
    bar = st.progress(0.0, text="Indexing…")

    def progress(done: int, total: int, name: str) -> None:
        label = f"Indexing {done + 1:,} of {total:,}: {name}" if done < total else "Done"
        bar.progress(done / total if total else 1.0, text=label)

    st.session_state[REPORTS_KEY] = (
        ws,
        service.upload_files(
            [(f.name, f.getvalue()) for f in files or []],
            workspace=ws,
            chunking=options,
            on_progress=progress,
        ),
    )


def delete_sources() -> None:
    """Button callback: delete before the script runs, so the tables below are current."""
    doomed = list(st.session_state.get("doomed", []))
    removed = sum(service.delete_source(source, workspace=ws) for source in doomed)
    st.session_state["doomed"] = []
    st.toast(f"Deleted {count(len(doomed), 'source')}, {count(removed, 'passage')}.")


uploaded_to, reports = st.session_state.get(REPORTS_KEY, (ws, None))
if reports and uploaded_to != ws:  # another workspace's report: not this one's sources
    st.caption(
        f"This session's last upload went to the workspace “{escape_text(uploaded_to)}”: its "
        "report is shown there."
    )
    reports = None
if reports:
    st.subheader("Result per file")
    stored = [r for r in reports if r.error is None]
    if stored:
        st.success(
            f"Stored {len(stored)} of {count(len(reports), 'file')}: "
            f"{count(sum(r.passages_written for r in stored), 'passage')}, "
            f"{count(sum(r.entities_found for r in stored), 'entity', 'entities')} found."
        )
    for failed in (r for r in reports if r.error is not None):
        st.error(f"{escape_text(failed.file_name)}: {escape_text(failed.error or '')}")
    st.dataframe(
        [
            {
                "file": r.file_name,
                "result": "error" if r.error else "stored",
                "documents": r.documents,
                "passages before → after": f"{r.passages_before:,} → {r.passages_written:,}",
                "unchanged": r.passages_unchanged,
                "new": r.passages_new,
                "removed": r.passages_removed,
                "entity mentions": r.entities_found,
            }
            for r in reports
        ],
        column_config={
            "passages before → after": st.column_config.TextColumn(
                help="Passages of the file's sources before this upload, and now"
            ),
            "unchanged": st.column_config.NumberColumn(
                help="Passages already stored with the same text"
            ),
            "removed": st.column_config.NumberColumn(
                help="Passages of the earlier version whose text is no longer in the file"
            ),
        },
        hide_index=True,
        key="upload-report",
    )
    # Errors and notes are sentences: shown in full below the table, never cut off in a cell.
    for r in reports:
        if r.notes:
            st.caption(f"{escape_text(r.file_name)}: " + escape_text("; ".join(r.notes)))

st.subheader("Sources")
sources = service.list_sources(workspace=ws)  # natural order of ids: 2 before 10
if not sources:
    st.info("No sources in this workspace yet.")
else:
    # What this session just uploaded comes first: after a BEIR file of 1,400 ids a new upload
    # at the bottom of the list was not findable.
    recent = {source for r in reports or [] for source in r.source_ids}
    needle = st.text_input("Filter by source id", key="source_filter").casefold().strip()
    shown = [s for s in sources if needle in s.source_id.casefold()]
    shown.sort(key=lambda s: s.source_id not in recent)  # stable: natural order within each
    st.caption(
        f"{count(len(shown), 'source')} of {len(sources):,}"
        + (f", the {len(recent):,} just uploaded first" if recent else "")
        + "; ids in natural order (2 before 10)."
    )
    st.dataframe(
        [
            {"source": s.source_id, "passages": s.passages, "just uploaded": s.source_id in recent}
            for s in shown
        ],
        hide_index=True,
        key="sources-table",
    )
    doomed = st.multiselect("Delete sources", [s.source_id for s in sources], key="doomed")
    st.button("Delete", disabled=not doomed, key="delete_sources", on_click=delete_sources)
