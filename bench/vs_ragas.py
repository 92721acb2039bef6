"""Ours against Ragas 0.4.3 on the same llama-cpp-python server, same rows, same MiniLM.

Starts ``python -m llama_cpp.server`` on 127.0.0.1 with the embedded SmolLM2 GGUF (n_threads 2,
n_ctx 4096) and scores the same rows with

* **ours**: ``AnswerRelevancy(llm=make_generator("openai:smollm2", base_url=...),
  embeddings=make_embedder("local"))``, the backend as shipped, strictness 3, default
  concurrency 4;
* **Ragas**: its collections ``AnswerRelevancy`` with instructor in JSON-schema mode
  (``bench/_ragas_side.py``, run in ``bench/.venv-ragas``), strictness 3, concurrency 1.

in alternating chunks (ours, Ragas, Ragas, ours, ...). Also: where the server's time goes for
each side (from the server's own log: requests, prompt tokens evaluated and reused from its
prefix cache, completion tokens, seconds of prompt evaluation, decoding and the rest, per row);
our concurrency 1/2/4 on a few rows; the stock set-ups of both (Ragas' documented
``llm_factory`` JSON mode and its legacy ``evaluate()``; our backend as shipped) on a few rows;
parity of the two formulas on identical questions and vectors. ``--multi`` adds a prototype
that asks for all N questions in one request (not used by the library: see its docstring).

:func:`render` writes the "Against Ragas" section of ``RESULTS.md``.
"""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (  # noqa: E402
    ROOT,
    emit,
    fmt,
    load_average,
    log,
    make_rows,
    parser,
    percentile,
    r,
    table,
    vm_hwm_mb,
)

RAGAS_PY = ROOT / "bench" / ".venv-ragas" / "bin" / "python"
MODEL = "smollm2"
STRICTNESS = 3


# ------------------------------------------------------------------------------------------
# the server
# ------------------------------------------------------------------------------------------


class LlamaServer:
    """``python -m llama_cpp.server`` with the embedded SmolLM2 GGUF on a free port of
    127.0.0.1. Its log goes to a temporary file, read back by :meth:`requests_since`."""

    def __init__(self, threads: int = 2) -> None:
        from relevancy.backends import smollm_model_path
        from relevancy.testing.processes import ServerProcess, free_port

        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self._tmp = tempfile.TemporaryDirectory(prefix="bench-llama-server-")
        self.log_path = Path(self._tmp.name) / "server.log"
        cmd = [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(smollm_model_path()),
            "--model_alias",
            MODEL,
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--n_threads",
            str(threads),
            "--n_ctx",
            "4096",
        ]
        # libgomp's default busy-waiting makes a llama.cpp server that shares its cores with
        # other processes 10-20x slower per token (measured here: 9 ms -> 90-170 ms); passive
        # waiting keeps the comparison about the two clients (see bench/omp_wait.py)
        env = dict(os.environ)
        env.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        self.omp_wait_policy = env["OMP_WAIT_POLICY"]
        self.process = ServerProcess(
            cmd,
            url_to_poll=self.base_url + "/models",
            env=env,
            log_path=self.log_path,
            timeout=120,
            stop_timeout=15,
        ).start()
        self.start_s = self.process.start_s or 0.0

    def hwm_mb(self) -> float:
        return vm_hwm_mb(self.process.pid)

    def log_offset(self) -> int:
        return os.path.getsize(self.log_path)

    def requests_since(self, offset: int) -> list[dict[str, float]]:
        """The server's own per-request figures (llama.cpp's timings) logged after ``offset``."""
        time.sleep(0.2)  # let the last request's lines reach the file
        with open(self.log_path, "rb") as fh:
            fh.seek(offset)
            return parse_server_log(fh.read().decode("utf-8", "replace"))

    def stop(self) -> None:
        self.process.stop()
        self._tmp.cleanup()


_PERF = re.compile(
    r"prompt eval time =\s+([\d.]+) ms /\s+(\d+) tokens.*?"
    r"\beval time =\s+([\d.]+) ms /\s+(\d+) runs.*?"
    r"total time =\s+([\d.]+) ms",
    re.S,
)
_HIT = re.compile(r"(\d+) prefix-match hit, remaining (\d+) prompt tokens to eval")


