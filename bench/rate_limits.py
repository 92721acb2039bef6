"""At the API's limit: ours adaptive and at fixed concurrencies, and Ragas, under a rate limit.

The toy OpenAI-compatible server (its own process) enforces OpenAI-style limits per model
(``--rpm``, ``--tpm``, a sliding window) with its remote-API latency model, on a faster clock:
``--scale 10`` makes the one-minute window 6 s and the latencies a tenth, so 60 RPM / 40k TPM
over 120 rows takes seconds, not minutes, with the same shape. Every side scores the same rows,
no cache, the window emptied between sides; the server's usage log says what each was counted
(OpenAI's admission count: the prompt plus ``max_tokens`` for each of the ``n`` choices), how
many 429s it got, and how many requests and tokens a row took.

A side's ceiling is the most rows per second the limits allow for its requests and tokens per
row (per model: the chat model and the embedding model each have their limits); its speed is
reported as a fraction of that ceiling. The Batch API side submits the same generations as one
batch (the toy's ``--batch-delay``) and embeds live; its cost per row is set against live at
gpt-4o-mini's list prices.
"""

from __future__ import annotations

import argparse
import math
import tempfile
import time
from pathlib import Path
from typing import Any

from bench._rate_limits_tables import tables as tables  # run_all reads bench.rate_limits.tables
from bench.harness import load_average, log, main, r
from bench.rows import make_rows
from bench.setups import ToyServer, ragas, ragas_missing

CHAT, EMBED = "toy-chat", "toy-embed"
STRICTNESS = 3
PRICED_AS = "gpt-4o-mini"


def _metric(base_url: str, cache: Any, concurrency: int | None, adaptive: bool) -> Any:
    from relevancy.backends import forget_controllers
    from relevancy.scoring.config import build_metric

    forget_controllers()  # each side starts afresh
    return build_metric(
        llm=f"openai:{CHAT}",
        embeddings=f"openai:{EMBED}",
        base_url=base_url,
        strictness=STRICTNESS,
        cache=cache,
        concurrency=concurrency,
        adaptive=adaptive,
    )


def ours(rows: list[dict], base_url: str, concurrency: int | None, adaptive: bool) -> dict:
    from relevancy.backends import controllers

    metric = _metric(base_url, False, concurrency, adaptive)
    start = time.perf_counter()
    results = metric.score_many([(x["user_input"], x["response"]) for x in rows])
    wall = time.perf_counter() - start
    snaps = [c.snapshot() for c in controllers()]
    return {
        "wall_s": wall,
        "rows": [{"value": x.value if x.ok else None, "error": x.error} for x in results],
        "retries": sum(s["retries"] for s in snaps),
        "peak_at_once": max(s["peak"] for s in snaps),
        "lowest_at_once": min(s["lowest"] for s in snaps),
    }


def batch(rows: list[dict], base_url: str) -> dict[str, Any]:
    """The generations as one batch, then the scoring (generations from the cache, embeddings
    live): wall time and tokens."""
    import pandas as pd

    from relevancy.scoring.batch_api import run_batch

    with tempfile.TemporaryDirectory(prefix="bench-batch-") as tmp:
        src = Path(tmp) / "rows.csv"
        pd.DataFrame(rows).to_csv(src, index=False)
        metric = _metric(base_url, str(Path(tmp) / "cache"), None, True)
        start = time.perf_counter()
        done = run_batch(metric, src, Path(tmp) / "out.csv", poll=0.5)
        results = metric.score_many([(x["user_input"], x["response"]) for x in rows])
        wall = time.perf_counter() - start
    return {
        "wall_s": wall,
        "usage": done.usage,
        "batch_id": done.batch_id,
        "rows": [{"value": x.value if x.ok else None, "error": x.error} for x in results],
    }


