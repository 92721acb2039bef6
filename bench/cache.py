"""First run against cached re-run of the same rows (the SQLite cache of ``relevancy.backends``).

Two set-ups, each with a fresh cache folder; the re-run is a new ``AnswerRelevancy`` on the same
folder (so nothing comes from the first metric's memory):

* **api**: ``--rows`` rows with our OpenAI-compatible backend against the toy server (instant
  answers) and the embedded MiniLM: the generator costs almost nothing here, so the ratio is a
  lower bound for real API models;
* **embedded**: ``--embedded-rows`` rows with the embedded default (SmolLM2 + MiniLM).

Both give first-run and re-run pairs/s, the ratio, and whether the re-run gave the same values
with every row served from the cache.
"""

from __future__ import annotations

import argparse
import math
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.harness import log, main, r, table
from bench.rows import make_rows
from bench.setups import ToyServer
from bench.timing import Intervals, timed_cache


def first_and_rerun(rows: list[tuple[str, str]], make_metric: Any) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-cache-") as tmp:
        seconds, values, cached = {}, {}, 0
        for label in ("first", "rerun"):
            intervals = Intervals()
            metric = make_metric(timed_cache(tmp, intervals))
            start = time.perf_counter()
            results = metric.score_many(rows)
            seconds[label] = time.perf_counter() - start
            seconds[label + "_cache"] = intervals.busy()
            values[label] = [x.value for x in results]
            cached = sum(x.cached for x in results)
            log(f"  {label}: {seconds[label]:.2f} s, {sum(not x.ok for x in results)} NaN rows")
        size_mb = sum(f.stat().st_size for f in Path(tmp).glob("*")) / 2**20
    same = all(
        a == b or (math.isnan(a) and math.isnan(b))
        for a, b in zip(values["first"], values["rerun"])
    )
    n = len(rows)
    return {
        "rows": n,
        "first_s": r(seconds["first"]),
        "rerun_s": r(seconds["rerun"]),
        "first_pairs_per_s": r(n / seconds["first"], 1),
        "rerun_pairs_per_s": r(n / seconds["rerun"], 1),
        "first_over_rerun": r(seconds["first"] / seconds["rerun"], 1),
        "rerun_cache_io_s": r(seconds["rerun_cache"]),
        "rerun_rows_from_cache": f"{cached}/{n}",
        "rerun_values_identical": same,
        "cache_file_mb": r(size_mb, 2),
    }


def measure(args: argparse.Namespace) -> dict[str, Any]:
    """The api set-up, then the embedded one; each a first run and a cached re-run."""
    from relevancy import AnswerRelevancy, make_embedder, make_generator

    out: dict[str, Any] = {"bench": "cache"}
    emb = make_embedder("local")
    emb.embed(["warm-up"])
    if args.rows > 0:
        with ToyServer() as server:
            rows = [(x["user_input"], x["response"]) for x in make_rows(args.rows, seed=2)]
            gen = make_generator("openai:toy-chat", base_url=server.base_url, api_key="sk-bench")
            log(f"cache/api: {len(rows)} rows")
            out["api"] = first_and_rerun(
                rows, lambda cache: AnswerRelevancy(llm=gen, embeddings=emb, cache=cache)
            )
            out["api"]["generator"] = "toy OpenAI-compatible server (instant), MiniLM int8"
    if args.embedded_rows > 0:
        from relevancy.backends import SmolLMGenerator

        local = SmolLMGenerator()
        local.generate("Warm-up: water boils at 100 degrees Celsius.", 1)
        rows = [(x["user_input"], x["response"]) for x in make_rows(args.embedded_rows, seed=3)]
        log(f"cache/embedded: {len(rows)} rows")
        out["embedded"] = first_and_rerun(
            rows, lambda cache: AnswerRelevancy(llm=local, embeddings=emb, cache=cache)
        )
        out["embedded"]["generator"] = "embedded SmolLM2-135M + MiniLM int8"
    return out


def tables(fig: dict[str, Any]) -> dict[str, str]:
    header = [
        "set-up",
        "rows",
        "first s",
        "re-run s",
        "first pairs/s",
        "re-run pairs/s",
        "first / re-run",
        "re-run rows from cache",
        "same values",
        "cache MiB",
    ]
    keys = [
        "rows",
        "first_s",
        "rerun_s",
        "first_pairs_per_s",
        "rerun_pairs_per_s",
        "first_over_rerun",
        "rerun_rows_from_cache",
        "rerun_values_identical",
        "cache_file_mb",
    ]
    rows = [
        [d["generator"], *(f"{d[k]:.1f}x" if k == "first_over_rerun" else d[k] for k in keys)]
        for d in (fig.get("api"), fig.get("embedded"))
        if d
    ]
    return {"": table(header, rows) + f"\n\nPeak RSS {fig.get('peak_rss_mb', 0):,.0f} MiB."}


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--embedded-rows", type=int, default=12, help="rows of the embedded set-up")


if __name__ == "__main__":
    raise SystemExit(
        main("cache", measure, arguments, rows=1000, quick=["--rows", "40", "--embedded-rows", "2"])
    )
