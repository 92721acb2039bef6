"""Throughput of the embedded default against its floor (llama-cpp-python alone).

* **floor**: the same prompts, grammar, seeds, temperature and max_tokens our generator uses,
  sent straight to ``llama_cpp.Llama.create_completion`` (the same loaded model object, same
  n_threads), sequentially, no metric around it: no embedding, no cache, no asyncio.
* **ours**: ``AnswerRelevancy().score_many(rows)`` with a fresh cache folder, default settings
  (concurrency 4). The generator, embedder and cache are wrapped in timing proxies (not edited)
  so the wall clock can be split into generation / embedding / cache / overhead.

Floor and ours run on the same rows in alternating chunks (floor, ours, ours, floor, ...) so
that load from other processes hits both alike. Models are loaded (and warmed) before timing.

``--api-rows`` measures ours against an instantly answering OpenAI-compatible server (the toy
server) at concurrency 1/4/16/64: our own work per row (the runner's ``instant_api`` entry).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from typing import Any

from bench.harness import (
    against,
    chunks,
    facts,
    in_turn,
    load_average,
    log,
    main,
    r,
    row_seconds,
    table,
    vm_hwm_mb,
    vm_rss_mb,
)
from bench.rows import make_rows
from bench.setups import ToyServer
from bench.timing import (
    Intervals,
    TimedEmbedder,
    TimedGenerator,
    TimedSyncGenerator,
    exclusive_split,
    timed_cache,
)

STRICTNESS = 3


def floor_run(gen: Any, rows: list[dict[str, str]]) -> dict[str, Any]:
    """The same completions our generator makes, straight through llama-cpp-python."""
    from llama_cpp import LlamaGrammar

    from relevancy.backends._local_generator import QUESTION_GRAMMAR, _load

    llm, _lock = _load(gen._path, gen.n_ctx, gen.threads)
    per_row: list[float] = []
    questions: list[list[str]] = []
    tokens = {"prompt": 0, "completion": 0}
    start = time.perf_counter()
    for row in rows:
        t0 = time.perf_counter()
        grammar = LlamaGrammar.from_string(QUESTION_GRAMMAR, verbose=False)
        prompt = gen.prompt(row["response"])
        qs = []
        for i in range(STRICTNESS):
            out = llm.create_completion(
                prompt,
                temperature=gen.temperature,
                seed=gen.seed + i,
                grammar=grammar,
                max_tokens=gen.max_tokens,
                stop=["<|im_end|>"],
            )
            qs.append((out["choices"][0].get("text") or "").strip())
            tokens["prompt"] += out["usage"]["prompt_tokens"]
            tokens["completion"] += out["usage"]["completion_tokens"]
        questions.append(qs)
        per_row.append(time.perf_counter() - t0)
    return {
        "wall_s": time.perf_counter() - start,
        "per_row_s": per_row,
        "questions": questions,
        "tokens": tokens,
    }


def ours_run(
    rows: list[dict[str, str]],
    *,
    gen: Any,
    emb: Any,
    cache_dir: str,
    concurrency: int = 4,
) -> dict[str, Any]:
    from relevancy import AnswerRelevancy

    gi, ei, ci = Intervals(), Intervals(), Intervals()
    timed_emb = TimedEmbedder(emb, ei)
    metric = AnswerRelevancy(
        llm=TimedSyncGenerator(gen, gi),
        embeddings=timed_emb,
        cache=timed_cache(cache_dir, ci),
        strictness=STRICTNESS,
        concurrency=concurrency,
    )
    data = [(row["user_input"], row["response"]) for row in rows]
    start = time.perf_counter()
    results = metric.score_many(data)
    wall = time.perf_counter() - start
    return {
        "wall_s": wall,
        "results": results,
        "split": exclusive_split(wall, {"generation": gi, "embedding": ei, "cache": ci}),
        "embed_calls": timed_emb.calls,
        "embed_texts": timed_emb.texts,
        "generation_busy_s": gi.busy(),
        "embedding_busy_s": ei.busy(),
    }


def api_section(n_rows: int, emb: Any) -> dict[str, Any]:
    """Ours with an OpenAI-compatible server that answers instantly (the toy server): what
    is left is our own work per row (HTTP client, embedding, cache, asyncio), at several
    concurrency settings; more rows in flight also means bigger cross-row embedding batches."""
    from relevancy import AnswerRelevancy, make_generator

    out: dict[str, Any] = {"rows": n_rows, "server": "relevancy.testing.openai_server"}
    rows = [(x["user_input"], x["response"]) for x in make_rows(n_rows, seed=4)]
    with ToyServer() as server:
        base = server.base_url
        for conc in (1, 4, 16, 64):
            gi, ei, ci = Intervals(), Intervals(), Intervals()
            gen = make_generator("openai:toy-chat", base_url=base, api_key="sk-bench")
            timed_emb = TimedEmbedder(emb, ei)
            with tempfile.TemporaryDirectory(prefix="bench-thr-api-") as tmp:
                metric = AnswerRelevancy(
                    llm=TimedGenerator(gen, gi),
                    embeddings=timed_emb,
                    cache=timed_cache(tmp, ci),
                    concurrency=conc,
                )
                start = time.perf_counter()
                results = metric.score_many(rows)
                wall = time.perf_counter() - start
            split = exclusive_split(wall, {"embedding": ei, "generation": gi, "cache": ci})
            out[f"c{conc}"] = {
                "wall_s": r(wall),
                "pairs_per_s": r(n_rows / wall, 1),
                "split_s": {k: r(v) for k, v in split.items()},
                "embed_backend_calls": timed_emb.calls,
                "texts_per_embed_call": r(timed_emb.texts / max(1, timed_emb.calls), 1),
                "nan_rows": sum(not x.ok for x in results),
            }
            log(f"  api c={conc}: {wall:.1f} s, {timed_emb.calls} embed calls")
    return out


def compare(rows: list[dict[str, str]], gen: Any, emb: Any, n_chunks: int, tmp: str) -> dict:
    """Floor and ours on ``rows`` in alternating chunks."""
    floor_wall = 0.0
    floor_rows: list[float] = []
    floor_q: list[list[str]] = []
    floor_tokens = {"prompt": 0, "completion": 0}
    ours_wall = 0.0
    split = {"generation": 0.0, "embedding": 0.0, "cache": 0.0, "overhead": 0.0}
    results: list[Any] = []
    embed_calls = embed_texts = 0
    gen_busy = emb_busy = 0.0
    chunk_t: dict[int, dict[str, float]] = {}
    for c, chunk in enumerate(chunks(rows, max(1, n_chunks))):
        for side in in_turn(("floor", "ours"), c):
            if side == "floor":
                f = floor_run(gen, chunk)
                floor_wall += f["wall_s"]
                chunk_t.setdefault(c, {})["floor"] = f["wall_s"]
                floor_rows += f["per_row_s"]
                floor_q += f["questions"]
                for key in floor_tokens:
                    floor_tokens[key] += f["tokens"][key]
                log(f"  chunk {c} floor {f['wall_s']:.1f} s")
            else:
                o = ours_run(chunk, gen=gen, emb=emb, cache_dir=tmp)
                ours_wall += o["wall_s"]
                chunk_t.setdefault(c, {})["ours"] = o["wall_s"]
                results += o["results"]
                for key in split:
                    split[key] += o["split"][key]
                embed_calls += o["embed_calls"]
                embed_texts += o["embed_texts"]
                gen_busy += o["generation_busy_s"]
                emb_busy += o["embedding_busy_s"]
                log(f"  chunk {c} ours  {o['wall_s']:.1f} s")

    # floor and ours sample with the same seeds from the same prompts: same questions?
    ours_q = [[q.question for q in res.questions] for res in results]
    same = sum(a == b for a, b in zip(ours_q, floor_q))
    latencies = [res.timings.get("total_s", float("nan")) for res in results]
    n = len(rows)
    return {
        "rows": n,
        "floor": {
            "wall_s": r(floor_wall),
            "pairs_per_s": r(n / floor_wall),
            **row_seconds(floor_rows),
            "prompt_tokens": floor_tokens["prompt"],
            "completion_tokens": floor_tokens["completion"],
            "llama_calls": n * STRICTNESS,
        },
        "ours": {
            "wall_s": r(ours_wall),
            "pairs_per_s": r(n / ours_wall),
            **row_seconds(latencies),
            "split_s": {k: r(v) for k, v in split.items()},
            "split_pct": {k: r(100 * v / ours_wall, 1) for k, v in split.items()},
            "generation_busy_s": r(gen_busy),
            "embedding_busy_s": r(emb_busy),
            "embed_backend_calls": embed_calls,
            "embed_backend_texts": embed_texts,
            "nan_rows": sum(not res.ok for res in results),
            "questions_identical_to_floor": f"{same}/{n}",
        },
        "ours_over_floor": r(ours_wall / floor_wall),
        # per chunk (floor and ours back to back on the same rows): robust to load bursts
        "ours_over_floor_per_chunk": [r(t["ours"] / t["floor"]) for t in chunk_t.values()],
        "ours_over_floor_median_chunk": r(
            statistics.median(t["ours"] / t["floor"] for t in chunk_t.values())
        ),
        # rows the embedding-only noncommittal check zeroes anyway: their generation
        # could be skipped (floor seconds spent on them, same rows, same order)
        "noncommittal_rows": sum(bool(x.noncommittal) for x in results),
        "floor_share_on_noncommittal_rows": r(
            sum(t for t, x in zip(floor_rows, results) if x.noncommittal) / floor_wall
        ),
        "note": "p50/p95 of ours are per-row latencies inside a batch at concurrency 4 "
        "(rows queue for the one model), the floor's are one row's 3 calls alone",
    }


def measure(args: argparse.Namespace) -> dict[str, Any]:
    """Load the models, then the floor against ours, and the instant API."""
    # llama.cpp's CPU backend uses OpenMP (libgomp). With libgomp's default busy-waiting, a
    # process that calls llama.cpp from one thread slows down several-fold whenever other
    # processes load the cores (RESULTS.md, "OpenMP waiting policy"), while the metric, which
    # calls from several worker threads, falls back to libgomp's throttled waiting. Passive
    # waiting for the whole process puts floor and ours on the same footing; ``--omp-spin``
    # keeps the default. Set before llama.cpp is loaded, which is below.
    if not args.omp_spin:
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    from relevancy.backends import MiniLMEmbedder, SmolLMGenerator
    from relevancy.backends._local_embedder import _session
    from relevancy.backends._local_generator import _load

    rows = make_rows(args.rows)
    load_start = time.perf_counter()
    gen = SmolLMGenerator(in_process=args.generator == "in-process")
    emb = MiniLMEmbedder()
    _load(gen._path, gen.n_ctx, gen.threads)  # the floor's model (in this process)
    _session(emb._path, emb.threads)
    load_s = time.perf_counter() - load_start
    for i in range(3):  # the first calls after loading are slower
        gen.generate(f"Warm-up {i}: water boils at 100 degrees Celsius at sea level.", 3)
    emb.embed(["warm-up"])
    rss_loaded = vm_rss_mb()
    log(f"throughput: {len(rows)} rows, models loaded in {load_s:.1f} s, load {load_average()}")

    out: dict[str, Any] = {
        "bench": "throughput",
        "rows": len(rows),
        "strictness": STRICTNESS,
        "concurrency": 4,
        "threads": {"llama": gen.threads, "onnx": emb.threads},
        "model_load_s": r(load_s),
        "rss_after_load_mb": r(rss_loaded, 1),
        "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY", "libgomp default"),
        "generator": args.generator,
    }
    if rows:
        with tempfile.TemporaryDirectory(prefix="bench-thr-") as tmp:
            out.update(compare(rows, gen, emb, args.chunks, tmp))
    if args.api_rows > 0:
        out["instant_api"] = api_section(args.api_rows, emb)
    out["peak_rss_mb"] = r(vm_hwm_mb(), 1)
    return out


def tables(fig: dict[str, Any]) -> dict[str, str]:
    """The floor against ours, where our time went, the ratio against its goal, the rest."""
    fl, o = fig["floor"], fig["ours"]
    sides = table(
        ["", "wall s", "pairs/s", "p50 row s", "p95 row s"],
        [
            [label, d["wall_s"], d["pairs_per_s"], d["p50_row_s"], d["p95_row_s"]]
            for label, d in (
                ("floor: llama-cpp-python alone", fl),
                ("ours: `AnswerRelevancy().score_many`", o),
            )
        ],
    )
    parts = ("generation", "embedding", "cache", "overhead")
    split = table(
        ["generation", "embedding (outside generation)", "cache", "overhead"],
        [[f"{o['split_s'][k]:,.2f} s ({o['split_pct'][k]:.1f}%)" for k in parts]],
    )
    ratio = against(
        [
            (
                "ours / floor, wall time",
                fig["ours_over_floor"],
                "≤ 1.1",
                fig["ours_over_floor"] <= 1.1,
            ),
            (
                f"median over the {len(fig['ours_over_floor_per_chunk'])} chunk pairs",
                fig["ours_over_floor_median_chunk"],
                "",
                None,
            ),
            ("per chunk", fig["ours_over_floor_per_chunk"], "", None),
            ("NaN rows, ours", o["nan_rows"], "0", o["nan_rows"] == 0),
        ]
    )
    rest = facts(
        [
            (
                "rows, strictness, our concurrency",
                f"{fig['rows']}, {fig['strictness']}, {fig['concurrency']}",
            ),
            (
                "threads: llama.cpp, onnxruntime",
                f"{fig['threads']['llama']}, {fig['threads']['onnx']}",
            ),
            ("OMP_WAIT_POLICY (both sides)", fig.get("omp_wait_policy")),
            ("questions identical to the floor's", o["questions_identical_to_floor"]),
            ("embedding busy in all, s (mostly overlapping generation)", o["embedding_busy_s"]),
            (
                "embedding backend calls / texts",
                f"{o['embed_backend_calls']} / {o['embed_backend_texts']}",
            ),
            ("model load, s", fig["model_load_s"]),
            (
                "RSS after load / peak RSS, MiB",
                f"{fig['rss_after_load_mb']:,.0f} / {fig['peak_rss_mb']:,.0f}",
            ),
            (
                "floor tokens: prompt (most reused from the KV cache) / completion / calls",
                f"{fl['prompt_tokens']} / {fl['completion_tokens']} / {fl['llama_calls']}",
            ),
        ]
    )
    return {"": "\n\n".join([sides, ratio, split, rest])}


def instant_api_tables(fig: dict[str, Any]) -> dict[str, str]:
    """Our own work per row behind an instantly answering server, by concurrency."""
    api = fig["instant_api"]
    keys = ("embedding", "generation", "cache", "overhead")
    rows = [
        [
            k[1:],
            d["pairs_per_s"],
            d["wall_s"],
            *(d["split_s"][x] for x in keys),
            d["embed_backend_calls"],
            d["texts_per_embed_call"],
            d["nan_rows"],
        ]
        for k, d in api.items()
        if isinstance(d, dict)
    ]
    header = [
        "concurrency",
        "pairs/s",
        "wall s",
        "embedding s",
        "generation (HTTP) s",
        "cache s",
        "overhead s",
        "embed calls",
        "texts per call",
        "NaN rows",
    ]
    return {"": f"{api['rows']} rows, MiniLM int8 embeddings.\n\n" + table(header, rows)}


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--chunks", type=int, default=10, help="alternating chunks (default 10)")
    p.add_argument("--api-rows", type=int, default=0, help="rows against the instant API")
    p.add_argument(
        "--omp-spin", action="store_true", help="keep libgomp's default waiting (see measure)"
    )
    p.add_argument(
        "--generator",
        choices=("worker", "in-process"),
        default="worker",
        help="ours with its generator in a worker process (as shipped) or in this process",
    )


if __name__ == "__main__":
    raise SystemExit(
        main("throughput", measure, arguments, rows=200, quick=["--rows", "6", "--chunks", "2"])
    )