def summarize(rows: list[dict], wall: float, usage: list[dict], limits: dict) -> dict[str, Any]:
    """Speed against the ceiling the limits allow for this side's requests and tokens per row.

    No span of one window may hold more than a window's worth of rows, so ``n`` rows take at
    least ``window * (ceil(n / per_window) - 1)`` (per model; the slowest model decides): a
    window's worth at once, then a window's worth as each window ends. The ceiling is ``n``
    over that time."""
    n = max(len(rows), 1)
    window = limits["window_s"]
    least = 0.0
    for model in (CHAT, EMBED):
        admitted = [u for u in usage if u.get("model") == model and u["status"] == 200]
        if not admitted:
            continue
        per_window = [limits["rpm"] / (len(admitted) / n)]
        tokens = sum(u.get("counted_tokens") or 0 for u in admitted) / n
        if tokens:
            per_window.append(limits["tpm"] / tokens)
        rows_per_window = min(per_window)
        least = max(least, window * (math.ceil(n / rows_per_window) - 1))
    chat = [u for u in usage if u.get("model") == CHAT and u["status"] == 200]
    return {
        "rows": len(rows),
        "wall_s": r(wall),
        "rows_per_s": r(len(rows) / wall) if wall else None,
        # a row lost to 429s is not a score: a side that gives up on rows finishes sooner
        "scored_rows_per_s": r(sum(x["value"] is not None for x in rows) / wall) if wall else None,
        "least_wall_s": r(least),
        "ceiling_rows_per_s": r(n / least) if least else None,
        "of_ceiling": r(least / wall) if least and wall else None,
        "http_429": sum(u["status"] == 429 for u in usage),
        "failed_rows": sum(x["value"] is None for x in rows),
        "chat_requests_per_row": r(len(chat) / n, 2),
        "prompt_tokens_per_row": r(sum(u.get("prompt_tokens", 0) for u in chat) / n, 1),
        "completion_tokens_per_row": r(sum(u.get("completion_tokens", 0) for u in chat) / n, 1),
        "counted_tokens_per_row": r(sum(u.get("counted_tokens") or 0 for u in chat) / n, 1),
        "errors": sorted({(x.get("error") or "")[:120] for x in rows if x.get("error")})[:3],
    }


