"""Spans read from a running Phoenix server, through its client (``arize-phoenix-client``, the
``phoenix`` extra): ``relevancy score --from phoenix://HOST:PORT/PROJECT``.

Only root spans are fetched (each trace's question and answer are there), in an optional time
window, and written as the span frame Phoenix's own client gives (Parquet), which the Phoenix
importer then reads like any export."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from relevancy.errors import InputError

__all__ = [
    "PhoenixSource",
    "parse_phoenix_url",
    "fetch_spans",
    "phoenix_client",
    "write_span_frame",
    "describe_error",
]

DEFAULT_URL = "http://localhost:6006"
INSTALL = 'pip install "relevancy[phoenix]"'


@dataclass(frozen=True)
class PhoenixSource:
    """Where spans are read from: the server's address and the project."""

    base_url: str
    project: str

    @property
    def url(self) -> str:
        """``phoenix://HOST:PORT/PROJECT`` (what ``--from`` takes, and the run records)."""
        return f"phoenix://{urlsplit(self.base_url).netloc}/{self.project}"


def parse_phoenix_url(url: str) -> PhoenixSource:
    """``phoenix://HOST:PORT/PROJECT`` (``phoenixs://`` for HTTPS) as a :class:`PhoenixSource`;
    a one-line :class:`InputError` for anything else."""
    parts = urlsplit(url)
    project = parts.path.strip("/")
    if parts.scheme not in ("phoenix", "phoenixs") or not parts.netloc or not project:
        raise InputError(
            f"{url!r} is not a Phoenix project: write phoenix://HOST:PORT/PROJECT, e.g. "
            "phoenix://localhost:6006/default (phoenixs:// for HTTPS)"
        )
    scheme = "https" if parts.scheme == "phoenixs" else "http"
    return PhoenixSource(f"{scheme}://{parts.netloc}", project)


def phoenix_client(base_url: str) -> Any:
    """Phoenix's client for ``base_url`` (its API key, if any, from ``PHOENIX_API_KEY``)."""
    try:
        from phoenix.client import Client  # lazy: the phoenix extra
    except ImportError:
        raise InputError(f"Phoenix's client is not installed: {INSTALL}") from None
    return Client(base_url=base_url, api_key=os.environ.get("PHOENIX_API_KEY") or None)


def fetch_spans(
    source: PhoenixSource,
    path: str | os.PathLike[str],
    *,
    since: datetime | None = None,
    until: datetime | None = None,
    limit: int = 100_000,
) -> int:
    """The project's root spans (started in ``[since, until)``) written to ``path`` (Parquet);
    the number of spans. A one-line :class:`InputError` when the server cannot be read, or is
    not Phoenix (the client reads a web page as no spans: the server's projects are asked for
    then, to tell the two apart)."""
    import logging  # the client's warning of a page that is not spans is said below, in one line

    client = phoenix_client(source.base_url)
    from phoenix.client.types.spans import SpanQuery  # lazy: the phoenix extra

    quiet = logging.getLogger("phoenix.client.resources.spans")
    level = quiet.level
    quiet.setLevel(logging.ERROR)
    try:
        frame = client.spans.get_spans_dataframe(
            query=SpanQuery().where("parent_id is None"),
            project_identifier=source.project,
            start_time=since,
            end_time=until,
            limit=limit,
        )
    except Exception as exc:  # httpx errors, a project that is not there...
        raise InputError(f"cannot read spans from {source.url}: {_why(exc)}") from None
    finally:
        quiet.setLevel(level)
    if frame is None or not len(frame):
        try:
            client.projects.list()
        except Exception as exc:
            raise InputError(
                f"{source.url} does not answer as a Phoenix server does ({_why(exc)}): check "
                "the address and the port"
            ) from None
        window = "" if since is None and until is None else " in that time window"
        raise InputError(f"{source.url} has no spans{window}: check the project's name")
    write_span_frame(frame, path)
    return len(frame)


def write_span_frame(frame: Any, path: str | os.PathLike[str]) -> None:
    """Phoenix's span frame as Parquet, whatever it holds: a column of nested values Arrow cannot
    write (the empty ``attributes`` of OpenInference's "First Token Stream Event" in ``events``,
    lists of mixed shapes) is written as JSON text, which the Phoenix importer reads back."""
    try:
        frame.to_parquet(Path(path))
        return
    except Exception:  # pyarrow: ArrowNotImplementedError, ArrowInvalid, ArrowTypeError
        pass
    safe = frame.copy()
    for column in safe.columns:
        if safe[column].dtype == object and safe[column].map(_nested).any():
            safe[column] = safe[column].map(_as_json)
    safe.to_parquet(Path(path))


def _nested(value: Any) -> bool:
    return isinstance(value, (list, dict, tuple)) or hasattr(value, "tolist")


def _as_json(value: Any) -> Any:
    if not _nested(value):
        return value
    plain = value.tolist() if hasattr(value, "tolist") else value
    return json.dumps(plain, default=str, ensure_ascii=False)


def describe_error(exc: Exception) -> str:
    """An error of Phoenix's client in a few words (see :func:`_why`)."""
    return _why(exc)


def _why(exc: Exception) -> str:
    """An exception in a few words (an HTTP error's status, a refused connection...)."""
    response = getattr(exc, "response", None)
    status = getattr(response, "status_code", None)
    if status == 404:
        return "no such project (HTTP 404)"
    if status is not None:
        return f"HTTP {status}"
    if isinstance(exc, json.JSONDecodeError):
        return f"its answer is not JSON: {exc.doc[:40].strip()!r}..."
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return f"{type(exc).__name__}: {text[:160]}"
