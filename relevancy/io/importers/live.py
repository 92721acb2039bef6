"""Live sources for ``relevancy score --follow``: a Phoenix project's root spans
(``phoenix://HOST:PORT/PROJECT``) or an MLflow experiment's traces
(``mlflow+TRACKING_URI#EXPERIMENT``, e.g. ``mlflow+http://127.0.0.1:5000#support-bot`` or
``mlflow+sqlite:////srv/mlflow.db#support-bot``), read through each tool's own client a time
window at a time.

:meth:`LiveSource.read` returns the question/answer rows of the traces that started in
``[start, end)``, each with its key in the source (span or trace id) and its start time, read
the way the file importers read an export. A source that does not answer raises
:class:`SourceDown` (the follower waits and tries again); a source that cannot be read as asked
(no such experiment, a store made by another MLflow) raises :class:`InputError`.
"""

from __future__ import annotations

import inspect
import logging
import math
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any
from urllib.parse import urlsplit

import pandas as pd

from relevancy.core.redact import redact
from relevancy.errors import InputError, RelevancyError
from relevancy.io.exporters.mlflow import check_tracking_uri, describe_failure, tracking
from relevancy.io.importers.mlflow import mlflow_traces
from relevancy.io.importers.phoenix import phoenix
from relevancy.io.importers.phoenix_server import (
    describe_error,
    parse_phoenix_url,
    phoenix_client,
)
from relevancy.io.importers.report import ImportReport

__all__ = ["LiveSource", "LiveRows", "SourceDown", "open_live_source", "is_live_url"]

#: spans or traces asked for in one request; a window that has more is read in halves
PAGE = 500
#: a window is not halved below this (spans that started in the same millisecond)
_SMALLEST_S = 0.001


class SourceDown(RelevancyError):
    """The source did not answer (or answered with a server error): wait, then try again."""


@dataclass
class LiveRows:
    """What one read found: the rows (``user_input``, ``response`` and the trace's fields),
    each row's key and start time (epoch seconds, None when the source gave none), and how
    many traces were passed over (not finished, no question or answer)."""

    frame: pd.DataFrame
    keys: list[str] = field(default_factory=list)
    times: list[float | None] = field(default_factory=list)
    report: ImportReport = field(default_factory=ImportReport)
    pending: int = 0  #: traces still running (read again later)
    note: str = ""  #: a state of the source worth saying once ("no such project yet")


class LiveSource:
    """A source of traces that grows: :meth:`read` a window of start times."""

    url: str = ""  #: what the run records as its source (no secrets)
    kind: str = ""  #: "phoenix" or "mlflow"
    key_column: str = ""  #: the column of a row's key: span_id or trace_id
    where: dict[str, str]  #: the origin a run records (url and project, or uri and experiment)

    def read(self, start: datetime, end: datetime) -> LiveRows:  # pragma: no cover - abstract
        raise NotImplementedError

    def _rows(self, frame: pd.DataFrame, report: ImportReport, pending: int = 0) -> LiveRows:
        keys: list[str] = []
        times: list[float | None] = []
        keep: list[int] = []
        time_column = "start_time" if self.kind == "phoenix" else "request_time"
        for i, (key, when) in enumerate(
            zip(
                frame.get(self.key_column, pd.Series([None] * len(frame))),
                frame.get(time_column, pd.Series([None] * len(frame))),
            )
        ):
            if key is None or (isinstance(key, float) and math.isnan(key)):
                report.skip("trace", f"without a {self.key_column}")
                continue
            keep.append(i)
            keys.append(str(key))
            times.append(_epoch(when))
        rows = frame.iloc[keep].reset_index(drop=True) if len(keep) < len(frame) else frame
        return LiveRows(rows, keys, times, report, pending)


def _epoch(value: Any) -> float | None:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    try:
        stamp = pd.Timestamp(value)
    except (ValueError, TypeError):
        return None
    if stamp is pd.NaT:
        return None
    if stamp.tzinfo is None:
        stamp = stamp.tz_localize("UTC")
    return float(stamp.timestamp())


