"""Throughput of the embedded default against its floor (llama-cpp-python alone).

* **floor**: the same prompts, grammar, seeds, temperature and max_tokens our generator uses,
  sent straight to ``llama_cpp.Llama.create_completion`` (the same loaded model object, same
  n_threads), sequentially, no metric around it: no embedding, no cache, no asyncio.
* **ours**: ``AnswerRelevancy().score_many(rows)`` with a fresh cache folder, default settings
  (concurrency 4). The generator, embedder and cache are wrapped in timing proxies (not edited)
  so the wall clock can be split into generation / embedding / cache / overhead.

Floor and ours run on the same rows in alternating chunks (floor, ours, ours, floor, ...) so
that load from other processes hits both alike. Models are loaded (and warmed) before timing.

Optional ``--variants`` measure possible speed-ups without editing the library: settings a
user can already pass, or bench-side wrappers. Generator-level variants run the library
generator and the variant on the same rows, order alternating row by row, and compare the
scores they lead to; metric-level ones run ``score_many`` default and variant in alternating
chunks:

``gt1``            llama.cpp with 1 thread instead of 2
``inproc``         the generator in this process instead of its worker process (run with
                   ``--generator worker``, the default: the worker's own cost)
``c1``             concurrency=1
``rowlock``        one row's N samples back to back (a lock around the whole row), so
                   llama.cpp reuses the row's prompt in its KV cache for samples 2..N
``et1``            embedder with 1 onnxruntime thread (less contention with llama.cpp)
``inproc_m``       ``inproc`` at the metric level

``--generator in-process`` runs our generator in this process instead of its worker process
(the default, as shipped); ``--extra-bufts on`` loads the in-process model with llama.cpp's
extra buffer types, as before the AMX fix (``bench/amx.py`` compares them).

``--api-rows`` adds ours against an instantly answering OpenAI-compatible server
(``relevancy.testing.openai_server``) at concurrency 1/4/16/64: our own per-row work.

:func:`render` writes the "Throughput" section of ``RESULTS.md``, :func:`render_speedups` the
"Speed-ups tried" one (this script with ``--rows 0 --variants ... --api-rows ...``).
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (  # noqa: E402
    Intervals,
    TimedEmbedder,
    TimedGenerator,
    TimedSyncGenerator,
    emit,
    exclusive_split,
    fmt,
    load_average,
    log,
    make_rows,
    parser,
    percentile,
    r,
    table,
    timed_cache,
    toy_server,
    vm_hwm_mb,
    vm_rss_mb,
)

STRICTNESS = 3


class RowLocked(TimedSyncGenerator):
    """Generates a row's N samples without letting another row's samples in between."""

    _row_lock = threading.Lock()

    async def agenerate(self, response: str, n: int) -> Any:
        import asyncio

        def run() -> Any:
            with self._row_lock:
                start = time.perf_counter()
                try:
                    return self.inner.generate(response, n)
                finally:
                    self.intervals.add(start, time.perf_counter())

        return await asyncio.to_thread(run)


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
    wrapper: type = TimedSyncGenerator,
) -> dict[str, Any]:
    from relevancy import AnswerRelevancy

    gi, ei, ci = Intervals(), Intervals(), Intervals()
    timed_emb = TimedEmbedder(emb, ei)
    metric = AnswerRelevancy(
        llm=wrapper(gen, gi),
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
    with toy_server() as base:
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


GENERATOR_VARIANTS = {
    "gt1": "llama.cpp with 1 thread instead of 2 (SmolLMGenerator(threads=1))",
    "inproc": "the generator in this process, not its worker (SmolLMGenerator(in_process=True))",
}
METRIC_VARIANTS = {
    "c1": "concurrency=1 instead of 4",
    "rowlock": "a row's N samples back to back (no other row's sample in between)",
    "et1": "embedder with 1 onnxruntime thread (MiniLMEmbedder(threads=1))",
    "inproc_m": "the generator in this process, not its worker (SmolLMGenerator(in_process=True))",
}
RUNNABLE_VARIANTS = {**GENERATOR_VARIANTS, **METRIC_VARIANTS}


def make_variant(name: str) -> Any:
    """The generator of a generator-level variant, warmed up."""
    from relevancy.backends._local_generator import SmolLMGenerator

    assert name in GENERATOR_VARIANTS, name
    variant = SmolLMGenerator(threads=1) if name == "gt1" else SmolLMGenerator(in_process=True)
    variant.generate("Warm-up.", 1)
    return variant


def generator_ab(
    name: str, gen: Any, variant: Any, rows: list[dict[str, str]], emb: Any
) -> dict[str, Any]:
    """The library generator against a variant, row by row (order alternating per row), so
    both see the same load; then the score each would give (same MiniLM, no noncommittal)."""
    import numpy as np

    from relevancy import cosine_similarities, relevancy_score

    t = {"default": 0.0, "variant": 0.0}
    qs: dict[str, list[list[str | None]]] = {"default": [], "variant": []}
    for i, row in enumerate(rows):
        order = (("default", gen), ("variant", variant))
        for label, g in order if i % 2 == 0 else order[::-1]:
            start = time.perf_counter()
            got = g.generate(row["response"], STRICTNESS)
            t[label] += time.perf_counter() - start
            qs[label].append([x.question if x.usable else None for x in got.generations])
    scores: dict[str, list[float]] = {"default": [], "variant": []}
    for label in scores:
        for row, q in zip(rows, qs[label]):
            usable = [x for x in q if x]
            if not usable:
                scores[label].append(float("nan"))
                continue
            vec = emb.embed([row["user_input"], *usable])
            sims = cosine_similarities(vec[1:], vec[0])
            scores[label].append(relevancy_score(sims.tolist(), [False] * len(usable)))
    a, b = np.array(scores["default"]), np.array(scores["variant"])
    ok = ~np.isnan(a) & ~np.isnan(b)
    same = sum(x == y for qa, qb in zip(qs["default"], qs["variant"]) for x, y in zip(qa, qb))
    total = len(rows) * STRICTNESS
    return {
        "what": GENERATOR_VARIANTS[name],
        "level": "generator, interleaved per row",
        "default_s": r(t["default"]),
        "variant_s": r(t["variant"]),
        "variant_over_default": r(t["variant"] / t["default"]),
        "usable_questions": {
            k: f"{sum(x is not None for q in v for x in q)}/{total}" for k, v in qs.items()
        },
        "questions_identical_to_default": f"{same}/{total}",
        "mean_score": {"default": r(np.nanmean(a)), "variant": r(np.nanmean(b))},
        "mean_abs_score_diff": r(float(np.abs(a[ok] - b[ok]).mean())) if ok.any() else None,
    }


def metric_ab(
    name: str, rows: list[dict[str, str]], *, gen: Any, emb: Any, tmp: str
) -> dict[str, Any]:
    """``AnswerRelevancy().score_many`` default against a variant, alternating chunks."""
    from relevancy.backends._local_embedder import MiniLMEmbedder
    from relevancy.backends._local_generator import SmolLMGenerator

    kw: dict[str, Any] = {"gen": gen, "emb": emb}
    if name == "c1":
        kw["concurrency"] = 1
    elif name == "rowlock":
        kw["wrapper"] = RowLocked
    elif name == "et1":
        kw["emb"] = MiniLMEmbedder(threads=1)
    elif name == "inproc_m":
        kw["gen"] = SmolLMGenerator(in_process=not gen.in_process)
    t = {"default": 0.0, "variant": 0.0}
    for c, part in enumerate(chunks(rows, 4)):
        order = ("default", "variant") if c % 2 == 0 else ("variant", "default")
        for label in order:
            o = ours_run(
                part,
                cache_dir=f"{tmp}/v-{name}-{label}-{c}",
                **(kw if label == "variant" else {"gen": gen, "emb": emb}),
            )
            t[label] += o["wall_s"]
    return {
        "what": METRIC_VARIANTS[name],
        "level": "metric (score_many), alternating chunks",
        "default_s": r(t["default"]),
        "variant_s": r(t["variant"]),
        "variant_over_default": r(t["variant"] / t["default"]),
    }


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
        order = ("floor", "ours") if c % 2 == 0 else ("ours", "floor")
        for side in order:
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
            "p50_row_s": r(percentile(floor_rows, 50)),
            "p95_row_s": r(percentile(floor_rows, 95)),
            "prompt_tokens": floor_tokens["prompt"],
            "completion_tokens": floor_tokens["completion"],
            "llama_calls": n * STRICTNESS,
        },
        "ours": {
            "wall_s": r(ours_wall),
            "pairs_per_s": r(n / ours_wall),
            "p50_row_s": r(percentile(latencies, 50)),
            "p95_row_s": r(percentile(latencies, 95)),
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


def chunks(rows: list[Any], k: int) -> list[list[Any]]:
    size = -(-len(rows) // k)
    return [rows[i : i + size] for i in range(0, len(rows), size)]


def build_parser() -> Any:
    p = parser(__doc__.splitlines()[0], default_rows=200)
    p.add_argument("--chunks", type=int, default=4, help="alternating chunks (default 4)")
    p.add_argument(
        "--variants",
        default="",
        help="comma-separated: gt1, inproc (generator level); c1, rowlock, et1, inproc_m "
        "(metric level); "
        "see the docstring",
    )
    p.add_argument("--variant-rows", type=int, default=60, help="rows per variant run")
    p.add_argument(
        "--api-rows", type=int, default=0, help="rows for the instant-API section (0: skip)"
    )
    p.add_argument(
        "--omp-spin", action="store_true", help="keep libgomp's default waiting (see measure)"
    )
    p.add_argument(
        "--generator",
        choices=("worker", "in-process"),
        default="worker",
        help="our generator in its worker process (as shipped) or in this process",
    )
    p.add_argument(
        "--extra-bufts",
        choices=("off", "on"),
        default="off",
        help="on: the in-process model (and the floor's) loaded with llama.cpp's extra buffer "
        "types, as before the AMX fix",
    )
    return p


def preload_with_extra_bufts(gen: Any) -> None:
    """Put a model loaded the old way (llama.cpp's default params) where ``_load`` finds it."""
    import threading

    from llama_cpp import Llama

    from relevancy.backends import _local_generator

    key = (str(gen._path), gen.n_ctx, gen.threads)
    llm = Llama(model_path=key[0], n_ctx=gen.n_ctx, n_threads=gen.threads, verbose=False, seed=0)
    assert llm.model_params.use_extra_bufts
    _local_generator._MODELS[key] = (llm, threading.Lock())


def measure(args: Any) -> dict[str, Any]:
    """Load the models, then the floor against ours, the variants and the instant API."""
    # llama.cpp's CPU backend uses OpenMP (libgomp). With libgomp's default busy-waiting, a
    # process that calls llama.cpp from one thread slows down several-fold whenever other
    # processes load the cores (measured: bench/omp_wait.py), while the metric, which calls
    # from several worker threads, falls back to libgomp's throttled waiting. Passive waiting
    # for the whole process puts floor and ours on the same footing; ``--omp-spin`` keeps the
    # default. Set before llama.cpp is loaded, which is below.
    if not args.omp_spin:
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    unknown = [v for v in variants if v not in RUNNABLE_VARIANTS]
    if unknown:
        raise SystemExit(f"unknown variant(s) {', '.join(unknown)}; see the docstring")

    from relevancy.backends._local_embedder import MiniLMEmbedder, _session
    from relevancy.backends._local_generator import SmolLMGenerator, _load

    rows = make_rows(args.rows)
    load_start = time.perf_counter()
    gen = SmolLMGenerator(in_process=args.generator == "in-process")
    emb = MiniLMEmbedder()
    if args.extra_bufts == "on":
        preload_with_extra_bufts(gen)
    _load(gen._path, gen.n_ctx, gen.threads)
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
        "extra_bufts": args.extra_bufts,
        "llama_cpp": llama_build(),
    }
    with tempfile.TemporaryDirectory(prefix="bench-thr-") as tmp:
        if rows:
            out.update(compare(rows, gen, emb, args.chunks, tmp))
        if variants:
            offset = max(args.rows, 200)  # never the rows of the main comparison
            vrows = make_rows(offset + args.variant_rows)[offset:]
            out["variants"] = {"rows": len(vrows)}
            for v in variants:
                if v in GENERATOR_VARIANTS:
                    res = generator_ab(v, gen, make_variant(v), vrows, emb)
                else:
                    res = metric_ab(v, vrows, gen=gen, emb=emb, tmp=tmp)
                out["variants"][v] = res
                log(f"  variant {v}: {res['variant_over_default']}x the default")
    if args.api_rows > 0:
        out["instant_api"] = api_section(args.api_rows, emb)
    out["peak_rss_mb"] = r(vm_hwm_mb(), 1)
    return out


