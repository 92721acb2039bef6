"""Scores into MLflow: feedback on the traces the rows came from (``answer_relevancy``: the
score, its rationale, the label), and a run with the scoring's parameters, its metrics (mean,
CI, NaN count...) and artifacts (the scored table, the HTML report), linked to those traces.

The tracking URI is MLflow's own (``http://...``, ``sqlite:///...``, ``databricks``...); None
uses ``MLFLOW_TRACKING_URI`` or MLflow's default. MLflow is imported lazily (the ``mlflow``
extra: ``mlflow-skinny``, plus SQLAlchemy and Alembic for a ``sqlite:///`` store).

What a write-back never does: migrate a store (a database made by another MLflow is refused,
see :mod:`relevancy.io.exporters._mlflow_store`), replace feedback it did not write (a
person's, another judge's: ours is told by its source and ``metadata.source``), or wait long
on a server that went away (each request is bounded, about 30 s with its retries; the first
that fails stops the write-back, and what was not written is counted)."""

from __future__ import annotations

import contextlib
import math
import os
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

import pandas as pd

from relevancy.core.stats import summarize
from relevancy.errors import InputError
from relevancy.io.exporters import (
    ANNOTATION_NAME,
    SOURCE,
    WriteBack,
    explanation,
    row_metadata,
    scored_rows,
)
from relevancy.io.exporters._mlflow_store import check_store

__all__ = [
    "check_tracking_uri",
    "log_feedback",
    "log_run",
    "scoring_params",
    "scoring_metrics",
    "DEFAULT_EXPERIMENT",
    "NOT_FOUND",
    "HTTP_BOUNDS",
]

INSTALL = 'pip install "relevancy[mlflow]"'
DEFAULT_EXPERIMENT = "relevancy"  #: where a run goes when the rows name no experiment
NOT_FOUND = "rows whose trace is not in this tracking store"
#: MLflow's HTTP settings while relevancy talks to a tracking server (where the user has not
#: set them): 3 tries of at most 8 s, 1 s and 2 s apart, so a server that went away is told
#: within about 30 s (MLflow's defaults retry for about 4 minutes a request)
HTTP_BOUNDS = {
    "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "2",
    "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1",
    "MLFLOW_HTTP_REQUEST_TIMEOUT": "8",
}
LINK_BATCH = 100  #: traces linked to a run per request (MLflow's most)
_URI_LOCK = threading.Lock()
#: how the feedback names the run that logged it (MLflow reads it as ``Assessment.run_id``)
SOURCE_RUN_ID = "mlflow.assessment.sourceRunId"


def _mlflow() -> Any:
    try:
        import mlflow  # lazy: the mlflow extra
    except ImportError:
        raise InputError(f"MLflow is not installed: {INSTALL}") from None
    return mlflow


@contextlib.contextmanager
def _tracking(uri: str | None) -> Iterator[Any]:
    """MLflow with its tracking URI set to ``uri`` and its HTTP requests bounded
    (:data:`HTTP_BOUNDS`) for the block; both put back after."""
    mlflow = _mlflow()
    with _URI_LOCK:
        before = os.environ.get("MLFLOW_TRACKING_URI")  # set_tracking_uri keeps it there too
        bounds = {k: v for k, v in HTTP_BOUNDS.items() if k not in os.environ}
        os.environ.update(bounds)
        if uri:
            mlflow.set_tracking_uri(uri)
        try:
            yield mlflow
        finally:
            if uri:
                mlflow.set_tracking_uri(before)  # None: unset, as it was
            for key in bounds:
                os.environ.pop(key, None)


def _where(uri: str | None) -> str:
    if uri:
        return uri
    return os.environ.get("MLFLOW_TRACKING_URI") or "MLflow's default tracking URI"


def _fail(what: str, uri: str | None, exc: Exception) -> InputError:
    return InputError(f"cannot {what} at {_where(uri)} ({_why(exc)})")


