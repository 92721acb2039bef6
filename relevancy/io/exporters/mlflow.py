"""Scores into MLflow: feedback on the traces the rows came from (``answer_relevancy``: the
score, its rationale, the label), and a run with the scoring's parameters, its metrics (mean,
CI, NaN count...) and artifacts (the scored table, the HTML report).

The tracking URI is MLflow's own (``http://...``, ``sqlite:///...``, ``databricks``...); None
uses ``MLFLOW_TRACKING_URI`` or MLflow's default. MLflow is imported lazily (the ``mlflow``
extra: ``mlflow-skinny``, plus SQLAlchemy and Alembic for a ``sqlite:///`` store)."""

from __future__ import annotations

import contextlib
import math
import os
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import pandas as pd

from relevancy.core.stats import summarize
from relevancy.errors import InputError
from relevancy.io.exporters import ANNOTATION_NAME, WriteBack, explanation, label_of, scored_rows

__all__ = ["log_feedback", "log_run", "scoring_params", "scoring_metrics", "DEFAULT_EXPERIMENT"]

INSTALL = 'pip install "relevancy[mlflow]"'
DEFAULT_EXPERIMENT = "relevancy"  #: where a run goes when the rows name no experiment
_URI_LOCK = threading.Lock()


def _mlflow() -> Any:
    try:
        import mlflow  # lazy: the mlflow extra
    except ImportError:
        raise InputError(f"MLflow is not installed: {INSTALL}") from None
    return mlflow


@contextlib.contextmanager
def _tracking(uri: str | None) -> Iterator[Any]:
    """MLflow with its tracking URI set to ``uri`` for the block (and put back after)."""
    mlflow = _mlflow()
    with _URI_LOCK:
        before = os.environ.get("MLFLOW_TRACKING_URI")  # set_tracking_uri keeps it there too
        if uri:
            mlflow.set_tracking_uri(uri)
        try:
            yield mlflow
        finally:
            if uri:
                mlflow.set_tracking_uri(before)  # None: unset, as it was


def _where(uri: str | None) -> str:
    if uri:
        return uri
    return os.environ.get("MLFLOW_TRACKING_URI") or "MLflow's default tracking URI"


def _fail(what: str, uri: str | None, exc: Exception) -> InputError:
    text = str(exc).splitlines()[0] if str(exc) else ""
    return InputError(f"cannot {what} at {_where(uri)} ({type(exc).__name__}: {text[:200]})")


def log_feedback(
    chunks: Iterable[pd.DataFrame],
    tracking_uri: str | None = None,
    *,
    threshold: float = 0.5,
    name: str = ANNOTATION_NAME,
    run_id: str | None = None,
) -> WriteBack:
    """Log each scored row's score as feedback on its trace (``trace_id`` column): the value
    is the score, the rationale the row's explanation, the metadata its label, reason and
    backends (and ``run_id``, the MLflow run of this scoring, when there is one). Feedback
    this package logged before under ``name`` is overridden (MLflow keeps the old value as
    invalid); rows whose trace is not there are counted and left out."""
    report = WriteBack("mlflow", _where(tracking_uri), what="feedback", name=name,
                       plural="feedback")  # fmt: skip
    with _tracking(tracking_uri) as mlflow:
        from mlflow.entities import AssessmentSource  # lazy: the mlflow extra

        for trace_id, score, row in scored_rows(chunks, "trace_id", report):
            source = AssessmentSource(source_type="LLM_JUDGE",
                                      source_id=str(row.get("llm") or "relevancy"))  # fmt: skip
            metadata = {"label": label_of(score, threshold), "threshold": str(threshold),
                        "reason": str(row.get("reason") or ""),
                        "embeddings": str(row.get("embeddings") or ""),
                        "source": "relevancy"}  # fmt: skip
            if run_id:
                metadata["mlflow_run_id"] = run_id
            feedback = {"value": score, "source": source, "rationale": explanation(row),
                        "metadata": metadata}  # fmt: skip
            try:
                trace = mlflow.get_trace(trace_id, silent=True)
                if trace is None:
                    report.skip("rows whose trace is not at this tracking URI")
                    continue
                previous = _ours(trace, name)
                if previous is not None:  # scored again: the new value overrides the old one
                    mlflow.override_feedback(trace_id=trace_id, assessment_id=previous,
                                             **feedback)  # fmt: skip
                else:
                    mlflow.log_feedback(trace_id=trace_id, name=name, **feedback)
            except Exception as exc:  # a store that cannot be read or written...
                raise _fail("log feedback on trace " + trace_id, tracking_uri, exc) from None
            report.written += 1
    return report