def llama_build() -> dict[str, str]:
    """Where llama_cpp was imported from and what its llama.cpp was built with."""
    import llama_cpp

    info = llama_cpp.llama_print_system_info().decode()
    return {"path": str(Path(llama_cpp.__file__).parent), "system_info": info.strip()}


def main() -> int:
    args = build_parser().parse_args()
    emit(measure(args), args.json)
    return 0


# ------------------------------------------------------------------------------------------
# RESULTS.md
# ------------------------------------------------------------------------------------------


def render(fig: dict[str, Any], record: dict[str, Any] | None = None) -> str:
    """The "Throughput" section of RESULTS.md (with the speed-ups when the run had them)."""
    fl, o = fig["floor"], fig["ours"]
    sp = o["split_s"]
    pct = o["split_pct"]
    parts = [
        f"{fig['rows']} rows, strictness {fig['strictness']}, our concurrency "
        f"{fig['concurrency']}, llama.cpp threads {fig['threads']['llama']}, onnxruntime "
        f"threads {fig['threads']['onnx']}; floor and ours alternate in chunks on the same rows "
        "(same model object, same prompts, grammar, seeds, max_tokens).",
        "",
        table(
            ["", "wall s", "pairs/s", "p50 row s", "p95 row s"],
            [
                [
                    "floor: llama-cpp-python alone",
                    fl["wall_s"],
                    fl["pairs_per_s"],
                    fl["p50_row_s"],
                    fl["p95_row_s"],
                ],
                [
                    "ours: `AnswerRelevancy().score_many`",
                    o["wall_s"],
                    o["pairs_per_s"],
                    o["p50_row_s"],
                    o["p95_row_s"],
                ],
            ],
        ),
        "",
        f"**ours / floor = {fmt(fig['ours_over_floor'])}x** (goal: at most 1.1x); median "
        f"over the {len(fig.get('ours_over_floor_per_chunk', []))} chunk pairs "
        f"{fmt(fig.get('ours_over_floor_median_chunk'))}x (per chunk: "
        f"{', '.join(fmt(x) for x in fig.get('ours_over_floor_per_chunk', []))}). "
        f"Questions identical to the floor's: {o['questions_identical_to_floor']}; "
        f"NaN rows: {o['nan_rows']}.",
        "",
        "Where our wall time went (each layer counts only time when no earlier layer was busy):",
        "",
        table(
            ["generation", "embedding (outside generation)", "cache", "overhead"],
            [
                [
                    f"{fmt(sp[k])} s ({fmt(pct[k], 1)}%)"
                    for k in ("generation", "embedding", "cache", "overhead")
                ]
            ],
        ),
        "",
        f"Embedding was busy {fmt(o['embedding_busy_s'])} s in all, mostly overlapping "
        f"generation; {o['embed_backend_calls']} backend calls for {o['embed_backend_texts']} "
        f"texts. Model load {fmt(fig['model_load_s'])} s; RSS after load "
        f"{fmt(fig['rss_after_load_mb'], 0)} MiB; peak RSS {fmt(fig['peak_rss_mb'], 0)} MiB. "
        f"Floor tokens: {fl['prompt_tokens']} prompt (counted, most reused from the KV cache), "
        f"{fl['completion_tokens']} completion, {fl['llama_calls']} calls. Both sides ran "
        f"with OMP_WAIT_POLICY={fig.get('omp_wait_policy', '?')} (see the OpenMP section).",
    ]
    if fig.get("variants") or fig.get("instant_api"):
        parts += ["", render_speedups(fig, record)]
    return "\n".join(parts)


