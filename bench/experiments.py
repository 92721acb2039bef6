"""Experiments (issue 48): answering + scoring under a rate limit, and a run killed and resumed.

**Under a rate limit.** The toy OpenAI-compatible server in its own process answers as two
answer models (``--answer-models``) and judges as its chat and embedding models, with
OpenAI-style limits per model on a faster clock (``--scale 10``: the minute window is 6 s), as
in :mod:`bench.rate_limits`. One experiment (templates x models x questions, no cache) is
answered and scored by :func:`relevancy.experiments.run_experiment`; the server's usage log says
what each model was counted. The answering's ceiling is the most answers a second the limits
allow for the answer models' requests and counted tokens per answer (each model has its own
limits, so the models answer side by side; the slowest decides); the scoring's is
:func:`bench.rate_limits.summarize`'s for the judge's models. Each speed is reported as a share
of its ceiling.

**Killed and resumed.** ``relevancy experiment`` in a child process against the toy server in
this process (which keeps every request it served, with its messages), killed with SIGKILL when
about half the answers are in, then the same command again. Every answer request the server
served is counted by its model, messages and seed: an answer paid for twice is one asked for
again after the kill (its request was in flight: the server answered, the child died before
caching it).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from bench.harness import ROOT, against, fmt, load_average, log, main, r, table
from bench.rate_limits import CHAT, EMBED, summarize
from bench.rows import make_rows
from bench.setups import ToyServer

ANSWER_MODELS = ("toy-a", "toy-b")
TEMPLATES = (
    ("brief", "Answer in one sentence.", "{user_input}"),
    ("detailed", "", "Explain in detail: {user_input}"),
    ("plain", "", "{user_input}"),
)


def _questions(n: int) -> list[str]:
    seen: dict[str, None] = {}
    for row in make_rows(4 * n, seed=11):
        seen.setdefault(row["user_input"], None)
        if len(seen) == n:
            break
    return list(seen)


def answer_ceiling(usage: list[dict[str, Any]], limits: dict[str, Any]) -> dict[str, Any]:
    """The least time the limits allow for the answers the server counted, and the answers a
    second that makes (each answer model by its own limits; the slowest decides)."""
    window, least, answers = limits["window_s"], 0.0, 0
    for model in ANSWER_MODELS:
        served = [u for u in usage if u.get("model") == model and u["status"] == 200]
        if not served:
            continue
        answers += len(served)
        tokens = sum(u.get("counted_tokens") or 0 for u in served) / len(served)
        per_window = min(limits["rpm"], limits["tpm"] / tokens if tokens else math.inf)
        least = max(least, window * (math.ceil(len(served) / per_window) - 1))
    return {"answers": answers, "least_wall_s": r(least)}


def under_limit(args: argparse.Namespace) -> dict[str, Any]:
    """One experiment answered and scored against the rate-limited toy server."""
    import pandas as pd

    from relevancy.backends import forget_controllers
    from relevancy.experiments import AnswerSettings, Plan, Template, make_answerer, run_experiment
    from relevancy.scoring.config import build_metric

    window = 60.0 / args.scale
    limits = {"rpm": args.rpm, "tpm": args.tpm, "window_s": window}
    extra = ["--rpm", str(args.rpm), "--tpm", str(args.tpm), "--limit-window", str(window)]
    extra += ["--answer-models", ",".join(ANSWER_MODELS)]
    plan = Plan(
        [Template(name, user, system) for name, system, user in TEMPLATES],
        list(ANSWER_MODELS),
        pd.DataFrame({"user_input": _questions(args.questions)}),
        AnswerSettings(max_tokens=args.max_tokens),
    )
    with (
        ToyServer(
            latency=args.latency / args.scale,
            token_latency=args.token_latency / args.scale,
            extra=extra,
        ) as server,
        tempfile.TemporaryDirectory(prefix="bench-experiments-") as tmp,
    ):
        log(f"experiments: {plan.size} answers at {args.rpm} RPM / {args.tpm} TPM a model")
        forget_controllers()
        metric = build_metric(
            llm=f"openai:{CHAT}",
            embeddings=f"openai:{EMBED}",
            base_url=server.base_url,
            strictness=3,
            cache=False,
        )
        answerers = {
            m: make_answerer(m, plan.settings, base_url=server.base_url) for m in plan.models
        }
        marks: dict[str, float] = {}

        def answered(_n: int) -> None:
            marks["answered"] = time.perf_counter()

        time.sleep(window + 0.5)  # an empty window
        offset = server.offset()
        start = time.perf_counter()
        done = run_experiment(plan, metric, answerers, Path(tmp) / "out.csv", on_answer=answered)
        end = time.perf_counter()
        usage = server.usage_since(offset)
    answering_s = marks["answered"] - start
    ceiling = answer_ceiling(usage, limits)
    rows = [
        {"value": v if v == v else None, "error": None if v == v else "no score"}
        for v in done.scored.values
    ]
    scoring = summarize(rows, end - marks["answered"], usage, limits)
    return {
        "answers": plan.size,
        "limits": {**limits, "scale": args.scale},
        "answering": {
            "wall_s": r(answering_s),
            "answers_per_s": r(plan.size / answering_s),
            **ceiling,
            "ceiling_answers_per_s": r(plan.size / ceiling["least_wall_s"])
            if ceiling["least_wall_s"]
            else None,
            "of_ceiling": r(ceiling["least_wall_s"] / answering_s)
            if ceiling["least_wall_s"]
            else None,
            "http_429": sum(u["status"] == 429 for u in usage if u.get("model") in ANSWER_MODELS),
            "failed": done.failed_answers,
        },
        "scoring": {
            k: scoring[k]
            for k in (
                "rows_per_s",
                "ceiling_rows_per_s",
                "of_ceiling",
                "least_wall_s",
                "wall_s",
                "http_429",
                "failed_rows",
            )
        },
        "wall_s": r(end - start),
    }


def killed_and_resumed(args: argparse.Namespace) -> dict[str, Any]:
    """``relevancy experiment`` killed with SIGKILL half-way, then run again: the answer
    requests the server served, counted by their content."""
    import pandas as pd

    from relevancy.testing.openai_server import CHAT_MODEL, EMBEDDING_MODEL, OpenAICompatServer

    n = args.kill_questions
    with (
        OpenAICompatServer(latency=args.kill_latency) as srv,
        tempfile.TemporaryDirectory(prefix="bench-experiments-kill-") as tmp,
    ):
        srv.answer_models = ANSWER_MODELS
        folder = Path(tmp)
        pd.DataFrame({"question": _questions(n)}).to_csv(folder / "q.csv", index=False)
        argv = [sys.executable, "-m", "relevancy.cli", "experiment", "--questions", "q.csv"]
        for name, system, user in TEMPLATES:
            argv += ["--prompt", f"{name}={system}\n---\n{user}" if system else f"{name}={user}"]
        for model in ANSWER_MODELS:
            argv += ["--model", model]
        argv += ["--concurrency", str(args.kill_concurrency), "-o", "out.csv", "-q"]
        argv += ["--save-run", "killed", "--store", str(folder / "runs.sqlite3")]
        argv += ["--llm", f"openai:{CHAT_MODEL}", "--embeddings", f"openai:{EMBEDDING_MODEL}"]
        argv += ["--base-url", srv.base_url]
        env = {
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "RELEVANCY_CACHE_DIR": str(folder / "cache"),
        }
        total = len(TEMPLATES) * len(ANSWER_MODELS) * n

        def served() -> list[str]:
            return [
                json.dumps([q["body"]["model"], q["body"]["messages"], q["body"].get("seed")])
                for q in list(srv.requests)
                if q["path"] == "/v1/chat/completions"
                and q["status"] == 200
                and (q["body"] or {}).get("model") in ANSWER_MODELS
            ]

        child = subprocess.Popen(argv, cwd=folder, env=env, stderr=subprocess.DEVNULL)
        try:
            while len(served()) < total // 2:
                if child.poll() is not None:
                    raise RuntimeError("the experiment ended before it was killed")
                time.sleep(0.01)
            child.send_signal(signal.SIGKILL)
        finally:
            child.wait(timeout=60)
        before = len(served())
        started = time.perf_counter()
        again = subprocess.run(argv, cwd=folder, env=env, capture_output=True, text=True)
        resumed_s = time.perf_counter() - started
        if again.returncode != 0:
            raise RuntimeError(f"the resumed run failed: {again.stderr[-500:]}")
        asked = Counter(served())
        from relevancy.runs import RunStore

        run = RunStore(folder / "runs.sqlite3").list_runs()[0]
    return {
        "answers": total,
        "concurrency_per_model": args.kill_concurrency,
        "server_latency_s": args.kill_latency,
        "served_before_kill": before,
        "served_after_resume": sum(asked.values()) - before,
        "served_in_all": sum(asked.values()),
        "distinct_answers_served": len(asked),
        "paid_twice": sum(k - 1 for k in asked.values()),
        "in_flight_at_most": args.kill_concurrency * len(ANSWER_MODELS),
        "resume_wall_s": r(resumed_s),
        "run_rows": run.n_rows,
        "run_scored": run.n_scored,
    }


def measure(args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {"bench": "experiments", "load_average_start": load_average()}
    out["under_limit"] = under_limit(args)
    a, s = out["under_limit"]["answering"], out["under_limit"]["scoring"]
    log(
        f"    answering {a['answers_per_s']} answers/s ({a['of_ceiling']} of ceiling), "
        f"scoring {s['rows_per_s']} rows/s ({s['of_ceiling']} of ceiling)"
    )
    out["killed"] = killed_and_resumed(args)
    k = out["killed"]
    log(f"    killed at {k['served_before_kill']} answers; paid twice: {k['paid_twice']}")
    return out


def tables(fig: dict[str, Any]) -> dict[str, str]:
    u, k = fig["under_limit"], fig["killed"]
    lim, a, s = u["limits"], u["answering"], u["scoring"]
    head = (
        f"**{u['answers']:,} answers** ({len(TEMPLATES)} templates x {len(ANSWER_MODELS)} "
        f"models x {u['answers'] // (len(TEMPLATES) * len(ANSWER_MODELS))} questions) at "
        f"{lim['rpm']} RPM / {lim['tpm']:,} TPM per model, on a clock {lim['scale']:g}x faster "
        f"(the minute window {lim['window_s']:g} s), then each answer scored at strictness 3 "
        f"under the same limits. Load at the start "
        f"{', '.join(str(x) for x in fig['load_average_start'])}."
    )
    speed = table(
        ["step", "per second", "ceiling per second", "of ceiling", "429s", "failed", "wall s"],
        [
            [
                "answering",
                a["answers_per_s"],
                a["ceiling_answers_per_s"],
                a["of_ceiling"],
                a["http_429"],
                a["failed"],
                a["wall_s"],
            ],
            [
                "scoring",
                s["rows_per_s"],
                s["ceiling_rows_per_s"],
                s["of_ceiling"],
                s["http_429"],
                s["failed_rows"],
                s["wall_s"],
            ],
        ],
    )
    kill = table(
        [
            "answers",
            "served before the kill",
            "after",
            "in all",
            "distinct",
            "paid twice",
            "in flight at most",
            "run rows / scored",
        ],
        [
            [
                k["answers"],
                k["served_before_kill"],
                k["served_after_resume"],
                k["served_in_all"],
                k["distinct_answers_served"],
                k["paid_twice"],
                k["in_flight_at_most"],
                f"{k['run_rows']} / {k['run_scored']}",
            ]
        ],
    )
    targets = against(
        [
            (
                "answering, answers/s as a share of its ceiling",
                fmt(a["of_ceiling"], 3),
                "≥ 0.9",
                (a["of_ceiling"] or 0) >= 0.9,
            ),
            (
                "answers paid twice after SIGKILL and resume",
                k["paid_twice"],
                f"≤ in flight at the kill ({k['in_flight_at_most']})",
                k["paid_twice"] <= k["in_flight_at_most"],
            ),
            (
                "every answer served at least once, the run whole",
                k["distinct_answers_served"],
                f"{k['answers']}",
                k["distinct_answers_served"] == k["answers"] and k["run_scored"] == k["answers"],
            ),
        ]
    )
    return {"": head + "\n\n" + speed + "\n\n" + kill, "targets": targets}


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--questions", type=int, default=50, help="questions (x 3 templates x 2)")
    p.add_argument("--rpm", type=int, default=120, help="requests per minute per model")
    p.add_argument("--tpm", type=int, default=100_000, help="tokens per minute per model")
    p.add_argument("--scale", type=float, default=10.0, help="how much faster the clock runs")
    p.add_argument("--latency", type=float, default=0.3, help="seconds per request (unscaled)")
    p.add_argument(
        "--token-latency", type=float, default=0.01, help="seconds per completion token (unscaled)"
    )
    p.add_argument("--max-tokens", type=int, default=120, help="an answer's token cap")
    p.add_argument("--kill-questions", type=int, default=50, help="questions of the kill run")
    p.add_argument("--kill-concurrency", type=int, default=4, help="answers at once per model")
    p.add_argument("--kill-latency", type=float, default=0.02, help="the kill run's seconds")


QUICK = ["--questions", "10", "--kill-questions", "10"]

if __name__ == "__main__":
    raise SystemExit(main("experiments", measure, arguments, quick=QUICK))