def _ours(trace: Any, name: str) -> str | None:
    """The id of the valid feedback ``name`` this package logged on ``trace`` before."""
    for assessment in trace.info.assessments or []:
        meta = assessment.metadata or {}
        if (
            assessment.name == name
            and assessment.valid is not False
            and (meta.get("source") == "relevancy")
        ):
            return assessment.assessment_id
    return None


def log_run(
    tracking_uri: str | None = None,
    *,
    experiment: str | None = None,
    experiment_id: str | None = None,
    run_name: str,
    params: Mapping[str, Any],
    metrics: Mapping[str, float],
    artifacts: Sequence[str | os.PathLike[str]] = (),
    tags: Mapping[str, str] | None = None,
) -> tuple[str, WriteBack]:
    """One MLflow run for a scoring: its parameters, metrics (NaN ones left out) and
    artifacts, in ``experiment_id`` (the traces' own) or ``experiment`` (by name, made if
    needed; default :data:`DEFAULT_EXPERIMENT`). Returns the run's id and what was logged."""
    with _tracking(tracking_uri) as mlflow:
        from mlflow.entities import Metric, Param  # lazy: the mlflow extra

        client = mlflow.MlflowClient()
        try:
            if experiment_id is None:
                name = experiment or DEFAULT_EXPERIMENT
                found = client.get_experiment_by_name(name)
                experiment_id = found.experiment_id if found else client.create_experiment(name)
            run = client.create_run(experiment_id, run_name=run_name, tags=dict(tags or {}))
            run_id = run.info.run_id
            now = int(pd.Timestamp.now(tz="UTC").timestamp() * 1000)
            kept = {k: float(v) for k, v in metrics.items() if v is not None and math.isfinite(v)}
            client.log_batch(
                run_id,
                metrics=[Metric(k, v, now, 0) for k, v in kept.items()],
                params=[Param(k, str(v)[:6000]) for k, v in params.items() if v not in (None, "")],
            )
            for path in artifacts:
                client.log_artifact(run_id, str(path))
            client.set_terminated(run_id)
        except InputError:
            raise
        except Exception as exc:
            raise _fail("log a run", tracking_uri, exc) from None
    report = WriteBack("mlflow run", f"run {run_id} (experiment {experiment_id})",
                       written=len(kept), what="metric", name=ANNOTATION_NAME)  # fmt: skip
    return run_id, report


#: a run's settings logged as the MLflow run's parameters
PARAMS = ("llm", "embeddings", "llm_name", "embeddings_name", "base_url", "mode", "mode_used",
          "strictness", "noncommittal", "prompt_language", "backend")  # fmt: skip


def scoring_params(settings: Mapping[str, Any], source: str = "") -> dict[str, Any]:
    """The parameters of a scoring: backends, mode, strictness... and where the rows came
    from (never a key: the settings a run records have none)."""
    params = {k: settings[k] for k in PARAMS if settings.get(k) not in (None, "")}
    found = settings.get("origin")
    if isinstance(found, Mapping):
        params.update({f"origin_{k}": v for k, v in found.items() if isinstance(v, str)})
    if source:
        params["source"] = source
    return params


def scoring_metrics(
    values: Sequence[float], threshold: float, name: str = ANNOTATION_NAME
) -> dict[str, float]:
    """Mean, its 95% CI, median, the share below ``threshold`` and the row counts."""
    s = summarize(list(values), threshold=threshold)
    metrics = {f"{name}_{k}": s[k] for k in ("mean", "ci_low", "ci_high", "median",
                                             "below_threshold")}  # fmt: skip
    metrics.update({"rows": s["rows"], "scored": s["scored"], "nan": s["nan"]})
    return {k: float(v) for k, v in metrics.items()}
