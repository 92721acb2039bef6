"""``relevancy score --from SOURCE --follow`` (and ``--once``): a live Phoenix project or MLflow
experiment followed into one run that grows, each new trace scored, written back and checked
for alerts (:mod:`relevancy.scoring.follow`)."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from datetime import timedelta
from typing import Any

from relevancy.analysis.alerts import parse_window
from relevancy.cli._values import DAY_SECONDS, number, parse_when, span, whole
from relevancy.cli.options import metric_from_args, run_settings
from relevancy.errors import BackendUnreachable, InputError
from relevancy.io.exporters import origin
from relevancy.io.exporters.mlflow import check_tracking_uri, log_feedback
from relevancy.io.exporters.phoenix import annotate_spans
from relevancy.io.importers.live import LiveSource, is_live_url, open_live_source
from relevancy.io.importers.phoenix_server import DEFAULT_URL, phoenix_client
from relevancy.io.webhook import check_webhook_url, post_alert, webhook_host
from relevancy.runs import RunStore
from relevancy.scoring.config import preflight
from relevancy.scoring.follow import AlertRule, Follower, FollowOptions, Target

__all__ = ["add_follow_options", "wants_follow", "cmd_follow"]


def add_follow_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("following a live project (docs/monitoring.md)")
    g.add_argument(
        "--follow",
        action="store_true",
        help="with --from: keep reading the source, score each new trace as it arrives and "
        "write it back; one run that grows (--save-run names it); Ctrl-C or SIGTERM stops, "
        "and the same command goes on where it stopped",
    )
    g.add_argument(
        "--once",
        action="store_true",
        help="like --follow, but stop when nothing new is left (for cron and CI): exit 1 when "
        "an alert fired or anything asked for did not happen (a row not scored or waiting "
        "for the judge, a score not written, an alert not delivered, a source that did not "
        "answer), each said on a FAIL line",
    )
    g.add_argument(
        "--poll",
        type=number(0, DAY_SECONDS, above=True, unit="seconds"),
        default=5.0,
        metavar="S",
        help="seconds between reads (default 5)",
    )
    g.add_argument(
        "--late",
        type=span,
        default="10m",
        metavar="SPAN",
        help="how long after it started a trace may still arrive (the source stores them "
        "late, or a trace runs long): looked for again this far back (default 10m)",
    )
    g.add_argument(
        "--alert-below",
        type=number(-1, 1),
        default=None,
        metavar="X",
        help="alert when a window's mean relevancy is below X beyond doubt (a one-sided t "
        "bound at 0.25%%); any window also alerts on a drop from the last window with "
        "--min-rows scores (Welch's t at 0.25%%, past a 0.02 margin): at most 0.5%% of windows "
        "alert when nothing changed (docs/monitoring.md#alerts)",
    )
    g.add_argument(
        "--window", type=span, default="1h", metavar="SPAN", help="the alert window (default 1h)"
    )
    g.add_argument(
        "--min-rows",
        type=whole(2, 1_000_000),
        default=10,
        metavar="N",
        help="no alert on a window with fewer scored rows (default 10)",
    )
    g.add_argument(
        "--alert-webhook",
        default=None,
        metavar="URL",
        help="POST each alert as JSON to URL (Slack-compatible 'text'); default "
        "$RELEVANCY_ALERT_WEBHOOK (a webhook's address is a secret: better in the environment "
        "than on a command line)",
    )


def wants_follow(args: argparse.Namespace) -> bool:
    return bool(args.follow or args.once)


def _check_args(args: argparse.Namespace) -> None:
    if args.follow and args.once:
        raise InputError("give --follow or --once, not both")
    if not args.from_url or not is_live_url(args.from_url):
        raise InputError(
            "--follow and --once read a live source: add --from phoenix://HOST:PORT/PROJECT or "
            "--from mlflow+TRACKING_URI#EXPERIMENT"
        )
    unsupported = [
        ("-o/--output", args.output),
        ("--mlflow-run", args.mlflow_run is not None),
        ("--repeats", args.repeats != 1),
        ("--batch-api", args.batch_api),
        ("--engine ray", args.engine == "ray"),
        ("--estimate", args.estimate),
        ("--until", args.until),
    ]
    named = [name for name, given in unsupported if given]
    if named:
        raise InputError(
            f"{', '.join(named)} cannot be used with --follow or --once: a followed run is kept "
            "in the run store (export it from there, or from the dashboard)"
        )
    # the parser checks these (relevancy.cli._values); again here for a Namespace made in code
    if not 0 < args.poll <= DAY_SECONDS:  # also NaN
        raise InputError(f"--poll must be seconds above 0 and at most a day, got {args.poll!r}")
    if args.min_rows < 2:
        raise InputError(f"--min-rows must be 2 or more, got {args.min_rows}")
    # the webhook's address is read now, so that a bad one stops the command before a run is
    # made; an empty RELEVANCY_ALERT_WEBHOOK is no webhook, an empty --alert-webhook a mistake
    hook, named = args.alert_webhook, "--alert-webhook"
    if hook is None and os.environ.get("RELEVANCY_ALERT_WEBHOOK", "").strip():
        hook, named = os.environ["RELEVANCY_ALERT_WEBHOOK"], "RELEVANCY_ALERT_WEBHOOK"
    if hook is not None:
        try:
            check_webhook_url(hook)
        except InputError as exc:
            raise InputError(f"{named}: {exc}") from None


def _targets(args: argparse.Namespace, source: LiveSource, settings: dict[str, Any]) -> list[Any]:
    threshold, name = args.threshold, args.annotation_name
    min_questions = settings.get("min_questions")
    targets = []
    if args.to_phoenix is not None:
        same = source.kind == "phoenix" and (
            not args.to_phoenix or args.to_phoenix == source.where["url"]
        )
        url = args.to_phoenix or (
            source.where["url"] if same else os.environ.get("PHOENIX_BASE_URL") or DEFAULT_URL
        )
        project = source.where["project"] if same else None
        phoenix_client(url)  # one line now when the client is missing
        targets.append(
            Target(
                "phoenix",
                "span_id",
                lambda frames: annotate_spans(
                    frames,
                    url,
                    threshold=threshold,
                    name=name,
                    project=project,
                    min_questions=min_questions,
                ),
            )
        )
    if args.to_mlflow is not None:
        uri = args.to_mlflow or (
            getattr(source, "tracking_uri", None) if source.kind == "mlflow" else None
        )
        check_tracking_uri(uri, must_exist=True)
        targets.append(
            Target(
                "mlflow",
                "trace_id",
                lambda frames: log_feedback(
                    frames, uri, threshold=threshold, name=name, min_questions=min_questions
                ),
            )
        )
    return targets


def _span(text: str, option: str) -> timedelta:
    try:
        return parse_window(text)
    except InputError as exc:
        raise InputError(f"{option}: {exc}") from None


def cmd_follow(args: argparse.Namespace) -> int:
    """Follow ``--from`` into a run of the store; the exit code (see ``--once``)."""
    _check_args(args)
    args.alert_webhook = args.alert_webhook or os.environ.get("RELEVANCY_ALERT_WEBHOOK") or None
    late, window = _span(args.late, "--late"), _span(args.window, "--window")
    source = open_live_source(args.from_url)
    metric = metric_from_args(args, concurrency=args.concurrency, check=False)
    try:
        preflight(metric)
    except BackendUnreachable as exc:  # a follower waits for its judge: rows read wait too
        print(
            f"WARN: {exc}: the traces read meanwhile wait for the judge (said on each step)",
            file=sys.stderr,
        )
    settings = {
        **run_settings(args, metric),
        "origin": origin(source.kind, **source.where),
        "follow": {"source": source.url, "interval": args.poll},
    }
    targets = _targets(args, source, settings)
    store = RunStore(args.store) if args.store else RunStore()
    name = args.save_run or f"follow {source.url}"
    run_id = store.followed_run(source.url, name)
    if run_id is None:
        run_id = store.create_followed_run(name, settings, source.url)
        print(f"run             #{run_id} {name!r} made in {store.path}", file=sys.stderr)
    else:
        cursor = store.follow_cursor(run_id)
        info = store.get_run(run_id)
        print(
            f"run             #{run_id} {name!r} goes on: {info.n_rows:,} rows, read up to "
            f"{cursor.read_to:%Y-%m-%d %H:%M:%S} UTC"
            if cursor.read_to
            else f"run             #{run_id} {name!r} goes on",
            file=sys.stderr,
        )
    alerts = None
    if args.alert_below is not None or args.alert_webhook:
        hook = args.alert_webhook
        label = f"#{run_id} {name}"
        alerts = AlertRule(
            below=args.alert_below,
            window=window,
            min_rows=args.min_rows,
            notify=(lambda check: post_alert(hook, check, run=label)) if hook else None,
        )
    options = FollowOptions(
        interval=args.poll,
        late=late,
        since=parse_when(args.since),
        sweep_every=max(args.poll, min(10 * args.poll, late.total_seconds() / 4, 60.0)),
    )
    what = "once" if args.once else f"every {args.poll:g} s"
    sent = ", ".join(t.name for t in targets) or "nowhere (no --to-phoenix/--to-mlflow)"
    alerting = (
        f"; alerts on {args.window} windows"
        + (f" below {args.alert_below:g}" if args.alert_below is not None else "")
        + (f", posted to {webhook_host(args.alert_webhook)}" if args.alert_webhook else "")
        if alerts
        else ""
    )
    print(
        f"following       {source.url}: read {what}, late traces looked for {args.late} back; "
        f"scores written to {sent}{alerting}",
        file=sys.stderr,
    )
    # one follower per run: a second one is told who holds it (a dead holder is taken over)
    lease = store.take_follow_lease(run_id, ttl=max(300.0, 3 * args.poll + 60.0))
    follower = Follower(
        metric,
        store,
        run_id,
        source,
        options=options,
        targets=targets,
        alerts=alerts,
        say=lambda line: print(line, flush=True),
        lease=lease,
    )
    stop = threading.Event()
    previous = _on_sigterm(stop, follower)
    try:
        totals = follower.run(once=args.once, stop=stop)
    except KeyboardInterrupt:
        totals = follower.totals
        print("stopped: what was scored is in the run", file=sys.stderr)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
        store.drop_follow_lease(lease)
    undone = follower.undone()
    line = (
        f"followed        {totals.new:,} new rows, {totals.scored:,} scored"
        + "".join(f", {n:,} sent to {t}" for t, n in totals.sent.items())
        + (f", {totals.alerts:,} alerts" if totals.alerts else "")
        + (f" ({totals.delivered:,} posted)" if totals.delivered else "")
        + f" · run #{run_id}: the same command goes on from here"
    )
    print(line, file=sys.stderr)
    for what in undone:
        print(("FAIL: " if args.once else "not done: ") + what, file=sys.stderr)
    if args.once:
        return 1 if totals.alerts or undone else 0
    return 0


def _on_sigterm(stop: threading.Event, follower: Follower) -> Any:
    """SIGTERM (systemd's stop) ends the loop: at once between steps, and within a step (a
    judge that keeps the rows waiting could hold it for minutes) by interrupting it as Ctrl-C
    does; what was saved stays (every write is a transaction). The old handler."""
    if threading.current_thread() is not threading.main_thread():
        return None

    def handler(signum: int, frame: Any) -> None:
        stop.set()
        if follower.stepping:
            raise KeyboardInterrupt

    return signal.signal(signal.SIGTERM, handler)