def parse_server_log(text: str) -> list[dict[str, float]]:
    """One record per completed request: prompt tokens reused from the prefix cache and
    evaluated, completion tokens (decode runs), and the seconds llama.cpp spent evaluating the
    prompt, decoding, and in total (the rest is mostly sampling, grammar included)."""
    out: list[dict[str, float]] = []
    start = 0
    for m in _PERF.finditer(text):
        hits = _HIT.findall(text, start, m.start())
        reused, evaluated = (int(hits[-1][0]), int(hits[-1][1])) if hits else (0, int(m[2]))
        out.append(
            {
                "reused": reused,
                "evaluated": evaluated,
                "completion": int(m[4]),
                "prompt_s": float(m[1]) / 1000,
                "decode_s": float(m[3]) / 1000,
                "total_s": float(m[5]) / 1000,
            }
        )
        start = m.end()
    return out


def server_split(records: list[dict[str, float]], rows: int) -> dict[str, Any]:
    """Per row: where the server's time went for one side's requests."""
    if not records or not rows:
        return {}

    def per_row(key: str) -> float:
        return sum(x[key] for x in records) / rows

    total = per_row("total_s")
    return {
        "requests_per_row": r(len(records) / rows, 2),
        "prompt_tokens_reused_per_row": r(per_row("reused"), 1),
        "prompt_tokens_evaluated_per_row": r(per_row("evaluated"), 1),
        "completion_tokens_per_row": r(per_row("completion"), 1),
        "server_s_per_row": r(total),
        "prompt_eval_s_per_row": r(per_row("prompt_s")),
        "decode_s_per_row": r(per_row("decode_s")),
        "other_s_per_row": r(total - per_row("prompt_s") - per_row("decode_s")),
        "ms_per_completion_token": r(
            1000 * per_row("decode_s") / max(per_row("completion"), 1e-9), 1
        ),
    }


# ------------------------------------------------------------------------------------------
# our side
# ------------------------------------------------------------------------------------------


MULTI_INSTRUCTION = (
    "Read the response below and write {n} different questions that it answers, each asked a "
    "different way. Write them in the same language as the response. Also say whether the "
    "response is noncommittal: 1 when it avoids giving an answer (for example 'I don't know', "
    "'I'm not sure', 'it depends' with nothing more), 0 when it gives a real answer. Reply "
    'with JSON only, shaped as {{"questions": ["...", ...], "noncommittal": 0}}.'
)
MULTI_EXAMPLES = (
    (
        "Mount Kilimanjaro, in Tanzania, is the highest mountain in Africa at 5,895 metres.",
        [
            "What is the highest mountain in Africa?",
            "How tall is Mount Kilimanjaro?",
            "In which country is Africa's highest mountain?",
        ],
        0,
    ),
    (
        "I can't say for sure which phone has the better camera; I haven't compared them.",
        [
            "Which of the two phones has the better camera?",
            "Which phone takes better photos?",
            "How do the cameras of the two phones compare?",
        ],
        1,
    ),
    (
        "Le cœur humain bat environ 100 000 fois par jour.",
        [
            "Combien de fois le cœur humain bat-il par jour ?",
            "À quelle fréquence bat le cœur humain ?",
            "Combien de battements le cœur fait-il en une journée ?",
        ],
        0,
    ),
)


