"""The Runs page's "send the scores back" panel: a run whose rows came from Phoenix (spans) or
MLflow (traces) can annotate those spans, or log feedback on those traces and an MLflow run,
as ``relevancy score --to-phoenix`` / ``--to-mlflow --mlflow-run`` do."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import streamlit as st

from relevancy.dashboard.views.format import esc
from relevancy.dashboard.views.report import build_report
from relevancy.errors import RelevancyError
from relevancy.io.exporters import ANNOTATION_NAME, origin_tool
from relevancy.io.exporters.mlflow import log_feedback, log_run, scoring_metrics, scoring_params
from relevancy.io.exporters.phoenix import annotate_spans
from relevancy.io.importers.phoenix_server import DEFAULT_URL
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
        "Sending again replaces it."
    )
    if st.button("Annotate the spans in Phoenix", icon="📤", key="runs_to_phoenix"):
        with st.spinner("Annotating…"):
            done = annotate_spans(store.iter_export(info.id), server.strip(),
                                  threshold=threshold, name=name)  # fmt: skip
        st.success(esc(done.describe()), icon="✅")


def _mlflow(store: RunStore, info: RunInfo, threshold: float, name: str, col: object) -> None:
    uri = col.text_input(
        "MLflow tracking URI", value=os.environ.get("MLFLOW_TRACKING_URI", ""),
        placeholder="http://localhost:5000 or sqlite:///mlflow.db", key=f"runs_wb_mlflow_{info.id}",
    )  # fmt: skip
    also_run = st.checkbox(
        "Also log an MLflow run (parameters, metrics, the scored table and the HTML report)",
        value=True, key=f"runs_wb_run_{info.id}",
    )  # fmt: skip
    st.caption(
        "Each scored trace gets feedback: the score, its label at the sidebar's threshold "
        f"({threshold:g}) and the rationale. Sending again overrides the previous value."
    )
    if not st.button("Log the scores to MLflow", icon="📤", key="runs_to_mlflow"):
        return
    uri = uri.strip() or None
    run_id = None
    with st.spinner("Logging…"):
        if also_run:
            run_id = _log_run(store, info, threshold, name, uri)
        done = log_feedback(store.iter_export(info.id), uri, threshold=threshold, name=name,
                            run_id=run_id)  # fmt: skip
    st.success(esc(done.describe()) + (f" · run {esc(run_id)}" if run_id else ""), icon="✅")


def _log_run(store: RunStore, info: RunInfo, threshold: float, name: str, uri: str | None) -> str:
    values = store.columns(info.id, ["score"])["score"].astype(float).tolist()
    experiment_ids = store.distinct(info.id, "experiment_id") if "experiment_id" in (
        info.columns
    ) else []  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="relevancy-mlflow-") as tmp:
        table = store.export(info.id, Path(tmp) / f"run-{info.id}.csv")
        report = Path(tmp) / f"run-{info.id}.report.html"
        report.write_text(build_report(store, info.id, threshold=threshold), encoding="utf-8")
        run_id, _ = log_run(
            uri, experiment_id=experiment_ids[0] if experiment_ids else None,
            run_name=info.name, params=scoring_params(info.settings, info.source),
            metrics=scoring_metrics(values, threshold, name), artifacts=[table, report],
            tags={"relevancy.source": info.source},
        )  # fmt: skip
    return run_id
