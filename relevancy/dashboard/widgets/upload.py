"""The Dataset page's "new run" widgets: the data source, the column mapping, the checks."""

from __future__ import annotations

import hashlib

import pandas as pd
import streamlit as st

from relevancy.analysis.agreement import parse_labels
from relevancy.dashboard.views import datasets
from relevancy.dashboard.views.format import esc
from relevancy.dashboard.widgets.state import bind, set_active_run
from relevancy.errors import InputError, RelevancyError
from relevancy.io import guess_mapping
from relevancy.io.exporters import origin
from relevancy.io.importers import SOURCE_FORMATS, ImportReport
from relevancy.runs import demo_inputs

__all__ = [
    "score_button",
    "remember_scored",
    "choose_source",
    "choose_mapping",
    "show_preview_and_issues",
    "upload_origin",
    "DEMO_SOURCE",
]

DEMO_SOURCE = "demo.csv (bundled)"
_ICONS = {"error": "⛔", "warning": "⚠️", "info": "ℹ️"}
_SCORED = "ds_scored"  #: session key: digest of a table scored in this session -> its run


_FORMAT_LABELS = {
    "table": "Table (columns by name)",
    "langfuse": "Langfuse traces/observations",
    "langsmith": "LangSmith runs",
    "phoenix": "Arize Phoenix spans or dataset",
    "mlflow": "MLflow traces",
    "openai-chat": "OpenAI chat messages",
    "openai-batch": "OpenAI Batch API files",
    "openai-log": "OpenAI request/response log",
    "hf": "Hugging Face dataset",
}


@st.cache_data(show_spinner="Reading the file…", max_entries=4)
def _read(name: str, data: bytes, source_format: str) -> tuple[pd.DataFrame, ImportReport]:
    report = ImportReport()
    frame = datasets.read_upload(name, data, source_format=source_format, report=report)
    return frame, report


def _choose_format(report: ImportReport | None) -> None:
    """The format selectbox (key ``ds_format``): "auto-detected: Langfuse traces" or one given."""

    def label(f: str) -> str:
        if f != "auto":
            return _FORMAT_LABELS[f]
        return f"auto-detected: {report.title}" if report and report.detected else "auto-detect"

    st.selectbox(
        "Format",
        SOURCE_FORMATS,
        format_func=label,
        key="ds_format",
        help="Detected from the file's content; choose another to read it differently.",
    )


def choose_source() -> tuple[pd.DataFrame | None, str]:
    """``(table with its own column names, source name)``, or ``(None, "")`` for nothing yet."""
    source = st.segmented_control(
        "Data",
        ["Upload a file", "Bundled demo"],
        help="CSV, TSV, JSON (records), JSONL, Parquet or Arrow with a question and an answer "
        "column, or an export of Langfuse, LangSmith, Phoenix, MLflow or OpenAI (chat records, "
        "request logs, a Batch API input and output file concatenated).",
        **bind("ds_source", "Upload a file"),
    )
    st.session_state["ds_import_format"] = "table"
    if source == "Bundled demo":
        st.caption(
            "48 rows: 24 questions answered by two prompt versions (prompt-A, prompt-B), "
            "with on-topic, partial, padded, off-topic and evasive answers."
        )
        return demo_inputs(), DEMO_SOURCE
    c1, c2 = st.columns([3, 1])
    upload = c1.file_uploader(
        "Upload a table of question/answer pairs, or a tool's export",
        type=list(datasets.UPLOAD_TYPES),
        key="ds_upload",
    )
    if upload is None:
        st.caption(
            "Columns are matched by name (question/user_input, answer/response, variant/model, "
            "id); you can change the mapping after uploading. Exports of Langfuse, LangSmith, "
            "Phoenix, MLflow and OpenAI, and a Hugging Face dataset's .arrow or .parquet file, "
            "are recognised from their content."
        )
        return None, ""
    if st.session_state.get("_ds_format_of") != (upload.name, upload.size):
        st.session_state["_ds_format_of"] = (upload.name, upload.size)
        st.session_state["ds_format"] = "auto"  # a new file: detect its format again
    frame, report, error = None, None, None
    try:
        frame, report = _read(
            upload.name, upload.getvalue(), st.session_state.get("ds_format", "auto")
        )
    except RelevancyError as exc:
        error = exc
    with c2:
        _choose_format(report)
    if report is None:
        st.error(f"**Cannot read this file.** {esc(error)}", icon="⛔")
        return None, ""
    st.session_state["ds_import_format"] = report.format
    if report.format == "table" and not report.source:
        st.caption(esc(report.describe()))
    else:
        st.info(esc(report.describe()), icon="🔎")
    if report.n_bad_lines:  # lines of the file that could not be read: skipped, said here
        st.warning(
            "  \n".join(esc(line) for line in report.describe_bad_lines()[:5])
            + ("  \n…" if len(report.describe_bad_lines()) > 5 else ""),
            icon="⚠️",
        )
    return frame, upload.name