class PhoenixLive(LiveSource):
    """A Phoenix project's root spans, through ``arize-phoenix-client``."""

    kind = "phoenix"
    key_column = "span_id"

    def __init__(self, url: str, *, timeout: int = 10) -> None:
        self.source = parse_phoenix_url(url)
        self.url = self.source.url
        self.where = {"url": self.source.base_url, "project": self.source.project}
        self.timeout = timeout
        self._client = phoenix_client(self.source.base_url)
        self._project_seen = False

    def read(self, start: datetime, end: datetime) -> LiveRows:
        report = ImportReport(format="phoenix", label="Phoenix spans", keep_unanswered=True)
        frames = [f for f in self._spans(start, end) if len(f)]
        if not frames:
            empty = pd.DataFrame(columns=["user_input", "response"])
            return LiveRows(empty, report=report, note=self._check_server())
        spans = pd.concat(frames) if len(frames) > 1 else frames[0]
        records = spans.reset_index(drop=True).to_dict(orient="records")
        return self._rows(phoenix(records, report, roots_only=True), report)

    def _check_server(self) -> str:
        """When a read finds nothing: whether the server is Phoenix (a web page reads as no
        spans; :class:`InputError` then) and has the project (a note while it has not)."""
        if self._project_seen:
            return ""
        try:
            projects = self._client.projects.list()
        except Exception as exc:
            status = getattr(getattr(exc, "response", None), "status_code", None)
            if status is None and not isinstance(exc, ValueError):  # refused, timed out
                raise SourceDown(f"{self.url} did not answer: {describe_error(exc)}") from None
            raise InputError(
                f"{self.url} does not answer as a Phoenix server does ({describe_error(exc)}): "
                "check the address and the port"
            ) from None
        names = {str(p.get("name")) for p in projects} | {str(p.get("id")) for p in projects}
        if self.source.project in names:
            self._project_seen = True
            return ""
        return (
            f"{self.url}: the server has no project {self.source.project!r} yet (its first span "
            "makes it): waiting for it"
        )

    def _spans(self, start: datetime, end: datetime) -> list[pd.DataFrame]:
        """The window's root spans; a window holding a page or more is read in two halves."""
        from phoenix.client.types.spans import SpanQuery  # lazy: the phoenix extra

        quiet = logging.getLogger("phoenix.client.resources.spans")
        level = quiet.level
        quiet.setLevel(logging.ERROR)
        try:
            frame = self._client.spans.get_spans_dataframe(
                query=SpanQuery().where("parent_id is None"),
                project_identifier=self.source.project,
                start_time=start,
                end_time=end,
                limit=PAGE,
                timeout=self.timeout,
            )
        except Exception as exc:  # httpx errors: refused, timed out, a 5xx...
            status = getattr(getattr(exc, "response", None), "status_code", None)
            if status == 404:  # the project is made with its first span
                return []
            if status is not None and status < 500:
                raise InputError(
                    f"cannot read spans from {self.url}: {describe_error(exc)}"
                ) from None
            raise SourceDown(f"{self.url} did not answer: {redact(describe_error(exc))}") from None
        finally:
            quiet.setLevel(level)
        if frame is None:
            return []
        if len(frame) >= PAGE and (end - start).total_seconds() > _SMALLEST_S:
            middle = start + (end - start) / 2
            return self._spans(start, middle) + self._spans(middle, end)
        return [frame]