def multi_generator(base_url: str) -> Any:
    """Prototype of a proposed mode: all N questions in one request (one prompt evaluation,
    one JSON object holding N questions and one noncommittal flag), for servers that ignore
    ``n``. Ragas and our shipped backend make N requests per row.

    Not adopted: its N questions are not N independent samples (each is written after the
    ones before it, and they drift off the point), and one flag stands for N. Once the shipped
    backend sent a row's N requests back to back (the server reuses the whole prompt) and
    wrote compact JSON, even a compact variant of this (per-question flags, ``[["q", 0], ...]``)
    saved only 12% of the completion tokens (56 against 64 per row, 20 rows), while the mean
    similarity of its questions fell (0.44 against 0.47-0.54) and its per-row scores agreed
    less with the shipped backend's (Pearson 0.57-0.70) than two seeds of the shipped backend
    agree with each other (0.80-0.88)."""
    from relevancy.backends import OpenAIGenerator
    from relevancy.core.result import Generation, GenerationSet

    class MultiQuestionGenerator(OpenAIGenerator):
        def fingerprint(self) -> dict[str, Any]:
            return {**super().fingerprint(), "mode": "multi"}

        async def agenerate(self, response: str, n: int) -> GenerationSet:
            messages = [{"role": "system", "content": MULTI_INSTRUCTION.format(n=n)}]
            for text, questions, flag in MULTI_EXAMPLES:
                messages.append({"role": "user", "content": f"Response: {text}"})
                body = {"questions": questions[:n], "noncommittal": flag}
                messages.append(
                    {"role": "assistant", "content": json.dumps(body, ensure_ascii=False)}
                )
            messages.append({"role": "user", "content": f"Response: {response}"})
            schema = {
                "type": "object",
                "properties": {
                    "questions": {
                        "type": "array",
                        "items": {"type": "string"},
                        "minItems": n,
                        "maxItems": n,
                    },
                    "noncommittal": {"type": "integer", "enum": [0, 1]},
                },
                "required": ["questions", "noncommittal"],
            }
            started = time.perf_counter()
            completion = await self.client().chat.completions.create(
                model=self.model,
                messages=messages,
                temperature=self.temperature,
                max_tokens=60 * n,
                seed=self.seed,
                response_format={"type": "json_object", "schema": schema},
            )
            usage = {
                "prompt_tokens": completion.usage.prompt_tokens if completion.usage else 0,
                "completion_tokens": completion.usage.completion_tokens if completion.usage else 0,
            }
            try:
                data = json.loads(completion.choices[0].message.content or "")
                questions = [str(q).strip() for q in data["questions"]][:n]
                flag = bool(int(data.get("noncommittal", 0)))
                gens = [
                    Generation(q, flag) if q else Generation("", None, "empty question")
                    for q in questions
                ]
            except (ValueError, KeyError, TypeError, IndexError) as exc:
                gens = [Generation("", None, f"unparseable output: {exc}")]
            gens += [Generation("", None, "fewer questions than asked")] * (n - len(gens))
            return GenerationSet(
                generations=gens,
                model=self.model,
                usage=usage,
                requests=1,
                seconds=time.perf_counter() - started,
                cacheable=all(g.error is None for g in gens),
            )

    return MultiQuestionGenerator(MODEL, base_url=base_url)


def ours(rows: list[dict], gen: Any, emb: Any, concurrency: int = 4) -> dict[str, Any]:
    from relevancy import AnswerRelevancy

    with tempfile.TemporaryDirectory(prefix="bench-vs-") as tmp:
        metric = AnswerRelevancy(
            llm=gen, embeddings=emb, cache=tmp, strictness=STRICTNESS, concurrency=concurrency
        )
        start = time.perf_counter()
        results = metric.score_many([(x["user_input"], x["response"]) for x in rows])
        wall = time.perf_counter() - start
    return {"wall_s": wall, "results": results}


def ragas(mode: str, rows: list[dict], base_url: str, **kw: Any) -> dict[str, Any]:
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
        json.dump(rows, fh)
        path = fh.name
    cmd = [str(RAGAS_PY), str(ROOT / "bench" / "_ragas_side.py"), "--mode", mode]
    cmd += ["--rows-file", path, "--base-url", base_url, "--model", MODEL]
    for key, value in kw.items():
        cmd += [f"--{key.replace('_', '-')}", str(value)]
    env = dict(os.environ, RAGAS_DO_NOT_TRACK="true", PYTHONPATH=str(ROOT))
    started = time.perf_counter()
    try:
        # stderr (per-row progress) goes to this bench's own stderr / log
        proc = subprocess.run(
            cmd, stdout=subprocess.PIPE, stderr=None, text=True, env=env, timeout=3600
        )
    finally:
        os.unlink(path)
    if proc.returncode != 0:
        raise RuntimeError(f"ragas side failed ({proc.returncode}); see the log above")
    out = json.loads(proc.stdout)
    out["process_s"] = time.perf_counter() - started
    return out