def upload_origin() -> dict[str, str]:
    """Where the new run's rows come from (the run's ``origin`` setting): the format read,
    and the tool its scores can go back to (Phoenix spans, MLflow traces)."""
    return origin(st.session_state.get("ds_import_format", "table"))


def choose_mapping(frame: pd.DataFrame, source: str) -> dict[str, str | None]:
    """Which column plays which role: guessed by name, changeable (keys ``ds_map_<role>``)."""
    if source == DEMO_SOURCE:
        return {role: role for role in datasets.ROLES}
    st.markdown("**Map columns**")
    guess, none = guess_mapping(list(frame.columns)), "(none)"
    if guess.get("label"):  # found by name: used only if it holds labels
        try:
            parse_labels(frame[guess["label"]].tolist(), column=guess["label"])
        except InputError:
            guess["label"] = None
    labels = (
        "Question column",
        "Answer column",
        "Variant column (optional)",
        "ID (optional)",
        "Human label (optional)",
    )
    mapping: dict[str, str | None] = {}
    for col, role, label in zip(st.columns(len(datasets.ROLES)), datasets.ROLES, labels):
        options = [none, *frame.columns]
        with col:
            choice = st.selectbox(
                label, options, index=options.index(guess[role] or none), key=f"ds_map_{role}"
            )
        mapping[role] = None if choice == none else choice
    return mapping


def show_preview_and_issues(frame: pd.DataFrame, issues: list[datasets.Issue]) -> None:
    """The first rows under the file's own column names, then what the checks found."""
    st.markdown(f"**Preview** · {len(frame)} rows · {frame.shape[1]} columns")
    preview = frame.head(20)
    st.dataframe(
        preview, hide_index=True, height=min(38 + 35 * len(preview), 420), key="ds_preview"
    )
    for issue in issues:
        box = {"error": st.error, "warning": st.warning, "info": st.info}[issue.level]
        box(issue.message, icon=_ICONS[issue.level])


def _digest(frame: pd.DataFrame, source: str) -> str:
    values = pd.util.hash_pandas_object(frame, index=True).to_numpy().tobytes()
    return hashlib.blake2b(source.encode() + values, digest_size=16).hexdigest()


def score_button(frame: pd.DataFrame, source: str) -> dict[str, str]:
    """The Score button's label, type and help: "Score N rows" for a table not scored in this
    session, "Score again" (not the primary action) once it was, naming the run it made."""
    scored = st.session_state.get(_SCORED, {}).get(_digest(frame, source))
    if scored is None:
        return {"label": f"Score {len(frame)} rows", "type": "primary", "help": None}
    return {
        "label": "Score again",
        "type": "secondary",
        "help": f"These {len(frame)} rows were scored as run #{scored} (below); scoring them "
        "again makes another run, mostly from the cache.",
    }


def remember_scored(frame: pd.DataFrame, source: str, run_id: int) -> None:
    """This table is being scored as ``run_id``: the active run, and its Score button now says
    "Score again"."""
    set_active_run(run_id)
    st.session_state.setdefault(_SCORED, {})[_digest(frame, source)] = run_id
