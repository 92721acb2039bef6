"""First run against cached re-run of the same rows (the SQLite cache in ``relevancy/backends/cache.py``).

Two set-ups, each with a fresh cache folder; the re-run uses a new ``AnswerRelevancy`` on the
same folder (so nothing comes from the first metric's in-memory memo):

* **api**: ``--rows`` rows (default 1,000) with our OpenAI-compatible backend against the toy
  server ``relevancy.testing.openai_server`` (a subprocess on 127.0.0.1, instant answers) and the
  embedded MiniLM. The generator costs almost nothing here, so the ratio is a *lower bound*
  for real API models, whose calls take far longer than a cache lookup.
* **embedded**: ``--embedded-rows`` rows (default 30) with the embedded default
  (SmolLM2 + MiniLM): what a user of the offline default sees.

Both print first-run and re-run pairs/s, the ratio, and check that the re-run gives the same
values with every row served from the cache. :func:`render` writes the "Cache" section of
``RESULTS.md``.
"""

from __future__ import annotations

import math
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (  # noqa: E402
    Intervals,
    emit,
    fmt,
    load_average,
    log,
    make_rows,
    parser,
    r,
    table,
    timed_cache,
    toy_server,
    vm_hwm_mb,
)


def first_and_rerun(rows: list[tuple[str, str]], make_metric: Any) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-cache-") as tmp:
        timings = {}
        values = {}
        cached = 0
        for label in ("first", "rerun"):
            intervals = Intervals()
            metric = make_metric(timed_cache(tmp, intervals))
            start = time.perf_counter()
            results = metric.score_many(rows)
            timings[label] = time.perf_counter() - start
            timings[label + "_cache_s"] = intervals.busy()
            values[label] = [x.value for x in results]
            if label == "rerun":
                cached = sum(x.cached for x in results)
            nan = sum(not x.ok for x in results)
            log(f"  {label}: {timings[label]:.2f} s, {nan} NaN rows")
        size_mb = sum(f.stat().st_size for f in Path(tmp).glob("*")) / 2**20
    same = all(
        (a == b) or (math.isnan(a) and math.isnan(b))
        for a, b in zip(values["first"], values["rerun"])
    )
    n = len(rows)
    return {
        "rows": n,
        "first_s": r(timings["first"]),
        "rerun_s": r(timings["rerun"]),
        "first_pairs_per_s": r(n / timings["first"], 1),
        "rerun_pairs_per_s": r(n / timings["rerun"], 1),
        "first_over_rerun": r(timings["first"] / timings["rerun"], 1),
        "rerun_cache_io_s": r(timings["rerun_cache_s"]),
        "rerun_rows_from_cache": f"{cached}/{n}",
        "rerun_values_identical": same,
        "cache_file_mb": r(size_mb, 2),
    }


def build_parser() -> Any:
    p = parser(__doc__.splitlines()[0], default_rows=1000)
    p.add_argument("--embedded-rows", type=int, default=30, help="rows for the embedded set-up")
    return p


def measure(args: Any) -> dict[str, Any]:
    """The api set-up, then the embedded one; each a first run and a cached re-run."""
    from relevancy import AnswerRelevancy, make_embedder, make_generator

    out: dict[str, Any] = {"bench": "cache"}
    emb = make_embedder("local")
    emb.embed(["warm-up"])
    log(f"cache: load {load_average()}")

    if args.rows > 0:
        with toy_server() as base:
            rows = [(x["user_input"], x["response"]) for x in make_rows(args.rows, seed=2)]

            def api_metric(cache: Any) -> Any:
                gen = make_generator("openai:toy-chat", base_url=base, api_key="sk-bench")
                return AnswerRelevancy(llm=gen, embeddings=emb, cache=cache)

            log(f"cache/api: {len(rows)} rows")
            out["api"] = first_and_rerun(rows, api_metric)
            out["api"]["generator"] = "toy OpenAI-compatible server (instant), MiniLM int8"

    if args.embedded_rows > 0:
        from relevancy.backends import SmolLMGenerator

        gen = SmolLMGenerator()
        gen.generate("Warm-up: water boils at 100 degrees Celsius.", 1)
        rows = [(x["user_input"], x["response"]) for x in make_rows(args.embedded_rows, seed=3)]

        def local_metric(cache: Any) -> Any:
            return AnswerRelevancy(llm=gen, embeddings=emb, cache=cache)

        log(f"cache/embedded: {len(rows)} rows")
        out["embedded"] = first_and_rerun(rows, local_metric)
        out["embedded"]["generator"] = "embedded SmolLM2-135M + MiniLM int8"
    out["peak_rss_mb"] = r(vm_hwm_mb(), 1)
    return out


def main() -> int:
    args = build_parser().parse_args()
    emit(measure(args), args.json)
    return 0


# ------------------------------------------------------------------------------------------
# RESULTS.md
# ------------------------------------------------------------------------------------------


def render(fig: dict[str, Any], record: dict[str, Any] | None = None) -> str:
    """The "Cache" section of RESULTS.md."""
    rows = []
    for key in ("api", "embedded"):
        d = fig.get(key)
        if d:
            rows.append(
                [
                    d["generator"],
                    d["rows"],
                    d["first_s"],
                    d["rerun_s"],
                    d["first_pairs_per_s"],
                    d["rerun_pairs_per_s"],
                    f"**{fmt(d['first_over_rerun'], 1)}x**",
                    d["rerun_rows_from_cache"],
                    str(d["rerun_values_identical"]),
                    d["cache_file_mb"],
                ]
            )
    return "\n".join(
        [
            "Fresh cache folder; the re-run is a new `AnswerRelevancy` on the same folder.",
            "",
            table(
                [
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
                ],
                rows,
            ),
            "",
            "The toy server answers instantly, so the `api` ratio is a lower bound for a real "
            f"API. Peak RSS {fmt(fig.get('peak_rss_mb'), 0)} MiB.",
        ]
    )


if __name__ == "__main__":
    raise SystemExit(main())
