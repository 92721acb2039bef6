"""``bench.follow``'s lag part: a real Phoenix receives spans at a steady rate, the follower
(``relevancy score --from phoenix://... --follow --to-phoenix``) runs as its own process against
a rate-limited judge, and each span's annotation is watched for (``measure_lag``). The helpers
for a child process's output (``Lines``) and the judge's options (``backends``) serve the
memory part too."""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench.harness import ROOT, log, percentile, r

PROJECT = "bench-follow"
QUESTIONS = (
    "What is the capital of {}?",
    "How do people usually travel around {}?",
    "What food is {} known for?",
    "When is the best season to visit {}?",
    "What language is spoken in {}?",
)
PLACES = ("Portugal", "Japan", "Egypt", "Canada", "Australia", "Italy", "Turkey", "India")


def backends(base_url: str) -> list[str]:
    from relevancy.testing.openai_server import CHAT_MODEL, EMBEDDING_MODEL

    return [
        "--llm",
        f"openai:{CHAT_MODEL}",
        "--embeddings",
        f"openai:{EMBEDDING_MODEL}",
        "--base-url",
        base_url,
    ]


class Lines:
    """A child's output, read in a thread."""

    def __init__(self, proc: subprocess.Popen) -> None:
        self.lines: list[str] = []
        self.thread = threading.Thread(target=self._read, args=(proc,), daemon=True)
        self.thread.start()

    def _read(self, proc: subprocess.Popen) -> None:
        for line in proc.stdout:  # type: ignore[union-attr]
            self.lines.append(line.rstrip("\n"))

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