def render_speedups(fig: dict[str, Any], record: dict[str, Any] | None = None) -> str:
    """The "Speed-ups tried" section of RESULTS.md: the variants and the instant API.

    A recorded variant that this script can no longer run is still shown from its figures,
    with a note saying so.
    """
    parts: list[str] = []
    v = fig.get("variants")
    if v:
        rows = []
        for name, d in v.items():
            if not isinstance(d, dict):
                continue
            uq = d.get("usable_questions") or {}
            ms = d.get("mean_score") or {}
            rows.append(
                [
                    f"`{name}`",
                    d["what"],
                    d["level"],
                    d["default_s"],
                    d["variant_s"],
                    f"**{fmt(d['variant_over_default'])}**",
                    f"{uq.get('default')} / {uq.get('variant')}" if uq else "–",
                    d.get("questions_identical_to_default", "–"),
                    f"{fmt(ms.get('default'))} / {fmt(ms.get('variant'))}" if ms else "–",
                    d.get("mean_abs_score_diff"),
                ]
            )
        parts += [
            f"Candidate speed-ups on {v['rows']} rows not used above, each against the default "
            "on the same rows at the same time (generator level: order alternating row by row; "
            "metric level: alternating chunks). Scores: same MiniLM, noncommittal off.",
            "",
            table(
                [
                    "variant",
                    "what",
                    "level",
                    "default s",
                    "variant s",
                    "variant / default",
                    "usable questions (default / variant)",
                    "same questions as default",
                    "mean score (default / variant)",
                    "mean abs score diff",
                ],
                rows,
            ),
        ]
        gone = [f"`{name}`" for name in v if name != "rows" and name not in RUNNABLE_VARIANTS]
        if gone:
            parts += [
                "",
                f"{', '.join(gone)}: measured with a prototype generator "
                "(`bench/_proto_generator.py`) that has since been removed; shown from the "
                "recorded figures, it can no longer be run.",
            ]
    api = fig.get("instant_api")
    if api:
        rows = []
        for k, d in api.items():
            if not isinstance(d, dict):
                continue
            sp = d["split_s"]
            rows.append(
                [
                    k[1:],
                    d["pairs_per_s"],
                    d["wall_s"],
                    sp["embedding"],
                    sp["generation"],
                    sp["cache"],
                    sp["overhead"],
                    d["embed_backend_calls"],
                    d["texts_per_embed_call"],
                    d["nan_rows"],
                ]
            )
        parts += [
            "",
            "Ours behind an OpenAI-compatible server that answers instantly (the toy server, "
            f"{api['rows']} rows, MiniLM int8 embeddings): our own per-row work by concurrency.",
            "",
            table(
                [
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
                ],
                rows,
            ),
        ]
    return "\n".join(parts)


if __name__ == "__main__":
    raise SystemExit(main())
