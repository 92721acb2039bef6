"""The Runs page's "send the scores back" panel: a run whose rows came from Phoenix (spans) or
MLflow (traces) can annotate those spans, or log feedback on those traces and an MLflow run,
as ``relevancy score --to-phoenix`` / ``--to-mlflow --mlflow-run`` do."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import streamlit as st

from relevancy.dashboard.views.format import esc
from relevancy.errors import RelevancyError
from relevancy.io.exporters import ANNOTATION_NAME, WriteBack, origin_tool
from relevancy.io.exporters.mlflow import (
    check_tracking_uri,
    log_feedback,
    log_run,
    scoring_metrics,
    scoring_params,
)
from relevancy.io.exporters.phoenix import IDENTIFIER, annotate_spans
from relevancy.io.importers.phoenix_server import DEFAULT_URL
from relevancy.report.html import build_report
from relevancy.runs import RunInfo, RunStore

__all__ = ["writeback_panel"]


def writeback_panel(store: RunStore, info: RunInfo, threshold: float) -> None:
    """The panel, for a run with scored rows that came from Phoenix or MLflow (nothing else)."""
    tool = origin_tool(info.settings, info.columns)
    if tool is None or not info.n_scored:
        return
    where = info.settings.get("origin") or {}
    title = "Phoenix" if tool == "phoenix" else "MLflow"
    st.subheader(f"Send the scores back to {title}", anchor=False)
    c1, c2 = st.columns([3, 2])
    name = c2.text_input("Score name", value=ANNOTATION_NAME, key=f"runs_wb_name_{info.id}")
    try:
        if tool == "phoenix":
            _phoenix(store, info, threshold, name, c1, where.get("url"))
        else:
            _mlflow(store, info, threshold, name, c1)
    except RelevancyError as exc:
        st.error(f"**Nothing more was sent.** {esc(exc)}", icon="⛔")


def _phoenix(
    store: RunStore, info: RunInfo, threshold: float, name: str, col: object, url: str | None
) -> None:
    default = url or os.environ.get("PHOENIX_BASE_URL") or DEFAULT_URL
    server = col.text_input("Phoenix server", value=default, key=f"runs_wb_phoenix_{info.id}")
    st.caption(
        "Each scored span gets an annotation: the score, relevant/irrelevant at the sidebar's "
        f"threshold ({threshold:g}) and an explanation (the reason, the generated questions). "
        f"It is written under the identifier '{IDENTIFIER}': sending again replaces only "
        "relevancy's own annotation, never a person's or another tool's."
    )
    if st.button("Annotate the spans in Phoenix", icon="📤", key="runs_to_phoenix"):
        server = server.strip()
        project = (info.settings.get("origin") or {}).get("project") if server == url else None
        with st.spinner("Annotating…"):
            bar = _Progress(info.n_scored, "Annotating")
            done = annotate_spans(
                store.iter_export(info.id),
                server,
                threshold=threshold,
                name=name,
                project=project,
                min_questions=info.settings.get("min_questions"),
                progress=bar.update,
            )
            bar.close()
        _show(done)


def _mlflow(store: RunStore, info: RunInfo, threshold: float, name: str, col: object) -> None:
    uri = col.text_input(
        "MLflow tracking URI",
        value=os.environ.get("MLFLOW_TRACKING_URI", ""),
        placeholder="http://localhost:5000 or sqlite:///mlflow.db",
        key=f"runs_wb_mlflow_{info.id}",
    )
    also_run = st.checkbox(
        "Also log an MLflow run (parameters, metrics, the scored table and the HTML report)",
        value=True,
        key=f"runs_wb_run_{info.id}",
    )
    st.caption(
        "Each scored trace gets feedback: the score, its label at the sidebar's threshold "
        f"({threshold:g}) and the rationale. Sending again overrides relevancy's own earlier "
        "value, never a person's; a store made by another MLflow version is not written to."
    )
    if not st.button("Log the scores to MLflow", icon="📤", key="runs_to_mlflow"):
        return
    uri = uri.strip() or None
    run_id = None
    with st.spinner("Logging…"):
        check_tracking_uri(uri, must_exist=True)
        if also_run:
            run_id = _log_run(store, info, threshold, name, uri)
        bar = _Progress(info.n_scored, "Logging feedback")
        done = log_feedback(
            store.iter_export(info.id),
            uri,
            threshold=threshold,
            name=name,
            run_id=run_id,
            min_questions=info.settings.get("min_questions"),
            progress=bar.update,
        )
        bar.close()
    _show(done, f" · run {esc(run_id)}" if run_id else "")


class _Progress:
    """A progress bar for a write-back, updated every 1% of the rows."""

    def __init__(self, total: int, text: str) -> None:
        self.total, self.done, self.text = max(1, total), 0, text
        self.bar = st.progress(0.0, text=f"{text}…")
        self.step = max(1, self.total // 100)

    def update(self, n: int) -> None:
        before, self.done = self.done, self.done + n
        if self.done // self.step != before // self.step:
            share = min(1.0, self.done / self.total)
            self.bar.progress(share, text=f"{self.text}: {self.done:,} of {self.total:,} rows")

    def close(self) -> None:
        self.bar.empty()


def _show(done: WriteBack, extra: str = "") -> None:
    """What a write-back did: a success when every score got there, else an error per reason."""
    if done.ok:
        st.success(esc(done.describe()) + extra, icon="✅")
        return
    lines = [esc(line) for line in done.problems()]
    st.error(
        f"**{done.n_failed:,} scores were not written.** {esc(done.describe())}{extra}\n\n"
        + "\n".join(f"- {line}" for line in lines)
        + "\n\nPress the button again to send what is missing.",
        icon="⛔",
    )


def _log_run(store: RunStore, info: RunInfo, threshold: float, name: str, uri: str | None) -> str:
    values = store.columns(info.id, ["score"])["score"].astype(float).tolist()
    experiment_ids = (
        store.distinct(info.id, "experiment_id") if "experiment_id" in (info.columns) else []
    )
    with tempfile.TemporaryDirectory(prefix="relevancy-mlflow-") as tmp:
        table = store.export(info.id, Path(tmp) / f"run-{info.id}.csv")
        report = Path(tmp) / f"run-{info.id}.report.html"
        report.write_text(build_report(store, info.id, threshold=threshold), encoding="utf-8")
        run_id, _ = log_run(
            uri,
            experiment_id=experiment_ids[0] if experiment_ids else None,
            run_name=info.name,
            params=scoring_params(info.settings, info.source),
            metrics=scoring_metrics(values, threshold, name),
            artifacts=[table, report],
            tags={"relevancy.source": info.source},
        )
    return run_id
