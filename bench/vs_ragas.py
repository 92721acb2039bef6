"""Ours against Ragas 0.4.3 on the same llama-cpp-python server, same rows, same MiniLM.

One llama-cpp-python server (``python -m relevancy.testing.llama_cpp_server``) with the
embedded SmolLM2 GGUF (n_threads 2, n_ctx 4096, one request at a time) serves both sides, in
alternating chunks (ours, Ragas, Ragas, ours...):

* **ours**: ``AnswerRelevancy(llm=make_generator("openai:smollm2", base_url=...),
  embeddings=make_embedder("local"))``, the backend as shipped, strictness 3, concurrency 4;
* **Ragas**: its collections ``AnswerRelevancy`` with instructor in JSON-schema mode
  (``bench.ragas_side`` in Ragas' venv), strictness 3, concurrency 1.

Also: where the server's time goes per row for each side (its own log); our concurrency 1/2/4
on a few more rows; parity of the two formulas on identical questions and vectors; the stock
set-ups of both (Ragas' documented ``llm_factory`` and its legacy ``evaluate()``; our backend as
shipped) on a few rows, last, as they can leave the server busy.
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from typing import Any

from bench.harness import chunks, facts, in_turn, load_average, log, main, r, row_seconds, table
from bench.rows import make_rows
from bench.setups import LLAMA_MODEL, LlamaServer, ragas, ragas_missing

STRICTNESS = 3


def ours(rows: list[dict], gen: Any, emb: Any, concurrency: int = 4) -> dict[str, Any]:
    from relevancy import AnswerRelevancy

    with tempfile.TemporaryDirectory(prefix="bench-vs-") as tmp:
        metric = AnswerRelevancy(
            llm=gen, embeddings=emb, cache=tmp, strictness=STRICTNESS, concurrency=concurrency
        )
        start = time.perf_counter()
        results = metric.score_many([(x["user_input"], x["response"]) for x in rows])
        return {"wall_s": time.perf_counter() - start, "results": results}


def _identical(sets: list[list[str]]) -> int:
    return sum(1 for qs in sets if len(qs) >= 2 and len(set(qs)) == 1)


def summarize_ours(results: list[Any], wall: float) -> dict[str, Any]:
    lat = [x.timings.get("total_s", float("nan")) for x in results]
    return {
        "wall_s": r(wall),
        "pairs_per_s": r(len(results) / wall),
        "nan_rows": sum(not x.ok for x in results),
        "zeroed_noncommittal": sum(bool(x.ok and x.noncommittal) for x in results),
        "identical_3_questions": _identical(
            [[q.question for q in x.questions if q.similarity is not None] for x in results]
        ),
        **row_seconds(lat),
        "prompt_tokens": sum(x.usage.get("prompt_tokens", 0) for x in results),
        "completion_tokens": sum(x.usage.get("completion_tokens", 0) for x in results),
        "errors": sorted({(x.error or "")[:120] for x in results if x.error})[:3],
    }


def summarize_ragas(rows: list[dict], wall: float) -> dict[str, Any]:
    values = [x["value"] for x in rows]
    secs = [x["seconds"] for x in rows if x.get("seconds") is not None]
    gens = [[g["question"] for g in x.get("generations", [])] for x in rows]
    return {
        "wall_s": r(wall),
        "pairs_per_s": r(len(rows) / wall) if wall else None,
        "nan_rows": sum(v is None for v in values),
        "zeroed_noncommittal": sum(v == 0.0 for v in values),
        "identical_3_questions": _identical(gens) if any(gens) else None,
        **row_seconds(secs),
        "errors": sorted({(x.get("error") or "")[:120] for x in rows if x.get("error")})[:5],
    }


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
    }


def parity_cases(results: list[Any], n_random: int = 200, seed: int = 0) -> list[dict]:
    """Identical inputs for both formulas: our real questions, flags and MiniLM vectors, plus
    random ones (negative cosines, all/some/no flags, 1-5 questions, unnormalised)."""
    cases = []
    for x in results:
        usable = [q for q in x.questions if q.similarity is not None]
        if usable and x.user_input_embedding is not None:
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
        k, dim, scale = rng.randint(1, 5), rng.choice([8, 384]), rng.choice([1.0, 0.01, 37.0])

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


def compare(
    server: LlamaServer, rows: list[dict], gen: Any, emb: Any, args: Any, with_ragas: bool
) -> dict[str, Any]:
    """Ours and Ragas on ``rows``, alternating chunks; the server's log per side."""
    got: dict[str, Any] = {"ours": [], "ragas": []}
    wall = {"ours": 0.0, "ragas": 0.0}
    served: dict[str, list[dict[str, float]]] = {"ours": [], "ragas": []}
    per_chunk, meta = [], {}
    for c, part in enumerate(chunks(rows, args.chunks)):
        walls = {}
        for side in in_turn(("ours", "ragas") if with_ragas else ("ours",), c):
            offset = server.offset()
            if side == "ours":
                o = ours(part, gen, emb)
                got["ours"] += o["results"]
            else:
                o = ragas(
                    part,
                    server.base_url,
                    mode="collections",
                    llm="jsonschema",
                    model=LLAMA_MODEL,
                    concurrency=1,
                    row_timeout=args.ragas_row_timeout,
                )
                got["ragas"] += o["rows"]
                meta = {k: o[k] for k in ("ragas_version", "import_s", "peak_rss_mb")}
            walls[side] = o["wall_s"]
            wall[side] += o["wall_s"]
            served[side] += server.requests_since(offset)
            log(f"  chunk {c} {side} {o['wall_s']:.1f} s")
        per_chunk.append(walls)
    out: dict[str, Any] = {"ours": summarize_ours(got["ours"], wall["ours"])}
    out["ours"].update(
        backend="openai-compatible backend as shipped",
        concurrency=4,
        server=server_split(served["ours"], len(got["ours"])),
    )
    if not with_ragas:
        return out | {"_results": got["ours"]}
    out["ragas"] = summarize_ragas(got["ragas"], wall["ragas"])
    out["ragas"].update({k: r(v, 2) if isinstance(v, float) else v for k, v in meta.items()})
    out["ragas"]["concurrency"] = 1
    out["ragas"].update(
        setup="collections AnswerRelevancy, instructor Mode.JSON_SCHEMA",
        server=server_split(served["ragas"], len(got["ragas"])),
    )
    out["ours_over_ragas_pairs_per_s"] = r(wall["ragas"] / wall["ours"])
    out["ours_over_ragas_per_chunk"] = [r(w["ragas"] / w["ours"]) for w in per_chunk]
    pairs = [
        (a.value, b["value"])
        for a, b in zip(got["ours"], got["ragas"])
        if a.ok and b["value"] is not None
    ]
    if len(pairs) > 2:
        import numpy as np

        xs, ys = np.array(pairs).T
        out["score_correlation_pearson"] = r(float(np.corrcoef(xs, ys)[0, 1]))
        out["mean_score"] = {"ours": r(xs.mean()), "ragas": r(ys.mean())}
    return out | {"_results": got["ours"]}