class MlflowLive(LiveSource):
    """An MLflow experiment's traces, through MLflow's client (``search_traces``)."""

    kind = "mlflow"
    key_column = "trace_id"

    def __init__(self, url: str) -> None:
        uri, experiment = parse_mlflow_url(url)
        self.tracking_uri, self.experiment = uri, experiment
        self.url = redact(url)
        self.where = {"uri": redact(uri), "experiment": experiment}
        self._experiment_id: str | None = None

    def read(self, start: datetime, end: datetime) -> LiveRows:
        # the store is checked first: a client of another MLflow would migrate it on open
        check_tracking_uri(self.tracking_uri, must_exist=True)
        try:
            with tracking(self.tracking_uri) as mlflow:  # its HTTP retries bounded
                return self._read(mlflow.MlflowClient(tracking_uri=self.tracking_uri), start, end)
        except RelevancyError:
            raise
        except Exception as exc:
            connection, why = describe_failure(exc)
            if connection:
                raise SourceDown(f"{self.url} did not answer: {redact(why)}") from None
            raise InputError(f"cannot read traces from {self.url}: {redact(why)}") from None

    def _read(self, client: Any, start: datetime, end: datetime) -> LiveRows:
        report = ImportReport(format="mlflow", label="MLflow traces", keep_unanswered=True)
        if self._experiment_id is None:
            self._experiment_id = self._find_experiment(client)
        if self._experiment_id is None:  # made with its first trace
            return LiveRows(pd.DataFrame(columns=["user_input", "response"]), report=report)
        lo, hi = int(start.timestamp() * 1000), int(end.timestamp() * 1000)
        records, pending, token = [], 0, None
        while True:
            page = client.search_traces(
                **self._where(client),
                filter_string=f"timestamp_ms >= {lo} AND timestamp_ms < {hi}",
                max_results=PAGE,
                order_by=["timestamp_ms ASC"],
                page_token=token,
            )
            for trace in page:
                state = str(getattr(trace.info, "state", "") or "").upper()
                if state.endswith("IN_PROGRESS"):
                    pending += 1  # read again once it is done
                    continue
                records.append(trace.to_dict())
            token = getattr(page, "token", None)
            if not token:
                break
        frame = mlflow_traces(records, report)
        return self._rows(frame, report, pending)

    def _where(self, client: Any) -> dict[str, list[str]]:
        """The experiment to search, in the words of this client (``locations`` since MLflow
        3.5, ``experiment_ids`` before)."""
        takes = inspect.signature(client.search_traces).parameters
        key = "locations" if "locations" in takes else "experiment_ids"
        return {key: [str(self._experiment_id)]}

    def _find_experiment(self, client: Any) -> str | None:
        found = client.get_experiment_by_name(self.experiment)
        if found is not None:
            return str(found.experiment_id)
        if self.experiment.isdigit():
            try:
                return str(client.get_experiment(self.experiment).experiment_id)
            except Exception:
                return None
        return None


def parse_mlflow_url(url: str) -> tuple[str, str]:
    """``mlflow+TRACKING_URI#EXPERIMENT`` as (tracking URI, experiment name or id)."""
    body, _, experiment = url.partition("#")
    uri = body[len("mlflow+") :] if body.startswith("mlflow+") else ""
    if not uri or not experiment.strip() or not urlsplit(uri).scheme:
        raise InputError(
            f"{redact(url)!r} is not an MLflow experiment: write mlflow+TRACKING_URI#EXPERIMENT, "
            "e.g. mlflow+http://127.0.0.1:5000#support-bot or "
            "mlflow+sqlite:////srv/mlflow.db#support-bot"
        )
    return uri, experiment.strip()


def is_live_url(url: str) -> bool:
    return url.startswith(("phoenix://", "phoenixs://", "mlflow+"))


def open_live_source(url: str) -> LiveSource:
    """The live source ``url`` names (``phoenix://...`` or ``mlflow+URI#EXPERIMENT``)."""
    if url.startswith("mlflow+"):
        return MlflowLive(url)
    if url.startswith(("phoenix://", "phoenixs://")):
        return PhoenixLive(url)
    raise InputError(
        f"{redact(url)!r} cannot be followed: give phoenix://HOST:PORT/PROJECT or "
        "mlflow+TRACKING_URI#EXPERIMENT"
    )


def utc_now() -> datetime:
    return datetime.now(timezone.utc)