def ragas_available() -> str | None:
    if not RAGAS_PY.exists():
        return f"no {RAGAS_PY.relative_to(ROOT)}: see bench/README.md to create it"
    proc = subprocess.run(
        [str(RAGAS_PY), "-c", "import ragas, instructor, langchain_openai, onnxruntime"],
        capture_output=True,
        text=True,
        env=dict(os.environ, RAGAS_DO_NOT_TRACK="true"),
    )
    if proc.returncode != 0:
        return "Ragas venv cannot import its pieces: " + proc.stderr.strip().splitlines()[-1]
    return None


# ------------------------------------------------------------------------------------------
# figures
# ------------------------------------------------------------------------------------------


def identical_sets(sets: list[list[str]]) -> int:
    return sum(1 for qs in sets if len(qs) >= 2 and len(set(qs)) == 1)


def summarize_ours(results: list[Any], wall: float) -> dict[str, Any]:
    lat = [x.timings.get("total_s", float("nan")) for x in results]
    return {
        "wall_s": r(wall),
        "pairs_per_s": r(len(results) / wall),
        "nan_rows": sum(not x.ok for x in results),
        "zeroed_noncommittal": sum(bool(x.ok and x.noncommittal) for x in results),
        "identical_3_questions": identical_sets(
            [[q.question for q in x.questions if q.similarity is not None] for x in results]
        ),
        "p50_row_s": r(percentile(lat, 50)),
        "p95_row_s": r(percentile(lat, 95)),
        "prompt_tokens": sum(x.usage.get("prompt_tokens", 0) for x in results),
        "completion_tokens": sum(x.usage.get("completion_tokens", 0) for x in results),
    }


def summarize_ragas(rows: list[dict], wall: float) -> dict[str, Any]:
    values = [x["value"] for x in rows]
    secs = [x["seconds"] for x in rows if x.get("seconds") is not None]
    errors = sorted({(x.get("error") or "")[:120] for x in rows if x.get("error")})
    gens = [[g["question"] for g in x.get("generations", [])] for x in rows]
    return {
        "wall_s": r(wall),
        "pairs_per_s": r(len(rows) / wall) if wall else None,
        "nan_rows": sum(v is None for v in values),
        "zeroed_noncommittal": sum(v == 0.0 for v in values),
        "identical_3_questions": identical_sets(gens) if any(gens) else None,
        "p50_row_s": r(percentile(secs, 50)) if secs else None,
        "p95_row_s": r(percentile(secs, 95)) if secs else None,
        "errors": errors[:5],
    }


def parity_cases(results: list[Any], n_random: int = 200, seed: int = 0) -> list[dict]:
    """Identical inputs for both formulas: our real questions, flags and MiniLM vectors, plus
    random ones (negative cosines, all/some/no flags, 1-5 questions, unnormalised)."""
    cases = []
    for x in results:
        usable = [q for q in x.questions if q.similarity is not None]
        if not usable or x.user_input_embedding is None:
            continue
        cases.append(
            {
                "source": "run",
                "user_input": x.user_input,
                "user_input_vector": x.user_input_embedding,
                "questions": [q.question for q in usable],
                "question_vectors": x.question_embeddings,
                "flags": [int(bool(q.noncommittal)) for q in usable],
            }
        )
    rng = random.Random(seed)
    for i in range(n_random):
        k = rng.randint(1, 5)
        dim = rng.choice([8, 384])
        scale = rng.choice([1.0, 0.01, 37.0])

        def vec(dim: int = dim, scale: float = scale) -> list[float]:
            return [rng.gauss(0, 1) * scale for _ in range(dim)]

        flags = [int(rng.random() < rng.choice([0.0, 0.5, 1.0])) for _ in range(k)]
        cases.append(
            {
                "source": "random",
                "user_input": f"random question {i}?",
                "user_input_vector": vec(),
                "questions": [f"random generated {i}.{j}?" for j in range(k)],
                "question_vectors": [vec() for _ in range(k)],
                "flags": flags,
            }
        )
    return cases