def measure(args: argparse.Namespace) -> dict[str, Any]:
    """Start the server, then ours against Ragas, the sweep, parity and the stock set-ups."""
    from relevancy import make_embedder, make_generator

    rows = make_rows(args.rows, seed=1)
    out: dict[str, Any] = {"bench": "vs_ragas", "rows": len(rows), "strictness": STRICTNESS}
    missing = ragas_missing(minilm=True)
    if missing:
        out["ragas_skipped"] = missing
        log("vs_ragas: Ragas' side skipped:", missing)
    with LlamaServer() as server:
        out["server"] = {
            "start_s": r(server.start_s),
            "n_threads": server.threads,
            "n_ctx": server.n_ctx,
            "omp_wait_policy": server.omp_wait_policy,
        }
        log(f"vs_ragas: server {server.base_url} in {server.start_s:.1f} s, {load_average()}")
        emb = make_embedder("local")
        emb.embed(["warm-up"])
        gen = make_generator(f"openai:{LLAMA_MODEL}", base_url=server.base_url)  # as shipped
        ours(rows[:1], gen, emb)  # warm the server's KV cache with our prefix
        out.update(compare(server, rows, gen, emb, args, with_ragas=not missing))
        results = out.pop("_results")

        # our concurrency against a one-request-at-a-time server
        sweep = make_rows(args.rows + args.sweep_rows, seed=1)[args.rows :]
        out["ours_concurrency_sweep"] = {"rows": len(sweep)}
        for conc in (1, 2, 4):
            o = ours(sweep, gen, emb, concurrency=conc)
            out["ours_concurrency_sweep"][f"c{conc}_pairs_per_s"] = r(len(sweep) / o["wall_s"])

        cases = parity_cases(results)
        mine = [ours_formula(c) for c in cases]
        out["parity"] = {"cases": len(cases), "from_run": sum(c["source"] == "run" for c in cases)}
        if not missing:
            theirs = ragas(cases, server.base_url, mode="parity")
            for key in ("legacy", "collections"):
                both = [(a, b) for a, b in zip(mine, theirs[key]) if not (a != a and b != b)]
                out["parity"][f"max_abs_diff_{key}"] = max(
                    (abs(a - b) for a, b in both), default=None
                )
                out["parity"][f"nan_mismatches_{key}"] = sum(
                    (a != a) != (b != b) for a, b in zip(mine, theirs[key])
                )

        stock_rows = rows[: args.stock_rows]
        stock: dict[str, Any] = {"rows": len(stock_rows), "row_timeout_s": args.stock_timeout}
        o = ours(stock_rows, make_generator(f"openai:{LLAMA_MODEL}", base_url=server.base_url), emb)
        stock["ours_as_shipped"] = summarize_ours(o["results"], o["wall_s"])
        if not missing:  # rows at once, as Ragas' own batch scoring and evaluate() do
            for key, mode, setup in (
                (
                    "ragas_stock",
                    "collections",
                    "llm_factory (instructor Mode.JSON), collections API",
                ),
                (
                    "ragas_legacy",
                    "legacy",
                    "evaluate() + ResponseRelevancy + LangchainLLMWrapper"
                    f"(ChatOpenAI), RunConfig(timeout={int(args.stock_timeout)}) else default",
                ),
            ):
                g = ragas(
                    stock_rows,
                    server.base_url,
                    mode=mode,
                    llm="stock",
                    model=LLAMA_MODEL,
                    row_timeout=args.stock_timeout,
                    concurrency=len(stock_rows),
                )
                stock[key] = summarize_ragas(g["rows"], g["wall_s"]) | {"setup": setup}
        out["stock"] = stock
        out["server"]["peak_rss_mb"] = r(server.hwm_mb(), 1)
    return out


