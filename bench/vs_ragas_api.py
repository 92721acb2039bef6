"""Ours against Ragas 0.4.3 where most users run it: a remote API (the toy server's cost model).

The toy OpenAI-compatible server (its own process) answers like a remote API: ``--latency``
seconds per request plus ``--token-latency`` per completion token (a request's ``n`` choices
decoded side by side), any number of requests at once, usage counted like a BPE tokenizer and
billed as OpenAI bills it (the prompt once per request, every choice's completion); its usage
log says what each side was billed. Both sides use its chat model and its embeddings,
strictness 3, no cache:

* **ours**: ``build_metric(llm="openai:toy-chat", embeddings="openai:toy-embed", ...)``;
* **Ragas**: its collections ``AnswerRelevancy`` with ``llm_factory`` and
  ``embedding_factory("openai", ...)`` as documented (``bench.ragas_side``); at its defaults
  also the legacy ``evaluate()``.

Settings: each side's defaults (ours: the library's concurrency; Ragas' collections metric:
every row of a chunk at once, as its ``abatch_score``; ``evaluate()``: 16 workers), Ragas a row
at a time, then equal concurrency, on a server that honours ``n`` and on one that ignores it.
Within a setting, the same rows in alternating chunks.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from typing import Any

from bench.harness import against, chunks, in_turn, load_average, log, main, r, row_seconds, table
from bench.rows import make_rows
from bench.setups import ToyServer, ragas, ragas_missing

CHAT, EMBED = "toy-chat", "toy-embed"
STRICTNESS = 3


def ours(rows: list[dict], base_url: str, concurrency: int | None) -> dict[str, Any]:
    from relevancy.scoring.config import build_metric

    options: dict[str, Any] = {} if concurrency is None else {"concurrency": concurrency}
    with tempfile.TemporaryDirectory(prefix="bench-api-ours-") as tmp:
        metric = build_metric(
            llm=f"openai:{CHAT}",
            embeddings=f"openai:{EMBED}",
            base_url=base_url,
            strictness=STRICTNESS,
            cache=tmp,
            **options,
        )
        start = time.perf_counter()
        results = metric.score_many([(x["user_input"], x["response"]) for x in rows])
        wall = time.perf_counter() - start
    return {
        "wall_s": wall,
        "concurrency": metric.concurrency,
        "rows": [
            {
                "value": x.value if x.ok else None,
                "error": x.error,
                "seconds": x.timings.get("total_s"),
            }
            for x in results
        ],
    }


def summarize(rows: list[dict], wall: float, usage: list[dict]) -> dict[str, Any]:
    n = max(len(rows), 1)
    ok = [u for u in usage if u["status"] == 200]
    chat = [u for u in ok if u["path"].endswith("/chat/completions")]
    emb = [u for u in ok if u["path"].endswith("/embeddings")]
    secs = [x["seconds"] for x in rows if x.get("seconds") is not None]
    return {
        "rows": len(rows),
        "wall_s": r(wall),
        "pairs_per_s": r(len(rows) / wall) if wall else None,
        **row_seconds(secs),
        "nan_rows": sum(x["value"] is None for x in rows),
        "chat_requests_per_row": r(len(chat) / n, 2),
        "prompt_tokens_per_row": r(sum(u.get("prompt_tokens", 0) for u in chat) / n, 1),
        "completion_tokens_per_row": r(sum(u.get("completion_tokens", 0) for u in chat) / n, 1),
        "embedding_requests_per_row": r(len(emb) / n, 2),
        "embedding_tokens_per_row": r(sum(u.get("prompt_tokens", 0) for u in emb) / n, 1),
        "failed_requests": len(usage) - len(ok),
        "errors": sorted({(x.get("error") or "")[:120] for x in rows if x.get("error")})[:3],
    }


def run_setting(
    server: ToyServer, rows: list[dict], n_chunks: int, sides: dict[str, tuple[str, Any]]
) -> dict[str, Any]:
    """Every side on the same rows, chunk by chunk, the order alternating per chunk.

    ``sides``: name -> ("ours", concurrency or None for the default) or (Ragas' mode,
    concurrency, 0 for all at once)."""
    parts = chunks(rows, n_chunks)
    got: dict[str, dict[str, Any]] = {s: {"rows": [], "wall": 0.0, "usage": []} for s in sides}
    per_chunk: list[dict[str, float]] = []
    for c, part in enumerate(parts):
        walls: dict[str, float] = {}
        for side in in_turn(list(sides), c):
            kind, conc = sides[side]
            offset = server.offset()
            if kind == "ours":
                out = ours(part, server.base_url, conc)
                got[side]["concurrency"] = out["concurrency"]
            else:
                out = ragas(
                    part,
                    server.base_url,
                    mode=kind,
                    llm="stock",
                    model=CHAT,
                    embeddings=f"api:{EMBED}",
                    concurrency=conc,
                )
                got[side]["ragas_version"] = out.get("ragas_version")
            got[side]["rows"] += out["rows"]
            got[side]["wall"] += out["wall_s"]
            got[side]["usage"] += server.usage_since(offset)
            walls[side] = out["wall_s"]
            log(f"    chunk {c} {side:<14} {len(part)} rows {out['wall_s']:.2f} s")
        per_chunk.append(walls)
    result: dict[str, Any] = {"chunks": len(parts), "chunk_rows": len(parts[0]) if parts else 0}
    for side, g in got.items():
        result[side] = summarize(g["rows"], g["wall"], g["usage"])
        result[side].update({k: g[k] for k in ("concurrency", "ragas_version") if k in g})
    if "ragas" in got:
        result["ours_over_ragas_pairs_per_s"] = r(got["ragas"]["wall"] / got["ours"]["wall"])
        result["ours_over_ragas_per_chunk"] = [r(w["ragas"] / w["ours"]) for w in per_chunk]
        for other, suffix in (("ragas", ""), ("ragas_legacy", "_legacy")):
            if other not in got:
                continue
            if other == "ragas_legacy":
                result["ours_over_ragas_legacy_pairs_per_s"] = r(
                    got["ragas_legacy"]["wall"] / got["ours"]["wall"]
                )
            tokens = result[other]["prompt_tokens_per_row"]
            if tokens:
                result[f"ours_over_ragas{suffix}_prompt_tokens"] = r(
                    result["ours"]["prompt_tokens_per_row"] / tokens
                )
    return result


def measure(args: argparse.Namespace) -> dict[str, Any]:
    rows = [
        {"user_input": x["user_input"], "response": x["response"]}
        for x in make_rows(args.rows, seed=3)
    ]
    out: dict[str, Any] = {
        "bench": "vs_ragas_api",
        "rows": len(rows),
        "strictness": STRICTNESS,
        "server": {"latency_s": args.latency, "token_latency_s": args.token_latency},
        "load_average_start": load_average(),
    }
    missing = ragas_missing(minilm=False)
    if missing:
        out["ragas_skipped"] = missing
        log("vs_ragas_api: Ragas' side skipped:", missing)
    equal = [int(c) for c in args.equal.split(",") if c.strip()]
    ignored_equal = [int(c) for c in args.ignored_n_equal.split(",") if c.strip()]
    for honour_n, key in ((True, "n_honoured"), (False, "n_ignored")):
        settings: dict[str, Any] = {}
        with ToyServer(
            latency=args.latency, token_latency=args.token_latency, honour_n=honour_n
        ) as server:
            log(f"vs_ragas_api: {key} server at {server.base_url}, load {load_average()}")
            ours(rows[:2], server.base_url, None)  # warm-up: imports, connections
            defaults: dict[str, tuple[str, Any]] = {"ours": ("ours", None)}
            if not missing:
                defaults["ragas"] = ("collections", 0)
                if honour_n and not args.no_legacy:
                    defaults["ragas_legacy"] = ("legacy", 0)
            settings["defaults"] = run_setting(server, rows, args.chunks, defaults)
            if honour_n and args.one_rows and not missing:
                settings["one_at_a_time"] = run_setting(
                    server,
                    rows[: args.one_rows],
                    args.chunks,
                    {"ours": ("ours", None), "ragas": ("collections", 1)},
                )
            for c in equal if honour_n else ignored_equal:
                sides: dict[str, tuple[str, Any]] = {"ours": ("ours", c)}
                if not missing:
                    sides["ragas"] = ("collections", c)
                settings[f"equal_{c}"] = run_setting(server, rows, args.chunks, sides)
        out[key] = settings
    return out


_LABELS = {
    "ours": "ours",
    "ragas": "Ragas collections `AnswerRelevancy`",
    "ragas_legacy": "Ragas `evaluate()` + `ResponseRelevancy`",
}
_SERVERS = {"n_honoured": "honours `n`", "n_ignored": "ignores `n`"}


def _at_once(side: str, setting: str, s: dict[str, Any], d: dict[str, Any]) -> str:
    if side == "ours":
        default = setting in ("defaults", "one_at_a_time")
        return f"{d.get('concurrency')}" + (" (default)" if default else "")
    if side == "ragas_legacy":
        return "16 workers (default RunConfig)"
    if setting == "defaults":
        return f"all {s['chunk_rows']} rows of a chunk (its `abatch_score`)"
    return "1 (`ascore` row by row)" if setting == "one_at_a_time" else setting.split("_")[1]


def tables(fig: dict[str, Any]) -> dict[str, str]:
    """Every setting's sides, then each target of issue 14 against its figure."""
    keys = (
        "pairs_per_s",
        "p50_row_s",
        "p95_row_s",
        "chat_requests_per_row",
        "prompt_tokens_per_row",
        "completion_tokens_per_row",
        "embedding_requests_per_row",
        "nan_rows",
    )
    rows, targets = [], []
    for key, server in _SERVERS.items():
        for setting, s in (fig.get(key) or {}).items():
            for side in ("ours", "ragas", "ragas_legacy"):
                if s.get(side):
                    rows.append(
                        [
                            server,
                            setting.replace("_", " "),
                            _LABELS[side],
                            _at_once(side, setting, s, s[side]),
                            *(s[side][k] for k in keys),
                        ]
                    )
            if "ours_over_ragas_pairs_per_s" not in s:
                continue
            goal = 1.5 if setting.startswith("equal") else 3.0
            what = f"server {server}, {setting.replace('_', ' ')}: ours / Ragas pairs/s"
            ratio = s["ours_over_ragas_pairs_per_s"]
            per_chunk = ", ".join(f"{x:.2f}" for x in s["ours_over_ragas_per_chunk"])
            targets.append((f"{what} (per chunk {per_chunk})", ratio, f"≥ {goal}", ratio >= goal))
            legacy = s.get("ours_over_ragas_legacy_pairs_per_s")
            if legacy is not None:
                targets.append((f"{what}, Ragas' `evaluate()`", legacy, "≥ 3.0", legacy >= 3.0))
            for suffix, label in (("", ""), ("_legacy", ", Ragas' `evaluate()`")):
                tokens = s.get(f"ours_over_ragas{suffix}_prompt_tokens")
                if setting == "defaults" and tokens is not None:
                    targets.append(
                        (
                            f"server {server}, defaults{label}: prompt tokens per row, "
                            "ours / Ragas",
                            tokens,
                            "≤ 0.5" if not suffix else "",
                            tokens <= 0.5 if not suffix else None,
                        )
                    )
    nan = [s["ours"]["nan_rows"] for key in _SERVERS for s in fig.get(key, {}).values()]
    targets.append(("NaN rows, ours, every setting", sum(nan), "0", not any(nan)))
    header = [
        "server",
        "setting",
        "side",
        "rows at once",
        "pairs/s",
        "p50 row s",
        "p95 row s",
        "chat req/row",
        "prompt tok/row",
        "completion tok/row",
        "embed req/row",
        "NaN rows",
    ]
    srv = fig["server"]
    settings = (
        f"{fig['rows']} rows; {srv['latency_s']} s per request plus "
        f"{1000 * srv['token_latency_s']:.0f} ms per completion token; peak RSS "
        f"(ours) {fig.get('peak_rss_mb', 0):,.0f} MiB; load at the start "
        f"{' '.join(map(str, fig.get('load_average_start', [])))}."
    )
    return {"": settings + "\n\n" + table(header, rows), "targets": against(targets)}


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--chunks", type=int, default=2, help="alternating chunks per setting")
    p.add_argument("--latency", type=float, default=0.3, help="seconds per request")
    p.add_argument("--token-latency", type=float, default=0.01, help="seconds per token")
    p.add_argument("--equal", default="4,16,60", help="concurrencies both sides are run at")
    p.add_argument("--no-legacy", action="store_true", help="skip Ragas' evaluate()")
    p.add_argument(
        "--one-rows", type=int, default=20, help="rows of Ragas scoring a row at a time (0: skip)"
    )
    p.add_argument(
        "--ignored-n-equal", default="4", help="concurrencies compared on the server that ignores n"
    )


QUICK = ["--rows", "8", "--chunks", "2", "--equal", "4", "--one-rows", "4", "--no-legacy"]

if __name__ == "__main__":
    raise SystemExit(main("vs_ragas_api", measure, arguments, rows=120, quick=QUICK))