def _size(text: str) -> tuple[int, int, int]:
    """``ROWS:RPM:TPM`` (``1000:500:200000``)."""
    try:
        rows, rpm, tpm = (int(x) for x in text.split(":"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--size wants ROWS:RPM:TPM, got {text!r}") from None
    return rows, rpm, tpm


def _ragas_sides(args: argparse.Namespace) -> dict[str, tuple[str, Any]]:
    """Ragas at its defaults (every row at once), tuned by hand (the best of a few rows-at-once
    settings), and its ``evaluate()`` with the default ``RunConfig``."""
    sides: dict[str, tuple[str, Any]] = {"Ragas collections (defaults)": ("ragas", 0)}
    for c in (int(x) for x in args.ragas_tuned.split(",") if x.strip()):
        sides[f"Ragas collections, {c} rows at once"] = ("ragas tuned", c)
    if not args.no_evaluate:
        sides["Ragas evaluate() (defaults)"] = ("ragas evaluate", None)
    return sides


def _setting(args: argparse.Namespace, n: int, rpm: int, tpm: int) -> tuple[list, dict, dict]:
    """The rows, the limits and the toy server's options for ``n`` rows at ``rpm`` / ``tpm``."""
    rows = [
        {"user_input": x["user_input"], "response": x["response"]} for x in make_rows(n, seed=5)
    ]
    window = 60.0 / args.scale
    limits = {"rpm": rpm, "tpm": tpm, "window_s": window}
    server = {
        "latency": args.latency / args.scale,
        "token_latency": args.token_latency / args.scale,
        "extra": [
            "--rpm",
            str(rpm),
            "--tpm",
            str(tpm),
            "--limit-window",
            str(window),
            "--batch-delay",
            str(args.batch_delay),
        ],
    }
    return rows, limits, server


def _our_sides(args: argparse.Namespace) -> dict[str, int | None]:
    """Our live sides: adaptive (None), then each fixed concurrency."""
    fixed = [int(x) for x in args.fixed.split(",") if x.strip()]
    return {"ours adaptive": None, **{f"ours fixed {c}": c for c in fixed}}


def _run_ours(rows: list[dict], server: Any, concurrency: int | None, limits: dict) -> dict:
    """One of our live sides, after an empty window, as the server counted it."""
    time.sleep(limits["window_s"] + 0.5)
    offset = server.offset()
    got = ours(rows, server.base_url, concurrency, concurrency is None)
    done = summarize(got["rows"], got["wall_s"], server.usage_since(offset), limits)
    return {**done, **{k: got[k] for k in ("retries", "peak_at_once", "lowest_at_once")}}


def one_size(args: argparse.Namespace, n: int, rpm: int, tpm: int, ragas_ok: bool) -> dict:
    """Every side on ``n`` rows at ``rpm`` / ``tpm`` per model, against one toy server."""
    rows, limits, server_options = _setting(args, n, rpm, tpm)
    window = limits["window_s"]
    out: dict[str, Any] = {
        "rows": len(rows),
        "limits": {**limits, "scale": args.scale},
        "load_average_start": load_average(),
    }
    ragas_sides = _ragas_sides(args) if ragas_ok else {}  # a bad --ragas-tuned fails first
    with ToyServer(**server_options) as server:
        log(
            f"rate_limits: {n} rows at {rpm} RPM / {tpm} TPM, server at {server.base_url}, "
            f"window {window:g} s, load {load_average()}"
        )
        ours(rows[:2], server.base_url, None, True)  # warm-up: imports, connections
        results: dict[str, Any] = {}
        for name, conc in _our_sides(args).items():
            results[name] = _run_ours(rows, server, conc, limits)
            _log_side(name, results[name])
        for name, (kind, conc) in ragas_sides.items():
            time.sleep(window + 0.5)  # an empty window for every side
            offset = server.offset()
            mode = "legacy" if kind == "ragas evaluate" else "collections"
            options = {} if conc is None else {"concurrency": conc}
            got = ragas(
                rows,
                server.base_url,
                mode=mode,
                llm="stock",
                model=CHAT,
                embeddings=f"api:{EMBED}",
                **options,
            )
            results[name] = summarize(
                got["rows"], got["wall_s"], server.usage_since(offset), limits
            )
            _log_side(name, results[name])
        time.sleep(window + 0.5)
        offset = server.offset()
        got = batch(rows, server.base_url)
        used = server.usage_since(offset)
        results["ours --batch-api"] = {
            **summarize(got["rows"], got["wall_s"], used, limits),
            "batch_usage": got["usage"],
        }
    out["sides"] = results
    out["cost"] = _costs(results, len(rows))
    return out


def _log_side(name: str, done: dict[str, Any]) -> None:
    log(
        f"    {name:<36} {done['rows_per_s']} rows/s ({done['of_ceiling']} of ceiling), "
        f"{done['http_429']} 429s, {done['failed_rows']} failed"
    )


def repeated_size(args: argparse.Namespace, n: int, rpm: int, tpm: int) -> dict[str, Any]:
    """Our live sides only (adaptive and each fixed setting), ``args.repeats`` times each, in
    turn, against one toy server: 429s are few and vary from run to run, so a comparison of
    them needs more than one run a side."""
    rows, limits, server_options = _setting(args, n, rpm, tpm)
    sides = _our_sides(args)
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in sides}
    with ToyServer(**server_options) as server:
        ours(rows[:2], server.base_url, None, True)  # warm-up: imports, connections
        for k in range(args.repeats):
            for name, conc in sides.items():
                runs[name].append(_run_ours(rows, server, conc, limits))
                done = runs[name][-1]
                log(
                    f"    run {k + 1} {name:<18} {done['rows_per_s']} rows/s, "
                    f"{done['http_429']} 429s, {done['failed_rows']} failed"
                )
    out: dict[str, Any] = {
        "rows": n,
        "limits": {**limits, "scale": args.scale},
        "runs": args.repeats,
        "sides": {},
    }
    for name, done in runs.items():
        out["sides"][name] = {
            "http_429": [d["http_429"] for d in done],
            "rows_per_s": [d["rows_per_s"] for d in done],
            "of_ceiling": [d["of_ceiling"] for d in done],
            "failed_rows": sum(d["failed_rows"] for d in done),
        }
    return out


def measure(args: argparse.Namespace) -> dict[str, Any]:
    sizes = args.size or [_size(x) for x in DEFAULT_SIZES]
    if args.repeats > 1:  # our sides only, several runs each: the 429 comparison
        return {
            "bench": "rate_limits",
            "repeats": [repeated_size(args, n, rpm, tpm) for n, rpm, tpm in sizes],
        }
    missing = ragas_missing(minilm=False) if not args.no_ragas else "--no-ragas"
    out: dict[str, Any] = {
        "bench": "rate_limits",
        "strictness": STRICTNESS,
        "server": {
            "latency_s": args.latency,
            "token_latency_s": args.token_latency,
            "batch_delay_s": args.batch_delay,
        },
        "load_average_start": load_average(),
    }
    if missing:
        out["ragas_skipped"] = missing
        log("rate_limits: Ragas' sides skipped:", missing)
    out["sizes"] = [one_size(args, n, rpm, tpm, not missing) for n, rpm, tpm in sizes]
    return out


def _costs(results: dict[str, Any], n: int) -> dict[str, Any]:
    """Generation dollars per row at gpt-4o-mini's list price: live (the adaptive side's tokens)
    against the Batch API (its own tokens at half price)."""
    from relevancy.analysis.cost import price_for
    from relevancy.scoring.batch_api import BATCH_DISCOUNT

    price = price_for(f"openai:{PRICED_AS}")
    assert price is not None
    live = results["ours adaptive"]
    batch_usage = results["ours --batch-api"]["batch_usage"]
    completion = live.get("completion_tokens_per_row")
    live_row = (
        live["prompt_tokens_per_row"] * price.input + (completion or 0) * price.output
    ) / 1e6
    batch_row = (
        BATCH_DISCOUNT
        * (
            batch_usage["prompt_tokens"] * price.input
            + batch_usage["completion_tokens"] * price.output
        )
        / 1e6
        / n
    )
    return {
        "priced_as": PRICED_AS,
        "live_per_row": live_row,
        "batch_per_row": batch_row,
        "batch_over_live": r(batch_row / live_row) if live_row else None,
    }


DEFAULT_SIZES = ("120:60:40000", "1000:500:200000")


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--size",
        type=_size,
        action="append",
        metavar="ROWS:RPM:TPM",
        help=f"rows and limits per model (repeat; default {' and '.join(DEFAULT_SIZES)})",
    )
    p.add_argument("--scale", type=float, default=10.0, help="how much faster the clock runs")
    p.add_argument("--latency", type=float, default=0.3, help="seconds per request (unscaled)")
    p.add_argument(
        "--token-latency", type=float, default=0.01, help="seconds per completion token (unscaled)"
    )
    p.add_argument("--batch-delay", type=float, default=5.0, help="the toy batch's seconds")
    p.add_argument("--fixed", default="4,16,60", help="fixed concurrencies of ours")
    p.add_argument("--no-ragas", action="store_true", help="skip Ragas' sides")
    p.add_argument(
        "--ragas-tuned",
        default="2,4,8",
        help="Ragas' rows-at-once settings tried by hand ('' for none)",
    )
    p.add_argument("--no-evaluate", action="store_true", help="skip Ragas' evaluate()")
    p.add_argument(
        "--repeats",
        type=int,
        default=1,
        help="above 1: only our live sides, this many runs each (the 429 "
        "comparison), in place of the other figures",
    )


QUICK = ["--size", "20:60:40000", "--fixed", "4", "--no-ragas", "--batch-delay", "1"]

if __name__ == "__main__":
    raise SystemExit(main("rate_limits", measure, arguments, quick=QUICK))