_SPLIT = (
    "requests_per_row",
    "prompt_tokens_reused_per_row",
    "prompt_tokens_evaluated_per_row",
    "completion_tokens_per_row",
    "server_s_per_row",
    "prompt_eval_s_per_row",
    "decode_s_per_row",
    "other_s_per_row",
)


def _parity(par: dict[str, Any]) -> str | None:
    """``"1.1e-16 / 2.2e-16"``: the largest differences from Ragas' two code paths."""
    if par.get("max_abs_diff_legacy") is None:
        return None
    legacy, collections = par.get("max_abs_diff_legacy", 0), par.get("max_abs_diff_collections", 0)
    return f"{legacy:.1e} / {collections:.1e}"


def tables(fig: dict[str, Any]) -> dict[str, str]:
    """Both sides, the ratio and its goal, the server's time, the sweep, parity, stock set-ups."""
    o, g = fig["ours"], fig.get("ragas")
    keys = (
        "pairs_per_s",
        "nan_rows",
        "zeroed_noncommittal",
        "identical_3_questions",
        "p50_row_s",
        "p95_row_s",
    )
    sides = [[f"ours ({o['backend']}, concurrency {o['concurrency']})", *(o[k] for k in keys)]]
    if g:
        sides.append(
            [
                f"Ragas {g.get('ragas_version', '')} ({g['setup']}, concurrency "
                f"{g.get('concurrency')})",
                *(g[k] for k in keys),
            ]
        )
    main_table = table(
        [
            "",
            "pairs/s",
            "NaN rows",
            "zeroed (noncommittal)",
            "3 identical questions",
            "p50 row s",
            "p95 row s",
        ],
        sides,
    )
    if not g:
        return {"": main_table + f"\n\nRagas' side skipped: {fig.get('ragas_skipped')}"}
    par, srv, st = fig.get("parity", {}), fig.get("server", {}), fig.get("stock", {})
    ratio = facts(
        [
            (
                "ours / Ragas, pairs/s (goal: at least 3x, with fewer NaN rows)",
                fig["ours_over_ragas_pairs_per_s"],
            ),
            ("per chunk", fig.get("ours_over_ragas_per_chunk")),
            (
                "Pearson correlation of the two scores (rows both scored)",
                fig.get("score_correlation_pearson"),
            ),
            (
                "mean score, ours / Ragas",
                "{ours:.2f} / {ragas:.2f}".format(**fig["mean_score"])
                if fig.get("mean_score")
                else None,
            ),
            (
                f"parity: max abs diff over {par.get('cases')} cases ({par.get('from_run')} "
                "from this run), legacy `_calculate_score` / collections `ascore` (goal: below "
                "1e-9)",
                _parity(par),
            ),
            (
                "server start, s / server peak RSS, MiB",
                f"{srv.get('start_s', 0):.2f} / {srv.get('peak_rss_mb', 0):,.0f}",
            ),
            (
                "peak RSS, MiB: our process / Ragas' process (its import, s, not counted)",
                f"{fig.get('peak_rss_mb', 0):,.0f} / {g.get('peak_rss_mb', 0):,.0f} "
                f"({g.get('import_s', 0):.2f})",
            ),
        ]
    )
    split = table(
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
        [
            [label, *(d["server"].get(k) for k in _SPLIT)]
            for label, d in (("ours", o), ("Ragas", g))
            if d.get("server")
        ],
    )
    sw = fig.get("ours_concurrency_sweep", {})
    sweep = table(
        [f"our concurrency ({sw.get('rows')} rows)", "pairs/s"],
        [[k.split("_")[0], v] for k, v in sw.items() if k != "rows"],
    )
    stock = table(
        ["set-up", "NaN rows", "wall s", "errors"],
        [
            [
                label + st[key].get("setup", ""),
                f"{st[key]['nan_rows']}/{st['rows']}",
                st[key]["wall_s"],
                "; ".join(st[key].get("errors", []))[:160],
            ]
            for key, label in (
                ("ours_as_shipped", "ours as shipped (`make_generator('openai:…')`)"),
                ("ragas_stock", "Ragas stock: "),
                ("ragas_legacy", "Ragas legacy: "),
            )
            if key in st
        ],
    )
    return {
        "": main_table + "\n\n" + ratio,
        "server": split,
        "sweep": sweep,
        "stock": f"{st.get('rows')} rows, a per-row time limit of "
        f"{st.get('row_timeout_s', 0):.0f} s:\n\n{stock}",
    }


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--chunks", type=int, default=4, help="alternating chunks (default 4)")
    p.add_argument("--sweep-rows", type=int, default=4, help="rows per concurrency setting")
    p.add_argument("--stock-rows", type=int, default=3, help="rows per stock set-up")
    p.add_argument("--stock-timeout", type=float, default=30.0, help="seconds per stock row")
    p.add_argument(
        "--ragas-row-timeout",
        type=float,
        default=120.0,
        help="seconds per Ragas row in the comparison (then NaN, as a failed row)",
    )


if __name__ == "__main__":
    raise SystemExit(
        main(
            "vs_ragas",
            measure,
            arguments,
            rows=100,
            quick=[
                "--rows",
                "4",
                "--chunks",
                "2",
                "--sweep-rows",
                "2",
                "--stock-rows",
                "1",
                "--stock-timeout",
                "20",
            ],
        )
    )