def _why(exc: Exception) -> str:
    """The error in a few words: the innermost connection error when there is one."""
    cause = _connection_error(exc) or exc
    text = str(cause).splitlines()[0] if str(cause) else ""
    return f"{type(cause).__name__}: {text[:200]}" if text else type(cause).__name__


def _connection_error(exc: BaseException) -> BaseException | None:
    """The innermost error under ``exc`` that says the server could not be reached or did not
    answer in time (None when it did answer)."""
    found, seen = None, exc
    for _ in range(20):  # a chain of causes is short; a cycle is not followed forever
        if seen is None:
            break
        module = type(seen).__module__.split(".")[0]
        if isinstance(seen, (ConnectionError, TimeoutError)) or module in ("requests", "urllib3"):
            found = seen
        seen = seen.__cause__ or seen.__context__
    return found


def describe_failure(exc: Exception) -> tuple[bool, str]:
    """Whether ``exc`` says the server could not be reached (or did not answer in time), and
    the error in a few words."""
    return _connection_error(exc) is not None, _why(exc)


#: MLflow with its tracking URI set and its HTTP requests bounded, for a block
tracking = _tracking


def _not_found(exc: Exception) -> bool:
    return getattr(exc, "error_code", None) == "RESOURCE_DOES_NOT_EXIST"


def check_tracking_uri(tracking_uri: str | None, *, must_exist: bool) -> None:
    """A one-line :class:`InputError` now when the store at ``tracking_uri`` (or MLflow's
    default) cannot be written as it is (see :func:`_mlflow_store.check_store`), or MLflow is
    not installed; nothing when it can. Writes nothing."""
    with _tracking(tracking_uri) as mlflow:
        check_store(mlflow.get_tracking_uri(), must_exist=must_exist)


def log_feedback(
    chunks: Iterable[pd.DataFrame],
    tracking_uri: str | None = None,
    *,
    threshold: float = 0.5,
    name: str = ANNOTATION_NAME,
    run_id: str | None = None,
    progress: Callable[[int], None] | None = None,
    min_questions: int | None = None,
) -> WriteBack:
    """Log each scored row's score as feedback on its trace (``trace_id`` column): the value
    is the score, the rationale the row's explanation, the metadata its label, reason and
    backends; with ``run_id`` (the MLflow run of this scoring) the feedback names the run and
    the traces are linked to it.

    Feedback relevancy logged before under ``name`` with the same score is left as it is
    (``unchanged``); with another score it is overridden (MLflow keeps the old value, marked
    invalid). A trace where a person overrode our feedback is kept as they left it. A trace
    not in the store is listed in ``failed``; a store that cannot be read or written stops the
    write-back (``stopped``), and the rows left are counted in ``not_tried``. The store is
    checked first (a database made by another MLflow raises a one-line :class:`InputError`
    and nothing is written). ``progress(n)`` is called as rows are done; ``min_questions`` is
    the run's (fewer usable questions: labelled ``incomplete``)."""
    report = WriteBack(
        "mlflow", _where(tracking_uri), what="feedback", name=name, plural="feedback"
    )
    tick = progress or (lambda n: None)
    with _tracking(tracking_uri) as mlflow:
        from mlflow.entities import AssessmentSource  # lazy: the mlflow extra

        uri = mlflow.get_tracking_uri()
        report.where = tracking_uri or uri
        check_store(uri, must_exist=True)
        client = mlflow.MlflowClient()
        linked: list[str] = []
        for trace_id, score, row in scored_rows(chunks, "trace_id", report):
            tick(1)
            if report.stopped:
                report.not_tried += 1
                continue
            source = AssessmentSource(
                source_type="LLM_JUDGE", source_id=str(row.get("llm") or SOURCE)
            )
            metadata = {k: str(v) for k, v in row_metadata(row, threshold, min_questions).items()}
            if run_id:
                metadata["mlflow_run_id"] = metadata[SOURCE_RUN_ID] = run_id
            feedback = {
                "value": score,
                "source": source,
                "rationale": explanation(row, threshold, min_questions),
                "metadata": metadata,
            }
            try:
                trace = client.get_trace(trace_id)
            except Exception as exc:
                if _not_found(exc):
                    report.fail(NOT_FOUND, trace_id)
                else:
                    _stop(report, exc)
                continue
            previous, state = _ours(trace, name, feedback)
            if state == "kept":
                report.keep("a person overrode relevancy's feedback")
                continue
            linked.append(trace_id)
            if state == "same":
                report.unchanged += 1
                continue
            try:
                if previous is not None:  # scored again: the new value overrides the old one
                    mlflow.override_feedback(trace_id=trace_id, assessment_id=previous, **feedback)
                else:
                    mlflow.log_feedback(trace_id=trace_id, name=name, **feedback)
            except Exception as exc:  # a store that cannot be written, a server gone...
                linked.pop()
                _stop(report, exc, trace_id)
                continue
            report.written += 1
        if run_id and linked:
            _link(client, linked, run_id, report)
    return report


