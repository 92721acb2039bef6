"""Following a live project (``relevancy score --from phoenix://... --follow``, issue 37): how
long a span waits for its score, and the follower's memory as its run grows.

``lag``: a real Phoenix server (``.venv-phoenix``) receives root spans at a steady rate, each
made by the real OpenAI SDK, instrumented by OpenInference, asking a toy "app" server, and
exported when it ends (``phoenix.otel.register(batch=False)``). The follower runs as its own
process, ``relevancy score --from phoenix://HOST:PORT/PROJECT --follow --to-phoenix --poll S``,
scoring with a second toy server that enforces a rate limit per model (requests per window).
This process asks Phoenix for the spans' ``answer_relevancy`` annotations every
``--watch-every`` seconds; a span's lag is the time its annotation was first seen minus the
span's end time (the one clock of this machine). Run once per ``--polls`` value.

``memory``: the follower over ``--memory-rows`` followed rows, in a process of its own that
samples its resident memory after every step. The source is synthetic (a ``LiveSource`` whose
rows "arrive" at ``--memory-rate`` per second, read by start-time window like Phoenix's), the
scores go over HTTP to the toy server in this process, and a write-back target that accepts
every score stands for Phoenix: what is measured is our follower's memory (store, reads,
scoring, sending, alert windows), not Phoenix's. A real Phoenix on two cores ingests and
ingests 100-200 bulk-sent spans a second: 20,000 through it would not fit the bench's budget
(RESULTS.md).

The lag part's machinery is in ``bench/_follow_lag.py``; the memory part, the tables and the
options are here.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench._follow_lag import Lines, backends, measure_lag
from bench.harness import ROOT, RssSampler, log, main, percentile, r, table, vm_rss_mb

# --------------------------------------------------------------------------------------------
# memory: a synthetic source, the follower in a process of its own
# --------------------------------------------------------------------------------------------


def memory_child(spec: dict[str, Any]) -> None:
    """The follower over a synthetic source (runs in its own process); one JSON line per step."""
    from datetime import datetime, timedelta, timezone

    import pandas as pd

    from bench.rows import make_rows
    from relevancy.cli import make_parser
    from relevancy.cli.options import metric_from_args
    from relevancy.io.exporters import WriteBack
    from relevancy.io.importers.live import LiveRows, LiveSource
    from relevancy.io.importers.report import ImportReport
    from relevancy.runs import RunStore
    from relevancy.scoring.follow import AlertRule, Follower, FollowOptions, Target

    total, rate = int(spec["rows"]), float(spec["rate"])
    pool = make_rows(min(total, 5000))

    class Synthetic(LiveSource):
        """Row ``i`` starts at ``t0 + i / rate`` and can be read once that time has come."""

        url = "synthetic://bench"
        kind = "phoenix"
        key_column = "span_id"
        where = {"url": "synthetic://bench", "project": "bench"}

        def __init__(self) -> None:
            self.t0 = time.time()
            self.reads = 0
            self.rows_read = 0

        def read(self, start: datetime, end: datetime) -> LiveRows:
            lo = max(0, int((start.timestamp() - self.t0) * rate) - 1)
            hi = min(total, int((end.timestamp() - self.t0) * rate) + 1)
            idx = [
                i
                for i in range(lo, hi)
                if start.timestamp() <= self.t0 + i / rate < end.timestamp()
            ]
            records = []
            for i in idx:
                row = pool[i % len(pool)]
                records.append(
                    {
                        "user_input": row["user_input"],
                        "response": f"{row['response']} (Case {i}.)",
                        "span_id": f"{i:016x}",
                        "start_time": datetime.fromtimestamp(self.t0 + i / rate, timezone.utc),
                    }
                )
            self.reads += 1
            self.rows_read += len(records)
            frame = pd.DataFrame(
                records, columns=["user_input", "response", "span_id", "start_time"]
            )
            return self._rows(frame, ImportReport(format="phoenix", label="synthetic spans"))

    sent = {"n": 0}

    def accept(frames: list[pd.DataFrame]) -> WriteBack:
        n = sum(len(f) for f in frames)
        sent["n"] += n
        return WriteBack(tool="phoenix", where="bench", written=n)

    args = make_parser("score").parse_args(
        ["score", "--from", "phoenix://127.0.0.1:1/bench", "--follow"]
        + backends(spec["base_url"])
        + ["-q", "--cache-dir", spec["cache"]]
    )
    metric = metric_from_args(args, concurrency=args.concurrency, check=False)
    store = RunStore(spec["store"])
    source = Synthetic()
    run_id = store.create_followed_run("bench", {}, source.url)
    poll, late = float(spec["poll"]), timedelta(minutes=10)
    follower = Follower(
        metric,
        store,
        run_id,
        source,
        options=FollowOptions(
            interval=poll,
            late=late,
            sweep_every=max(poll, min(10 * poll, late.total_seconds() / 4, 60.0)),
        ),
        targets=[Target("phoenix", "span_id", accept)],
        alerts=AlertRule(below=0.2, window=timedelta(minutes=1), min_rows=10),
        say=lambda line: None,
    )
    began = time.monotonic()
    scored = 0
    while scored < total and time.monotonic() - began < float(spec["limit_s"]):
        t = time.monotonic()
        report = follower.step()
        scored += report.scored
        line = {
            "t": r(time.monotonic() - began, 2),
            "step_s": r(time.monotonic() - t, 3),
            "read": report.read,
            "new": report.new,
            "scored": scored,
            "sent": sent["n"],
            "checks": len(report.checks),
            "rss_mb": r(vm_rss_mb(), 1),
        }
        print(json.dumps(line), flush=True)
        if not report.busy:
            time.sleep(poll)
    info = store.get_run(run_id)
    print(
        json.dumps(
            {
                "final": True,
                "rows_in_run": info.n_rows,
                "rows_scored": info.n_scored,
                "sent": sent["n"],
                "sent_ok": store.sent_counts(run_id).get("phoenix", {}).get("ok", 0),
                "reads": source.reads,
                "rows_read": source.rows_read,
                "store_mb": r(Path(spec["store"]).stat().st_size / 2**20, 1),
            }
        ),
        flush=True,
    )


def measure_memory(args: argparse.Namespace) -> dict[str, Any]:
    from relevancy.testing.openai_server import OpenAICompatServer

    rows = args.memory_rows
    if not rows:
        return {}
    log(f"follow memory: {rows:,} rows arriving at {args.memory_rate:g}/s")
    with (
        tempfile.TemporaryDirectory(prefix="bench-follow-mem-") as tmp,
        OpenAICompatServer() as judge,
    ):
        spec = {
            "rows": rows,
            "rate": args.memory_rate,
            "poll": 1.0,
            "base_url": judge.base_url,
            "store": str(Path(tmp) / "runs.sqlite3"),
            "cache": str(Path(tmp) / "cache"),
            "limit_s": args.memory_limit,
        }
        code = (
            "import json; from bench.follow import memory_child; "
            f"memory_child(json.loads({json.dumps(spec)!r}))"
        )
        proc = subprocess.Popen(
            [sys.executable, "-c", code],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        out = Lines(proc)

        def scored() -> dict[str, Any]:  # the rows the child had scored at the sample
            last = _last_step(out.lines)
            return {"scored": last.get("scored", 0) if last else 0}

        with RssSampler(proc.pid, args.memory_every, extra=scored) as sampler:
            proc.wait()
        samples = sampler.samples
        out.thread.join(10)
        requests = len(judge.requests)
    steps = [json.loads(x) for x in out.lines if x.startswith("{") and '"t"' in x]
    final = next((json.loads(x) for x in out.lines if x.startswith('{"final"')), {})
    if proc.returncode != 0 or not steps:
        log(out.text[-3000:])
    marks = [m for m in (1000, 5000, 10000, 15000, 20000, rows) if m <= rows]
    at = []
    for mark in sorted(set(marks)):
        step = next((s for s in steps if s["scored"] >= mark), None)
        if step is None:
            continue
        before = [s["rss_mb"] for s in steps if s["scored"] <= mark]
        at.append(
            {
                "rows": mark,
                "t_s": step["t"],
                "rss_mb": step["rss_mb"],
                "max_rss_so_far_mb": max(before + [step["rss_mb"]]),
                "step_s": step["step_s"],
            }
        )
    slow = sorted(s["step_s"] for s in steps if s["scored"])
    return {
        "rows": rows,
        "arrival_per_s": args.memory_rate,
        "steps": len(steps),
        "wall_s": steps[-1]["t"] if steps else None,
        "rows_per_s": r(steps[-1]["scored"] / steps[-1]["t"], 1) if steps else None,
        "at": at,
        "sampled_every_s": args.memory_every,
        "sampled_max_rss_mb": sampler.highest(),
        "step_s_p50": r(percentile(slow, 50), 3) if slow else None,
        "step_s_max": r(max(slow), 3) if slow else None,
        "judge_requests": requests,
        "final": final,
        "exit": proc.returncode,
        "samples": samples[:: max(1, len(samples) // 200)],
    }


def _last_step(lines: list[str]) -> dict[str, Any] | None:
    for line in reversed(lines[-5:]):
        if line.startswith('{"t"'):
            try:
                return json.loads(line)
            except ValueError:
                return None
    return None


# --------------------------------------------------------------------------------------------


def measure(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "bench": "follow",
        "lag": measure_lag(args) if args.seconds > 0 else [],
        "memory": measure_memory(args),
    }


def tables(fig: dict[str, Any]) -> dict[str, str]:
    lag_rows = [
        [
            f"{d['poll_s']:g}",
            d["spans"],
            d["offered_spans_per_s"],
            d["rows_per_s"],
            f"{d['annotated']} / {d['rows_in_run']} / {d['sent_ok']}",
            d["lag_p50_s"],
            d["lag_p95_s"],
            d["lag_max_s"],
            d["rate_limit"],
            f"{d['judge_429']} / {d['judge_requests']}",
        ]
        for d in fig.get("lag", [])
    ]
    lag = table(
        [
            "--poll s",
            "spans",
            "spans/s offered",
            "rows/s scored",
            "annotated / rows in run / sent ok",
            "lag p50 s",
            "lag p95 s",
            "lag max s",
            "judge's rate limit",
            "429s / judge requests",
        ],
        lag_rows,
    )
    mem = fig.get("memory") or {}
    mem_rows = [
        [d["rows"], d["t_s"], d["rss_mb"], d["max_rss_so_far_mb"], d["step_s"]]
        for d in mem.get("at", [])
    ]
    memory = table(
        ["rows scored", "at s", "RSS MiB", "highest RSS so far MiB", "that step s"],
        mem_rows,
        digits=1,
    )
    final = mem.get("final") or {}
    memory += (
        f"\n\n{fmt_int(mem.get('rows'))} rows arriving at {mem.get('arrival_per_s')}/s; "
        f"{fmt_int(final.get('rows_in_run'))} in the run, {fmt_int(final.get('rows_scored'))} "
        f"scored, {fmt_int(final.get('sent_ok'))} sent; {mem.get('rows_per_s')} rows/s; "
        f"{mem.get('steps')} steps (median {mem.get('step_s_p50')} s, longest "
        f"{mem.get('step_s_max')} s); RSS sampled every {mem.get('sampled_every_s')} s from "
        f"outside: highest {mem.get('sampled_max_rss_mb')} MiB."
    )
    return {"": lag, "memory": memory}


def fmt_int(value: Any) -> str:
    return f"{value:,}" if isinstance(value, int) else str(value)


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--rate", type=float, default=2.0, help="spans per second (default 2)")
    p.add_argument("--seconds", type=float, default=150.0, help="seconds of spans (default 150)")
    p.add_argument(
        "--polls", type=float, nargs="+", default=[1.0, 5.0], help="--poll values (default 1 5)"
    )
    p.add_argument(
        "--rpm", type=int, default=5, help="the judge's requests per window per model (5)"
    )
    p.add_argument(
        "--limit-window", type=float, default=1.0, help="the judge's limit window, s (1)"
    )
    p.add_argument(
        "--watch-every", type=float, default=0.25, help="seconds between annotation asks (0.25)"
    )
    p.add_argument(
        "--drain", type=float, default=90.0, help="seconds to wait for the last annotations"
    )
    p.add_argument(
        "--memory-rows", type=int, default=20000, help="rows followed for memory (20000; 0: none)"
    )
    p.add_argument(
        "--memory-rate", type=float, default=60.0, help="synthetic arrivals per second (60)"
    )
    p.add_argument(
        "--memory-every", type=float, default=2.0, help="seconds between RSS samples (2)"
    )
    p.add_argument(
        "--memory-limit", type=float, default=900.0, help="the memory run's longest seconds"
    )


if __name__ == "__main__":
    raise SystemExit(
        main(
            "follow",
            measure,
            arguments,
            quick=["--seconds", "20", "--polls", "1", "--memory-rows", "1500"],
        )
    )