def _wait(test: Any, what: str, timeout: float, out: Lines | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if test():
            return
        time.sleep(0.2)
    raise RuntimeError(f"waited {timeout:g} s for {what}" + (f":\n{out.text}" if out else ""))


def _stop(proc: subprocess.Popen, out: Lines) -> int:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(30)
    out.thread.join(10)
    return int(proc.returncode)


# --------------------------------------------------------------------------------------------
# lag: a real Phoenix
# --------------------------------------------------------------------------------------------


def _ended_class() -> Any:
    from opentelemetry.sdk.trace import SpanProcessor

    class Ended(_Ended, SpanProcessor):
        pass

    return Ended


class _Ended:
    """An OpenTelemetry span processor that notes each root span's id and end time (ns), and
    when this process finished exporting it (the exporting processor runs before this one)."""

    def __init__(self) -> None:
        self.spans: dict[str, dict[str, float]] = {}
        self.lock = threading.Lock()

    def on_start(self, span: Any, parent_context: Any = None) -> None:
        pass

    def on_end(self, span: Any) -> None:
        if span.parent is not None:
            return
        with self.lock:
            self.spans[f"{span.context.span_id:016x}"] = {
                "end": span.end_time / 1e9,
                "exported": time.time(),
            }

    def shutdown(self) -> None:
        pass

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


class _Watch:
    """Asks Phoenix every ``every`` seconds for the annotations of the spans not seen yet;
    notes when each was first seen, its ``created_at`` and how many annotations it has."""

    def __init__(self, client: Any, project: str, ended: dict[str, Any], every: float) -> None:
        self.client, self.project, self.ended, self.every = client, project, ended, every
        self.seen: dict[str, dict[str, Any]] = {}
        self.counts: dict[str, int] = {}
        self.asks = 0
        self.errors = 0
        self.last_error = ""
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _loop(self) -> None:
        while not self.done.is_set():
            began = time.monotonic()
            waiting = [s for s in list(self.ended) if s not in self.seen]
            for at in range(0, len(waiting), 100):
                part = waiting[at : at + 100]
                try:
                    found = self.client.spans.get_span_annotations(
                        span_ids=part,
                        project_identifier=self.project,
                        include_annotation_names=["answer_relevancy"],
                    )
                except Exception as exc:  # counted and named in the figures
                    self.errors += 1
                    self.last_error = repr(exc)[:300]
                    continue
                self.asks += 1
                now = time.time()
                for a in found:
                    span = a.get("span_id")
                    self.counts[span] = self.counts.get(span, 0) + 1
                    self.seen.setdefault(span, {"seen": now, "created_at": a.get("created_at")})
            self.done.wait(max(0.0, self.every - (time.monotonic() - began)))

    def stop(self) -> None:
        self.done.set()
        self.thread.join(30)


def _created_s(text: Any) -> float | None:
    from datetime import datetime

    if not text:
        return None
    try:
        return datetime.fromisoformat(str(text).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def lag_run(
    phoenix: Any, app: Any, args: argparse.Namespace, poll: float, tmp: Path
) -> dict[str, Any]:
    """One follower at ``--poll poll`` while spans arrive at ``args.rate`` per second."""
    from phoenix.client import Client

    from relevancy.runs import RunStore
    from relevancy.testing.openai_server import OpenAICompatServer

    project = f"{PROJECT}-poll{poll:g}"
    store = tmp / f"runs-poll{poll:g}.sqlite3"
    env = {**os.environ, "RELEVANCY_CACHE_DIR": str(tmp / f"cache-poll{poll:g}")}
    with OpenAICompatServer(rpm=args.rpm, limit_window=args.limit_window) as judge:
        cmd = [
            sys.executable,
            "-m",
            "relevancy.cli",
            "score",
            "--from",
            f"phoenix://127.0.0.1:{phoenix.port}/{project}",
            "--follow",
            "--to-phoenix",
            "--store",
            str(store),
            "--poll",
            f"{poll:g}",
            "--late",
            "10m",
            "--save-run",
            "bench",
            *backends(judge.base_url),
            "-q",
        ]
        log(f"follow lag: --poll {poll:g}, {args.rate:g} spans/s for {args.seconds:g} s")
        proc = subprocess.Popen(
            cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        out = Lines(proc)
        client = Client(base_url=phoenix.base_url)
        try:
            _wait(lambda: "following" in out.text, "the follower to start", 120, out)
            ended_holder: dict[str, Any] = {}  # span id -> its end, noted as it ends
            watch = _Watch(client, project, ended_holder, args.watch_every)
            started = time.time()
            _emit_into(phoenix.collector, project, app.base_url, args, ended_holder)
            offered_s = time.time() - started
            n = len(ended_holder)
            try:
                _wait(lambda: len(watch.seen) >= n, f"{n} annotations", args.drain, None)
                drained = True
            except RuntimeError:
                drained = False
            watch.stop()
        finally:
            code = _stop(proc, out)
        stats = judge.stats()
    run = RunStore(store)
    runs = run.list_runs()
    info = runs[0] if runs else None
    sent = run.sent_counts(info.id).get("phoenix", {}) if info else {}
    lags, by_created, ingest = [], [], []
    for span, when in ended_holder.items():
        seen = watch.seen.get(span)
        ingest.append(when["exported"] - when["end"])
        if seen is None:
            continue
        lags.append(seen["seen"] - when["end"])
        created = _created_s(seen["created_at"])
        if created is not None:
            by_created.append(created - when["end"])
    first_end = min((w["end"] for w in ended_holder.values()), default=0.0)
    last_seen = max((s["seen"] for s in watch.seen.values()), default=first_end)
    created_texts = [str(s["created_at"]) for s in list(watch.seen.values())[:3]]
    return {
        "poll_s": poll,
        "spans": n,
        "offered_spans_per_s": r(n / offered_s, 2) if offered_s else None,
        "annotated": len(watch.seen),
        "drained": drained,
        "annotations_per_span_max": max(watch.counts.values(), default=0),
        "rows_in_run": info.n_rows if info else 0,
        "rows_scored": info.n_scored if info else 0,
        "sent_ok": sent.get("ok", 0),
        "sent_not_ok": sum(v for k, v in sent.items() if k != "ok"),
        "rows_per_s": r((info.n_scored if info else 0) / max(last_seen - first_end, 1e-9), 2),
        "lag_p50_s": r(percentile(lags, 50), 2),
        "lag_p95_s": r(percentile(lags, 95), 2),
        "lag_max_s": r(max(lags), 2) if lags else None,
        "lag_min_s": r(min(lags), 2) if lags else None,
        "lag_created_p50_s": r(percentile(by_created, 50), 2) if by_created else None,
        "lag_created_p95_s": r(percentile(by_created, 95), 2) if by_created else None,
        "created_at_examples": created_texts,
        "export_p95_s": r(percentile(ingest, 95), 3),
        "watch_every_s": args.watch_every,
        "watch_asks": watch.asks,
        "watch_errors": watch.errors,
        "watch_last_error": watch.last_error,
        "rate_limit": f"{args.rpm} requests per {args.limit_window:g} s per model",
        "judge_requests": stats.get("total"),
        "judge_429": _count_429(stats),
        "judge_stats": stats,
        "follower_exit": code,
        "follower_tail": out.lines[-4:],
    }


def _count_429(stats: dict[str, Any]) -> int:
    by_status = stats.get("by_status") or {}
    return int(by_status.get(429, 0) + by_status.get("429", 0))


def _emit_into(
    collector: str, project: str, app_url: str, args: argparse.Namespace, into: dict[str, Any]
) -> None:
    """XX noted into ``into`` as they end (the watch reads it)."""
    import openai
    from openinference.instrumentation.openai import OpenAIInstrumentor
    from phoenix.otel import register

    provider = register(
        endpoint=collector,
        project_name=project,
        batch=False,
        set_global_tracer_provider=False,
        verbose=False,
    )
    noted = _ended_class()()
    noted.spans = into
    provider.add_span_processor(noted, replace_default_processor=False)
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        client = openai.OpenAI(base_url=app_url, api_key="sk-toy", max_retries=0)
        start, n = time.monotonic(), int(args.rate * args.seconds)
        for i in range(n):
            wait = start + i / args.rate - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            q = QUESTIONS[i % len(QUESTIONS)].format(PLACES[(i // len(QUESTIONS)) % len(PLACES)])
            client.chat.completions.create(
                model="toy-chat", messages=[{"role": "user", "content": f"{q} (#{i})"}]
            )
        provider.force_flush()
    finally:
        instrumentor.uninstrument()
        provider.shutdown()


def measure_lag(args: argparse.Namespace) -> list[dict[str, Any]]:
    from relevancy.testing.openai_server import OpenAICompatServer
    from relevancy.testing.tool_servers import PhoenixServer, phoenix_executable

    if phoenix_executable() is None:
        log("follow lag: skipped, no Phoenix server (.venv-phoenix: bash scripts/setup.sh dev)")
        return []
    out = []
    with (
        tempfile.TemporaryDirectory(prefix="bench-follow-") as tmp,
        OpenAICompatServer(text_mode="lines") as app,
        PhoenixServer(Path(tmp) / "phoenix") as phoenix,
    ):
        log(f"follow lag: Phoenix answered after {phoenix.start_s:.1f} s")
        for poll in args.polls:
            got = lag_run(phoenix, app, args, poll, Path(tmp))
            log(
                f"  --poll {poll:g}: {got['annotated']}/{got['spans']} annotated, lag p50 "
                f"{got['lag_p50_s']} s p95 {got['lag_p95_s']} s, 429s {got['judge_429']}"
            )
            out.append(got)
    return out