def _stop(report: WriteBack, exc: Exception, trace_id: str | None = None) -> None:
    """The store cannot be read or written: stop, count this row, say why once."""
    report.not_tried += 1
    if not report.stopped:
        kind = "did not answer" if _connection_error(exc) else "failed"
        report.stopped = f"{report.where} {kind} ({_why(exc)})"


def _link(client: Any, trace_ids: list[str], run_id: str, report: WriteBack) -> None:
    """Link the traces to the run (``search_traces(run_id=...)`` finds them)."""
    for i in range(0, len(trace_ids), LINK_BATCH):
        try:
            client.link_traces_to_run(trace_ids[i : i + LINK_BATCH], run_id)
        except Exception as exc:
            report.fail(f"traces not linked to run {run_id} ({_why(exc)})", *trace_ids[i:])
            return


def _ours(trace: Any, name: str, feedback: Mapping[str, Any]) -> tuple[str | None, str]:
    """Our earlier feedback ``name`` on ``trace``: ``(id, "same")`` when it holds this score,
    label and rationale, ``(id, "other")`` when not, ``(None, "kept")`` when a person overrode
    it (their value stands), ``(None, "new")`` when there is none."""
    assessments = [a for a in trace.info.assessments or [] if a.name == name]
    ours = {a.assessment_id for a in assessments if (a.metadata or {}).get("source") == SOURCE}
    for a in assessments:
        if a.valid is not False and a.overrides in ours and a.assessment_id not in ours:
            return None, "kept"
    for a in assessments:
        if a.assessment_id in ours and a.valid is not False:
            value = getattr(a, "value", None)
            same = (
                isinstance(value, (int, float))
                and math.isclose(float(value), feedback["value"], rel_tol=0, abs_tol=1e-9)
                and (a.rationale or "") == feedback["rationale"]
                and (a.metadata or {}).get("label") == feedback["metadata"].get("label")
            )
            return a.assessment_id, "same" if same else "other"
    return None, "new"


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

        check_store(mlflow.get_tracking_uri(), must_exist=False)
        run_id = None
        try:
            client = mlflow.MlflowClient()
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
        except Exception as exc:
            if run_id is not None:  # made, then failed: say so in MLflow too (best effort)
                with contextlib.suppress(Exception):
                    client.set_terminated(run_id, status="FAILED")
            raise _fail("log a run", tracking_uri, exc) from None
    report = WriteBack(
        "mlflow run",
        f"run {run_id} (experiment {experiment_id})",
        written=len(kept),
        what="metric",
        name=ANNOTATION_NAME,
    )
    return run_id, report


#: a run's settings logged as the MLflow run's parameters
PARAMS = (
    "llm",
    "embeddings",
    "llm_name",
    "embeddings_name",
    "base_url",
    "mode",
    "mode_used",
    "strictness",
    "noncommittal",
    "prompt_language",
    "backend",
)


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
    metrics = {
        f"{name}_{k}": s[k] for k in ("mean", "ci_low", "ci_high", "median", "below_threshold")
    }
    metrics.update({"rows": s["rows"], "scored": s["scored"], "nan": s["nan"]})
    return {k: float(v) for k, v in metrics.items()}
