"""``relevancy score``'s Phoenix and MLflow options: spans read from a Phoenix server
(``--from phoenix://HOST:PORT/PROJECT``), and the scores written back when the run is done
(``--to-phoenix``, ``--to-mlflow``, ``--mlflow-run``)."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from relevancy.cli._values import parse_when, when
from relevancy.errors import InputError, RelevancyError
from relevancy.io import iter_table
from relevancy.io.exporters import ANNOTATION_NAME, WriteBack
from relevancy.io.exporters.mlflow import (
    check_tracking_uri,
    log_feedback,
    log_run,
    scoring_metrics,
    scoring_params,
)
from relevancy.io.exporters.phoenix import annotate_spans
from relevancy.io.importers.phoenix_server import (
    DEFAULT_URL,
    fetch_spans,
    parse_phoenix_url,
    phoenix_client,
)
from relevancy.runs import RunStore

__all__ = [
    "add_tool_options",
    "Source",
    "open_source",
    "wants_write_back",
    "check_write_back",
    "write_back",
]


def add_tool_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("Phoenix and MLflow")
    g.add_argument(
        "--from",
        dest="from_url",
        metavar="SOURCE",
        help="score the root spans of a Phoenix project, read through its client: "
        'phoenix://HOST:PORT/PROJECT (instead of INPUT; pip install "relevancy[phoenix]"; '
        "API key from $PHOENIX_API_KEY); with --follow or --once, also an MLflow experiment's "
        "traces: mlflow+TRACKING_URI#EXPERIMENT",
    )
    g.add_argument(
        "--since",
        type=when,
        metavar="WHEN",
        help="with --from: spans started at or after "
        "WHEN (ISO 8601 time, or a span back from now: 30m, 24h, 7d)",
    )
    g.add_argument(
        "--until", type=when, metavar="WHEN", help="with --from: spans started before WHEN"
    )
    g.add_argument(
        "--to-phoenix",
        nargs="?",
        const="",
        default=None,
        metavar="URL",
        help="annotate each scored span in Phoenix (score, label, explanation); URL default: "
        f"--from's server, else $PHOENIX_BASE_URL, else {DEFAULT_URL}",
    )
    g.add_argument(
        "--to-mlflow",
        nargs="?",
        const="",
        default=None,
        metavar="URI",
        help="log each score as feedback on the MLflow trace its row came from (needs a "
        "trace_id column); URI: the tracking URI (default $MLFLOW_TRACKING_URI)",
    )
    g.add_argument(
        "--mlflow-run",
        nargs="?",
        const="",
        default=None,
        metavar="EXPERIMENT",
        help="log an MLflow run: parameters (backends, mode), metrics (mean, CI, NaN count), "
        "artifacts (the scored table, the HTML report); in EXPERIMENT, else the traces' own, "
        "else 'relevancy'; at --to-mlflow's URI, else $MLFLOW_TRACKING_URI",
    )
    g.add_argument(
        "--annotation-name",
        default=ANNOTATION_NAME,
        metavar="NAME",
        help=f"the name scores are written under (default {ANNOTATION_NAME})",
    )


@dataclass
class Source:
    """What ``relevancy score`` reads: a file, or spans fetched from Phoenix into one."""

    path: str
    name: str  #: what the run records as its source
    where: dict[str, str] = field(default_factory=dict)  #: the origin's url/project, if any


def open_source(args: argparse.Namespace, stack: contextlib.ExitStack) -> Source:
    """INPUT, or the spans ``--from`` names fetched into a temporary Parquet file."""
    for option, value in (
        ("--to-phoenix", args.to_phoenix),
        ("--to-mlflow", args.to_mlflow),
        ("--mlflow-run", args.mlflow_run),
    ):
        if value and not args.input and Path(value).exists():  # argparse took INPUT as the value
            raise InputError(
                f"{value!r} reads as {option}'s value: put the file to score before {option}"
            )
    if args.from_url is None:
        if args.since or args.until:
            raise InputError("--since and --until go with --from phoenix://HOST:PORT/PROJECT")
        if not args.input:
            raise InputError("give a file to score, or --from phoenix://HOST:PORT/PROJECT")
        return Source(args.input, Path(args.input).name)
    if args.input:
        raise InputError(f"give INPUT or --from, not both ({args.input!r} and {args.from_url!r})")
    if args.from_url.startswith("mlflow+"):
        raise InputError(
            "an MLflow experiment is read as it grows: add --once (what is there now) or "
            "--follow (and what comes)"
        )
    source = parse_phoenix_url(args.from_url)
    since, until = parse_when(args.since), parse_when(args.until)
    folder = stack.enter_context(tempfile.TemporaryDirectory(prefix="relevancy-phoenix-"))
    path = Path(folder) / f"{source.project}.parquet"
    n = fetch_spans(source, path, since=since, until=until)
    print(f"phoenix         {n:,} root spans read from {source.url}", file=sys.stderr)
    args.source_format = "phoenix"
    return Source(str(path), source.url, {"url": source.base_url, "project": source.project})


def wants_write_back(args: argparse.Namespace) -> bool:
    return any(v is not None for v in (args.to_phoenix, args.to_mlflow, args.mlflow_run))


def temporary_store(args: argparse.Namespace, stack: contextlib.ExitStack) -> RunStore | None:
    """A store for the HTML report of ``--mlflow-run`` when the run is not saved anyway."""
    if args.mlflow_run is None or args.save_run or args.store:
        return None
    folder = stack.enter_context(tempfile.TemporaryDirectory(prefix="relevancy-report-"))
    return RunStore(Path(folder) / "runs.sqlite3")


def check_write_back(args: argparse.Namespace) -> None:
    """Before anything is scored: the write-back's client is installed and a local MLflow store
    can be written as it is (the same checks run again when the scores are sent)."""
    if args.to_phoenix is not None:
        phoenix_client(args.to_phoenix or DEFAULT_URL)  # a one-line error without the client
    if args.to_mlflow is not None or args.mlflow_run is not None:
        check_tracking_uri(args.to_mlflow or None, must_exist=args.to_mlflow is not None)


def write_back(
    args: argparse.Namespace,
    run: Any,
    settings: dict[str, Any],
    store: RunStore | None,
    source: Source,
) -> int:
    """Send the scores where ``--to-phoenix``, ``--to-mlflow`` and ``--mlflow-run`` say, with a
    progress bar; one line each. 0 when every scored row's score got there, 1 otherwise (each
    reason a score was not written gets a line; the scores stay in the output file)."""
    if not wants_write_back(args):
        return 0

    def chunks() -> Any:
        return iter_table(
            run.out, normalize=False, source_format="table", chunk_rows=args.chunk_rows
        )

    name, threshold, failed = args.annotation_name, args.threshold, 0
    origin = settings.get("origin") or {}
    mlflow_uri = args.to_mlflow or None
    run_id = None
    if args.mlflow_run is not None:
        try:
            experiment_id = _experiment_of(chunks()) if not args.mlflow_run else None
            with contextlib.ExitStack() as stack:
                artifacts = [run.out, *_report(run, store, threshold, stack)]
                run_id, done = log_run(
                    mlflow_uri,
                    experiment=args.mlflow_run or None,
                    experiment_id=experiment_id,
                    run_name=args.save_run or f"relevancy {source.name}",
                    params=scoring_params(settings, source.name),
                    metrics=scoring_metrics(run.values.tolist(), threshold, name),
                    artifacts=artifacts,
                    tags={"relevancy.source": source.name},
                )
            print(
                f"mlflow run      {done.written} metrics and {len(artifacts)} artifacts logged "
                f"as {done.where}"
            )
        except RelevancyError as exc:
            failed += _failed(exc, run)
    targets: list[tuple[str, Any]] = []
    if args.to_phoenix is not None:
        url = args.to_phoenix or origin.get("url") or os.environ.get("PHOENIX_BASE_URL")
        same_server = not args.to_phoenix or args.to_phoenix == origin.get("url")
        project = origin.get("project") if same_server else None
        targets.append(
            (
                "phoenix",
                lambda tick: annotate_spans(
                    chunks(),
                    url or DEFAULT_URL,
                    threshold=threshold,
                    name=name,
                    project=project,
                    progress=tick,
                    min_questions=settings.get("min_questions"),
                ),
            )
        )
    if args.to_mlflow is not None:
        targets.append(
            (
                "mlflow",
                lambda tick: log_feedback(
                    chunks(),
                    mlflow_uri,
                    threshold=threshold,
                    name=name,
                    run_id=run_id,
                    progress=tick,
                    min_questions=settings.get("min_questions"),
                ),
            )
        )
    for label, send in targets:
        try:
            with _bar(args, label, int(np.isfinite(run.values).sum())) as bar:
                done: WriteBack = send(bar.update)
        except RelevancyError as exc:
            failed += _failed(exc, run)
            continue
        print(f"{label:<15} {done.describe()}")
        if not done.ok:
            failed += 1
            for line in done.problems():
                print(f"FAIL: {label}: {line}", file=sys.stderr)
            print(
                f"FAIL: {done.n_failed:,} of {done.n_failed + done.written + done.unchanged:,}"
                f" scores not written to {done.where}; the scores are in {run.out} "
                f"(run the same command again to send what is missing: every row comes from "
                "the cache)",
                file=sys.stderr,
            )
    return 1 if failed else 0


def _bar(args: argparse.Namespace, label: str, total: int) -> Any:
    from tqdm import tqdm

    return tqdm(
        total=total,
        unit="row",
        desc=label,
        file=sys.stderr,
        disable=args.quiet,
        dynamic_ncols=True,
        leave=False,
    )


def _failed(exc: Exception, run: Any) -> int:
    print(
        f"error: {exc}; the scores are in {run.out} (run the same command again to retry: "
        "every row comes from the cache)",
        file=sys.stderr,
    )
    return 1


def _experiment_of(chunks: Any) -> str | None:
    """The MLflow experiment the rows' traces are in (their ``experiment_id`` column)."""
    for chunk in chunks:
        if "experiment_id" in chunk.columns:
            found = chunk["experiment_id"].dropna().astype(str)
            return str(found.iloc[0]) if len(found) else None
        return None
    return None


def _report(run: Any, store: RunStore | None, threshold: float, stack: Any) -> list[Path]:
    """The run's HTML report as a file, when the run is in a store and the dashboard extra
    (plotly) is installed; otherwise none, and a note says why."""
    if store is None or run.run_id is None:
        return []
    try:  # lazy: an optional import (the report needs plotly, from the dashboard extra)
        from relevancy.report.html import build_report
    except ImportError:
        print(
            'note: no HTML report in the MLflow run: pip install "relevancy[dashboard]"',
            file=sys.stderr,
        )
        return []
    folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="relevancy-report-")))
    path = folder / f"{Path(run.out).stem}.report.html"
    path.write_text(build_report(store, run.run_id, threshold=threshold), encoding="utf-8")
    return [path]