def ours_formula(case: dict) -> float:
    import numpy as np

    from relevancy import cosine_similarities, relevancy_score

    sims = cosine_similarities(
        np.asarray(case["question_vectors"]), np.asarray(case["user_input_vector"])
    )
    return relevancy_score(sims.tolist(), [bool(f) for f in case["flags"]])


# ------------------------------------------------------------------------------------------


def build_parser() -> Any:
    p = parser(__doc__.splitlines()[0], default_rows=100)
    p.add_argument("--chunks", type=int, default=4, help="alternating chunks (default 4)")
    p.add_argument("--sweep-rows", type=int, default=8, help="rows per concurrency setting")
    p.add_argument("--stock-rows", type=int, default=3, help="rows per stock set-up")
    p.add_argument(
        "--multi", action="store_true", help="also the all-questions-in-one-request prototype"
    )
    p.add_argument("--stock-timeout", type=float, default=40.0, help="seconds per stock row")
    p.add_argument(
        "--ragas-row-timeout",
        type=float,
        default=120.0,
        help="seconds per Ragas row in the main comparison (then NaN, as a failed row)",
    )
    return p


def measure(args: Any) -> dict[str, Any]:
    """Start the server, then ours against Ragas, the sweep, parity and the stock set-ups."""
    from relevancy import make_embedder, make_generator

    rows = make_rows(args.rows, seed=1)
    out: dict[str, Any] = {"bench": "vs_ragas", "rows": len(rows), "strictness": STRICTNESS}
    missing = ragas_available()
    if missing:
        out["ragas_skipped"] = missing
        log("vs_ragas: Ragas side unavailable:", missing)
    server = LlamaServer()
    out["server"] = {
        "start_s": r(server.start_s),
        "n_threads": 2,
        "n_ctx": 4096,
        "omp_wait_policy": server.omp_wait_policy,
    }
    log(f"vs_ragas: server on {server.base_url} in {server.start_s:.1f} s, load {load_average()}")
    emb = make_embedder("local")
    emb.embed(["warm-up"])
    try:
        gen = make_generator(f"openai:{MODEL}", base_url=server.base_url)  # as shipped
        ours(rows[:1], gen, emb)  # warm the server's KV cache with our prefix

        # --- main comparison, alternating chunks ------------------------------------------
        size = -(-len(rows) // max(1, args.chunks))
        parts = [rows[i : i + size] for i in range(0, len(rows), size)]
        multi = multi_generator(server.base_url) if args.multi else None
        per_chunk: dict[int, dict[str, float]] = {}
        multi_results: list[Any] = []
        multi_wall = 0.0
        our_results: list[Any] = []
        our_wall = 0.0
        rag_rows: list[dict] = []
        rag_wall = 0.0
        rag_meta: dict[str, Any] = {}
        served: dict[str, list[dict[str, float]]] = {"ours": [], "multi": [], "ragas": []}
        for c, part in enumerate(parts):
            order = ("ours", "multi", "ragas") if c % 2 == 0 else ("ragas", "multi", "ours")
            for side in order:
                offset = server.log_offset()
                if side == "multi":
                    if multi is None:
                        continue
                    o = ours(part, multi, emb)
                    multi_results += o["results"]
                    multi_wall += o["wall_s"]
                    per_chunk.setdefault(c, {})["multi"] = o["wall_s"]
                    log(f"  chunk {c} multi {o['wall_s']:.1f} s")
                elif side == "ours":
                    o = ours(part, gen, emb)
                    our_results += o["results"]
                    our_wall += o["wall_s"]
                    per_chunk.setdefault(c, {})["ours"] = o["wall_s"]
                    log(f"  chunk {c} ours  {o['wall_s']:.1f} s")
                elif not missing:
                    g = ragas(
                        "jsonschema",
                        part,
                        server.base_url,
                        concurrency=1,
                        row_timeout=args.ragas_row_timeout,
                    )
                    rag_rows += g["rows"]
                    rag_wall += g["wall_s"]
                    per_chunk.setdefault(c, {})["ragas"] = g["wall_s"]
                    rag_meta = {
                        k: g[k] for k in ("ragas_version", "import_s", "peak_rss_mb", "concurrency")
                    }
                    log(f"  chunk {c} ragas {g['wall_s']:.1f} s")
                served[side] += server.requests_since(offset)
        out["ours"] = summarize_ours(our_results, our_wall)
        out["ours"]["backend"] = "openai-compatible backend as shipped"
        out["ours"]["concurrency"] = 4
        out["ours"]["server"] = server_split(served["ours"], len(our_results))
        if multi is not None:
            out["ours_multi"] = summarize_ours(multi_results, multi_wall)
            out["ours_multi"]["backend"] = "prototype: all 3 questions in one request (one JSON)"
            out["ours_multi"]["concurrency"] = 4
            out["ours_multi"]["server"] = server_split(served["multi"], len(multi_results))
        if not missing:
            out["ragas"] = summarize_ragas(rag_rows, rag_wall)
            out["ragas"].update(
                {k: r(v, 2) if isinstance(v, float) else v for k, v in rag_meta.items()}
            )
            out["ragas"]["setup"] = "collections AnswerRelevancy, instructor Mode.JSON_SCHEMA"
            out["ragas"]["server"] = server_split(served["ragas"], len(rag_rows))
            out["ours_over_ragas_pairs_per_s"] = r(rag_wall / our_wall)
            if multi is not None:
                out["multi_over_ragas_pairs_per_s"] = r(rag_wall / multi_wall)
            out["ours_over_ragas_per_chunk"] = [
                r(t["ragas"] / t["ours"]) for t in per_chunk.values() if "ragas" in t
            ]
            # paired per-row agreement of the two scores (same rows)
            pairs = [
                (a.value, b["value"])
                for a, b in zip(our_results, rag_rows)
                if a.ok and b["value"] is not None
            ]
            if len(pairs) > 2:
                import numpy as np

                xs, ys = np.array(pairs).T
                out["score_correlation_pearson"] = r(float(np.corrcoef(xs, ys)[0, 1]))
                out["mean_score"] = {"ours": r(xs.mean()), "ragas": r(ys.mean())}
            pairs = [
                (a.value, b.value) for a, b in zip(our_results, multi_results) if a.ok and b.ok
            ]
            if len(pairs) > 2:
                import numpy as np

                xs, ys = np.array(pairs).T
                out["multi_vs_ours_score_pearson"] = r(float(np.corrcoef(xs, ys)[0, 1]))
                out.setdefault("mean_score", {})["multi"] = r(ys.mean())

        # --- our concurrency against a one-request-at-a-time server ------------------------
        sweep_rows = make_rows(args.rows + args.sweep_rows, seed=1)[args.rows :]
        out["ours_concurrency_sweep"] = {"rows": len(sweep_rows)}
        for conc in (1, 2, 4):
            o = ours(sweep_rows, gen, emb, concurrency=conc)
            out["ours_concurrency_sweep"][f"c{conc}_pairs_per_s"] = r(len(sweep_rows) / o["wall_s"])
            log(f"  sweep c={conc} {o['wall_s']:.1f} s")

        # --- parity --------------------------------------------------------------------------
        cases = parity_cases(our_results)
        mine = [ours_formula(c) for c in cases]
        out["parity"] = {"cases": len(cases), "from_run": sum(c["source"] == "run" for c in cases)}
        if not missing:
            theirs = ragas("parity", cases, server.base_url)
            for key in ("legacy", "collections"):
                diffs = [
                    abs(a - b)
                    for a, b in zip(mine, theirs[key])
                    if not (a != a and b != b)  # both NaN counts as equal
                ]
                nan_mismatch = sum((a != a) != (b != b) for a, b in zip(mine, theirs[key]))
                out["parity"][f"max_abs_diff_{key}"] = max(diffs) if diffs else None
                out["parity"][f"nan_mismatches_{key}"] = nan_mismatch

        # --- stock set-ups, a few rows each (last: they can leave the server busy) ---------
        stock_rows = rows[: args.stock_rows]
        stock: dict[str, Any] = {"rows": len(stock_rows), "row_timeout_s": args.stock_timeout}
        shipped = make_generator(f"openai:{MODEL}", base_url=server.base_url)
        o = ours(stock_rows, shipped, emb)
        stock["ours_as_shipped"] = summarize_ours(o["results"], o["wall_s"])
        stock["ours_as_shipped"]["errors"] = sorted(
            {(x.error or "")[:120] for x in o["results"] if x.error}
        )[:3]
        if not missing:
            for mode in ("stock", "legacy"):
                log(f"  ragas {mode} on {len(stock_rows)} rows")
                # rows at once, as Ragas' own batch scoring and evaluate() do
                g = ragas(
                    mode,
                    stock_rows,
                    server.base_url,
                    row_timeout=args.stock_timeout,
                    concurrency=len(stock_rows),
                )
                stock[f"ragas_{mode}"] = summarize_ragas(g["rows"], g["wall_s"])
            stock["ragas_stock"]["setup"] = "llm_factory (instructor Mode.JSON), collections API"
            stock["ragas_legacy"]["setup"] = (
                "evaluate() + ResponseRelevancy + LangchainLLMWrapper(ChatOpenAI), "
                f"RunConfig(timeout={int(args.stock_timeout)}) else default"
            )
        out["stock"] = stock
        out["server"]["peak_rss_mb"] = r(server.hwm_mb(), 1)
    finally:
        server.stop()
    out["peak_rss_mb"] = r(vm_hwm_mb(), 1)
    return out


def main() -> int:
    args = build_parser().parse_args()
    emit(measure(args), args.json)
    return 0


# ------------------------------------------------------------------------------------------
# RESULTS.md
# ------------------------------------------------------------------------------------------


_SERVER_SPLIT_KEYS = (
    "requests_per_row",
    "prompt_tokens_reused_per_row",
    "prompt_tokens_evaluated_per_row",
    "completion_tokens_per_row",
    "server_s_per_row",
    "prompt_eval_s_per_row",
    "decode_s_per_row",
    "other_s_per_row",
)


def render(fig: dict[str, Any], record: dict[str, Any] | None = None) -> str:
    """The "Against Ragas on the same server" section of RESULTS.md."""
    o = fig["ours"]
    parts = [
        f"{fig['rows']} rows, strictness {fig['strictness']}, one llama-cpp-python server "
        "(SmolLM2-135M Q4_1, n_threads 2, n_ctx 4096) shared by both, the same MiniLM int8 "
        "embeddings on both sides, alternating chunks.",
        "",
    ]
    rows = [
        [
            "ours (" + o["backend"] + f", concurrency {o['concurrency']})",
            o["pairs_per_s"],
            o["nan_rows"],
            o["zeroed_noncommittal"],
            o["identical_3_questions"],
            o["p50_row_s"],
            o["p95_row_s"],
        ]
    ]
    m = fig.get("ours_multi")
    if m:
        rows.append(
            [
                f"ours, {m['backend']}",
                m["pairs_per_s"],
                m["nan_rows"],
                m["zeroed_noncommittal"],
                m["identical_3_questions"],
                m["p50_row_s"],
                m["p95_row_s"],
            ]
        )
    g = fig.get("ragas")
    if g:
        rows.append(
            [
                f"Ragas {g.get('ragas_version', '')} ({g['setup']}, concurrency "
                f"{g.get('concurrency')})",
                g["pairs_per_s"],
                g["nan_rows"],
                g["zeroed_noncommittal"],
                g["identical_3_questions"],
                g["p50_row_s"],
                g["p95_row_s"],
            ]
        )
    parts.append(
        table(
            [
                "",
                "pairs/s",
                "NaN rows",
                "zeroed (noncommittal)",
                "3 identical questions",
                "p50 row s",
                "p95 row s",
            ],
            rows,
        )
    )
    if g:
        parts += [
            "",
            f"**ours / Ragas pairs/s = {fmt(fig['ours_over_ragas_pairs_per_s'])}x** (goal: at "
            "least 3x, with fewer NaN rows)"
            + (
                f"; with all questions in one request (prototype): "
                f"**{fmt(fig.get('multi_over_ragas_pairs_per_s'))}x**"
                if m
                else ""
            )
            + f". Per chunk, ours/Ragas: "
            f"{', '.join(fmt(x) for x in fig.get('ours_over_ragas_per_chunk', []))}. "
            f"Pearson correlation of our "
            f"and Ragas' scores over rows both scored: "
            f"{fmt(fig.get('score_correlation_pearson'))}; mean score ours "
            f"{fmt(fig.get('mean_score', {}).get('ours'))}, Ragas "
            f"{fmt(fig.get('mean_score', {}).get('ragas'))}"
            + (
                f", one-request prototype {fmt(fig.get('mean_score', {}).get('multi'))} "
                f"(correlation with ours {fmt(fig.get('multi_vs_ours_score_pearson'))})"
                if m
                else ""
            )
            + ".",
        ]
        split_rows = [
            [label, *(d["server"].get(k) for k in _SERVER_SPLIT_KEYS)]
            for label, d in (("ours", o), ("one-request prototype", m), ("Ragas", g))
            if d and d.get("server")
        ]
        if split_rows:
            parts += [
                "",
                "Where the server's time goes, per row (from the server's own log):",
                "",
                table(
                    [
                        "",
                        "requests",
                        "prompt tokens reused",
                        "prompt tokens evaluated",
                        "completion tokens",
                        "server s",
                        "prompt eval s",
                        "decode s",
                        "other s (sampling, grammar)",
                    ],
                    split_rows,
                ),
            ]
    elif fig.get("ragas_skipped"):
        parts += ["", f"Ragas side skipped: {fig['ragas_skipped']}"]
    sw = fig.get("ours_concurrency_sweep")
    if sw:
        parts += [
            "",
            f"Our concurrency against this one-request-at-a-time server ({sw['rows']} rows): "
            + ", ".join(
                f"{k.split('_')[0]} {fmt(v)} pairs/s" for k, v in sw.items() if k != "rows"
            ),
        ]
    par = fig.get("parity")
    if par:
        parts += [
            "",
            f"**Parity**: {par['cases']} cases ({par['from_run']} from this run's real "
            "questions, flags and MiniLM vectors, the rest random: negative cosines, "
            "unnormalised vectors, 1-5 questions, all/some/no flags) fed to our "
            "`cosine_similarities` + `relevancy_score` and to Ragas' scoring code: max |diff| "
            f"legacy `ResponseRelevancy._calculate_score` {fmt(par.get('max_abs_diff_legacy'))}, "
            f"collections `AnswerRelevancy.ascore` {fmt(par.get('max_abs_diff_collections'))} "
            "(goal: below 1e-9).",
        ]
    st = fig.get("stock")
    if st:
        rows = []
        for key, label in (
            ("ours_as_shipped", "ours as shipped (`make_generator('openai:…')`)"),
            ("ragas_stock", "Ragas stock: " + st.get("ragas_stock", {}).get("setup", "")),
            ("ragas_legacy", "Ragas legacy: " + st.get("ragas_legacy", {}).get("setup", "")),
        ):
            d = st.get(key)
            if d:
                errs = "; ".join(
                    e.replace("|", "/").replace("\n", " ") for e in d.get("errors", [])
                )
                rows.append([label, f"{d['nan_rows']}/{st['rows']}", d["wall_s"], errs[:160]])
        parts += [
            "",
            f"Stock set-ups on {st['rows']} rows "
            f"(per-row time limit {fmt(st['row_timeout_s'], 0)} s):",
            "",
            table(["set-up", "NaN rows", "wall s", "errors"], rows),
        ]
    srv = fig.get("server", {})
    parts += [
        "",
        f"Server start {fmt(srv.get('start_s'))} s, server peak RSS "
        f"{fmt(srv.get('peak_rss_mb'), 0)} MiB; our process peak RSS "
        f"{fmt(fig.get('peak_rss_mb'), 0)} MiB"
        + (
            f"; Ragas process peak RSS {fmt(g.get('peak_rss_mb'), 0)} MiB "
            f"(import {fmt(g.get('import_s'))} s, not counted)."
            if g
            else "."
        ),
    ]
    return "\n".join(parts)


if __name__ == "__main__":
    raise SystemExit(main())
