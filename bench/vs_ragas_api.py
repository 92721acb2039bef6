"""Ours against Ragas 0.4.3 where most users run it: a remote API (the toy server's cost model).

The toy OpenAI-compatible server (``relevancy.testing.openai_server``, its own process) answers
like a remote API: ``--latency`` seconds per request plus ``--token-latency`` per completion
token (the ``n`` choices of a request decoded side by side), any number of requests at once,
usage counted like a BPE tokenizer and billed as OpenAI bills it (the prompt once per request,
every choice's completion). Its usage log, one line per request, says what each side was
billed. Both sides use the server's chat model and its embeddings, strictness 3:

* **ours**: ``build_metric(llm="openai:toy-chat", embeddings="openai:toy-embed",
  base_url=...)``, a fresh cache folder per run (nothing is served from a cache);
* **Ragas**: its collections ``AnswerRelevancy`` with ``llm_factory`` and
  ``embedding_factory("openai", ...)`` as documented (``bench/_ragas_api_side.py``, in
  ``bench/.venv-ragas``); at its defaults also the legacy ``evaluate()``.

Settings: each side's defaults (ours: the library's default concurrency; Ragas' collections
metric: every row of a chunk at once, as its ``abatch_score`` does; ``evaluate()``: 16 workers),
then equal concurrency, all on a server that honours ``n`` and again on one that ignores it.
Within a setting, the same rows in alternating chunks (ours, Ragas, Ragas, ours, ...).
:func:`render` writes the RESULTS.md section.
"""

from __future__ import annotations

import json
import os
import signal
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
CHAT, EMBED = "toy-chat", "toy-embed"
STRICTNESS = 3
#: the targets of issue 14
TARGETS = {"defaults": 3.0, "equal": 1.5, "prompt_tokens": 0.5, "nan_rows": 0}


class ApiServer:
    """The toy server with the remote-API cost model, in a subprocess, logging usage."""

    def __init__(self, *, latency: float, token_latency: float, honour_n: bool) -> None:
        from relevancy.testing.processes import ServerProcess, free_port

        self._tmp = tempfile.TemporaryDirectory(prefix="bench-api-")
        self.usage_log = Path(self._tmp.name) / "usage.jsonl"
        self.usage_log.touch()
        port = free_port()
        self.base_url = f"http://127.0.0.1:{port}/v1"
        cmd = [sys.executable, "-m", "relevancy.testing.openai_server", "--port", str(port),
               "--latency", str(latency), "--token-latency", str(token_latency),
               "--tokenizer", "approx", "--usage-log", str(self.usage_log)]  # fmt: skip
        if not honour_n:
            cmd.append("--no-n")
        self.process = ServerProcess(
            cmd, url_to_poll=self.base_url + "/models", timeout=60, poll_interval=0.2
        ).start()

    def offset(self) -> int:
        return self.usage_log.stat().st_size

    def usage_since(self, offset: int) -> list[dict[str, Any]]:
        time.sleep(0.1)  # the last request's line
        with self.usage_log.open("rb") as fh:
            fh.seek(offset)
            return [json.loads(line) for line in fh.read().decode().splitlines() if line]

    def stop(self) -> None:
        self.process.stop()
        self._tmp.cleanup()


# ------------------------------------------------------------------------------------------
# the two sides
# ------------------------------------------------------------------------------------------


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
                "value": None if not x.ok else x.value,
                "error": x.error,
                "seconds": x.timings.get("total_s"),
            }
            for x in results
        ],
    }


def ragas(mode: str, rows: list[dict], base_url: str, concurrency: int = 0) -> dict[str, Any]:
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
        json.dump(rows, fh)
        path = fh.name
    cmd = [str(RAGAS_PY), str(ROOT / "bench" / "_ragas_api_side.py"), "--mode", mode,
           "--rows-file", path, "--base-url", base_url, "--model", CHAT, "--embedding-model",
           EMBED, "--concurrency", str(concurrency), "--strictness", str(STRICTNESS)]  # fmt: skip
    env = dict(os.environ, RAGAS_DO_NOT_TRACK="true", PYTHONPATH=str(ROOT))
    try:
        proc = subprocess.run(
            cmd, stdout=subprocess.PIPE, stderr=None, text=True, env=env, timeout=1800
        )
    finally:
        os.unlink(path)
    if proc.returncode != 0:
        raise RuntimeError(f"ragas side failed ({proc.returncode}); see the log above")
    return json.loads(proc.stdout)


def ragas_missing() -> str | None:
    if not RAGAS_PY.exists():
        return f"no {RAGAS_PY.relative_to(ROOT)}: see bench/README.md to create it"
    proc = subprocess.run(
        [str(RAGAS_PY), "-c", "import ragas, instructor, langchain_openai"],
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


def summarize(rows: list[dict], wall: float, usage: list[dict]) -> dict[str, Any]:
    n = max(len(rows), 1)
    chat = [u for u in usage if u["path"].endswith("/chat/completions") and u["status"] == 200]
    emb = [u for u in usage if u["path"].endswith("/embeddings") and u["status"] == 200]
    secs = [x["seconds"] for x in rows if x.get("seconds") is not None]
    errors = sorted({(x.get("error") or "")[:120] for x in rows if x.get("error")})
    return {
        "rows": len(rows),
        "wall_s": r(wall),
        "pairs_per_s": r(len(rows) / wall) if wall else None,
        "p50_row_s": r(percentile(secs, 50)) if secs else None,
        "p95_row_s": r(percentile(secs, 95)) if secs else None,
        "nan_rows": sum(x["value"] is None for x in rows),
        "chat_requests_per_row": r(len(chat) / n, 2),
        "prompt_tokens_per_row": r(sum(u.get("prompt_tokens", 0) for u in chat) / n, 1),
        "completion_tokens_per_row": r(sum(u.get("completion_tokens", 0) for u in chat) / n, 1),
        "embedding_requests_per_row": r(len(emb) / n, 2),
        "embedding_tokens_per_row": r(sum(u.get("prompt_tokens", 0) for u in emb) / n, 1),
        "failed_requests": sum(u["status"] != 200 for u in usage),
        "errors": errors[:3],
    }


def run_setting(
    server: ApiServer, rows: list[dict], chunks: int, sides: dict[str, tuple[str, Any]]
) -> dict[str, Any]:
    """Every side on the same rows, chunk by chunk, the order alternating per chunk."""
    size = -(-len(rows) // max(1, chunks))
    parts = [rows[i : i + size] for i in range(0, len(rows), size)]
    got: dict[str, dict[str, Any]] = {s: {"rows": [], "wall": 0.0, "usage": []} for s in sides}
    per_chunk: list[dict[str, float]] = []
    for c, part in enumerate(parts):
        order = list(sides) if c % 2 == 0 else list(reversed(sides))
        walls: dict[str, float] = {}
        for side in order:
            kind, arg = sides[side]
            offset = server.offset()
            if kind == "ours":
                out = ours(part, server.base_url, arg)
                got[side]["concurrency"] = out["concurrency"]
            else:
                out = ragas(kind, part, server.base_url, arg)
                got[side]["ragas_version"] = out.get("ragas_version")
            got[side]["rows"] += out["rows"]
            got[side]["wall"] += out["wall_s"]
            got[side]["usage"] += server.usage_since(offset)
            walls[side] = out["wall_s"]
            log(f"    chunk {c} {side:<18} {len(part)} rows {out['wall_s']:.2f} s")
        per_chunk.append(walls)
    result: dict[str, Any] = {"chunks": len(parts), "chunk_rows": size}
    for side, g in got.items():
        result[side] = summarize(g["rows"], g["wall"], g["usage"])
        for key in ("concurrency", "ragas_version"):
            if key in g:
                result[side][key] = g[key]
    if "ours" in got and "ragas" in got:
        result["ours_over_ragas_pairs_per_s"] = r(got["ragas"]["wall"] / got["ours"]["wall"])
        result["ours_over_ragas_per_chunk"] = [
            r(w["ragas"] / w["ours"]) for w in per_chunk if w.get("ours")
        ]
        if "ragas_legacy" in got:
            result["ours_over_ragas_legacy_pairs_per_s"] = r(
                got["ragas_legacy"]["wall"] / got["ours"]["wall"]
            )
            pt = result["ragas_legacy"]["prompt_tokens_per_row"]
            if pt:
                result["ours_over_ragas_legacy_prompt_tokens"] = r(
                    result["ours"]["prompt_tokens_per_row"] / pt
                )
        pt = result["ragas"]["prompt_tokens_per_row"]
        if pt:
            result["ours_over_ragas_prompt_tokens"] = r(
                result["ours"]["prompt_tokens_per_row"] / pt
            )
    return result


def build_parser() -> Any:
    p = parser(__doc__.splitlines()[0], default_rows=120)
    p.add_argument("--chunks", type=int, default=2, help="alternating chunks per setting")
    p.add_argument("--latency", type=float, default=0.3, help="seconds per request")
    p.add_argument("--token-latency", type=float, default=0.01, help="seconds per token")
    p.add_argument(
        "--equal", default="4,16,60", help="concurrencies at which both sides are compared"
    )
    p.add_argument("--no-legacy", action="store_true", help="skip Ragas' evaluate()")
    p.add_argument(
        "--one-rows",
        type=int,
        default=20,
        help="rows of the one-at-a-time setting (Ragas scoring a row at a time; 0: skip)",
    )
    p.add_argument(
        "--ignored-n-equal",
        default="4",
        help="concurrencies compared on the server that ignores n",
    )
    return p


def measure(args: Any) -> dict[str, Any]:
    rows = make_rows(args.rows, seed=3)
    rows = [{"user_input": x["user_input"], "response": x["response"]} for x in rows]
    out: dict[str, Any] = {
        "bench": "vs_ragas_api",
        "rows": len(rows),
        "strictness": STRICTNESS,
        "server": {"latency_s": args.latency, "token_latency_s": args.token_latency},
        "load_average_start": load_average(),
        "targets": TARGETS,
    }
    missing = ragas_missing()
    if missing:
        out["ragas_skipped"] = missing
        log("vs_ragas_api: Ragas side unavailable:", missing)
    equal = [int(c) for c in args.equal.split(",") if c.strip()]
    ignored_equal = [int(c) for c in args.ignored_n_equal.split(",") if c.strip()]
    for honour_n, key in ((True, "n_honoured"), (False, "n_ignored")):
        server = ApiServer(
            latency=args.latency, token_latency=args.token_latency, honour_n=honour_n
        )
        log(f"vs_ragas_api: {key} server at {server.base_url}, load {load_average()}")
        settings: dict[str, Any] = {}
        try:
            ours(rows[:2], server.base_url, None)  # warm-up: imports, connections
            defaults: dict[str, tuple[str, Any]] = {"ours": ("ours", None)}
            if not missing:
                defaults["ragas"] = ("collections", 0)
                if honour_n and not args.no_legacy:
                    defaults["ragas_legacy"] = ("legacy", 0)
            log(f"  {key}: defaults")
            settings["defaults"] = run_setting(server, rows, args.chunks, defaults)
            if honour_n and args.one_rows and not missing:
                log(f"  {key}: ours at its default, Ragas one row at a time")
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
                log(f"  {key}: both at concurrency {c}")
                settings[f"equal_{c}"] = run_setting(server, rows, args.chunks, sides)
        finally:
            server.stop()
        out[key] = settings
    out["targets_met"] = targets_met(out)
    out["peak_rss_mb"] = r(vm_hwm_mb(), 1)
    return out


def targets_met(fig: dict[str, Any]) -> dict[str, Any]:
    """Each target of the issue against these figures (None: not measured)."""
    met: dict[str, Any] = {}
    for key in ("n_honoured", "n_ignored"):
        settings = fig.get(key) or {}
        d = settings.get("defaults", {})
        met[f"{key}_defaults"] = _at_least(d.get("ours_over_ragas_pairs_per_s"), 3.0)
        if "ours_over_ragas_legacy_pairs_per_s" in d:
            met[f"{key}_defaults_vs_evaluate"] = _at_least(
                d["ours_over_ragas_legacy_pairs_per_s"], 3.0
            )
        if "one_at_a_time" in settings:
            met[f"{key}_one_at_a_time"] = _at_least(
                settings["one_at_a_time"].get("ours_over_ragas_pairs_per_s"), 3.0
            )
        for name, s in settings.items():
            if name.startswith("equal_"):
                met[f"{key}_{name}"] = _at_least(s.get("ours_over_ragas_pairs_per_s"), 1.5)
        tokens = d.get("ours_over_ragas_prompt_tokens")
        met[f"{key}_prompt_tokens"] = None if tokens is None else tokens <= 0.5
        nan = [s.get("ours", {}).get("nan_rows") for s in settings.values()]
        met[f"{key}_nan_rows"] = None if not nan else all(x == 0 for x in nan)
    return met


def _at_least(value: float | None, target: float) -> bool | None:
    return None if value is None else value >= target


def main() -> int:
    args = build_parser().parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stop the server on the way out
    emit(measure(args), args.json)
    return 0


# ------------------------------------------------------------------------------------------
# RESULTS.md
# ------------------------------------------------------------------------------------------


_SIDE_LABELS = {
    "ours": "ours",
    "ragas": "Ragas collections `AnswerRelevancy`",
    "ragas_legacy": "Ragas `evaluate()` + `ResponseRelevancy`",
}


def _conc(side: str, setting: str, s: dict[str, Any], d: dict[str, Any]) -> str:
    if side == "ours":
        default = setting in ("defaults", "one_at_a_time")
        return f"{d.get('concurrency')}" + (" (default)" if default else "")
    if side == "ragas_legacy":
        return "16 workers (default RunConfig)"
    if setting == "defaults":
        return f"all {s['chunk_rows']} rows of a chunk (its `abatch_score`)"
    if setting == "one_at_a_time":
        return "1 (`ascore` row by row)"
    return setting.split("_")[1]


def render(fig: dict[str, Any], record: dict[str, Any] | None = None) -> str:
    """The "Against Ragas on a remote API" section of RESULTS.md."""
    srv = fig["server"]
    parts = [
        f"{fig['rows']} rows, strictness {fig['strictness']}, the toy OpenAI-compatible server "
        f"in its own process as a remote API: {fmt(srv['latency_s'])} s per request plus "
        f"{fmt(1000 * srv['token_latency_s'], 0)} ms per completion token (a request's `n` "
        "choices decoded side by side), any number of requests at once, usage counted like a "
        "BPE tokenizer and billed as OpenAI bills it (the prompt once per request). Both sides "
        "use its chat model and its embeddings; tokens are the server's own count; the same "
        "rows in alternating chunks per setting; no cache on either side.",
    ]
    if fig.get("ragas_skipped"):
        parts += ["", f"Ragas side skipped: {fig['ragas_skipped']}"]
    header = ["server", "setting", "side", "rows at once", "pairs/s", "p50 row s", "p95 row s",
              "chat req/row", "prompt tok/row", "completion tok/row", "embed req/row",
              "NaN rows"]  # fmt: skip
    rows = []
    for key, label in (("n_honoured", "honours `n`"), ("n_ignored", "ignores `n`")):
        for setting, s in (fig.get(key) or {}).items():
            for side in ("ours", "ragas", "ragas_legacy"):
                d = s.get(side)
                if not d:
                    continue
                rows.append([
                    label, setting.replace("_", " "), _SIDE_LABELS[side],
                    _conc(side, setting, s, d), d["pairs_per_s"], d["p50_row_s"],
                    d["p95_row_s"], d["chat_requests_per_row"], d["prompt_tokens_per_row"],
                    d["completion_tokens_per_row"], d["embedding_requests_per_row"],
                    d["nan_rows"],
                ])  # fmt: skip
    parts += ["", table(header, rows)]
    lines = []
    for key, label in (
        ("n_honoured", "server honouring `n`"),
        ("n_ignored", "server ignoring `n`"),
    ):
        for setting, s in (fig.get(key) or {}).items():
            if "ours_over_ragas_pairs_per_s" not in s:
                continue
            goal = 1.5 if setting.startswith("equal") else 3.0
            ratio = s["ours_over_ragas_pairs_per_s"]
            chunks = ", ".join(fmt(x) for x in s.get("ours_over_ragas_per_chunk", []))
            verdict = "met" if ratio >= goal else "**not met**"
            what = {
                "defaults": "each side's defaults",
                "one_at_a_time": "ours at its default, Ragas scoring a row at a time",
            }.get(setting, "both at concurrency " + setting.split("_")[-1])
            line = (
                f"* {label}, {what}: ours/Ragas pairs/s **{fmt(ratio)}x** "
                f"(target ≥ {fmt(goal, 1)}x: {verdict}; per chunk {chunks})"
            )
            tok = s.get("ours_over_ragas_prompt_tokens")
            if tok is not None and setting == "defaults":
                line += (
                    f"; prompt tokens per row ours/Ragas **{fmt(tok)}x** (target ≤ 0.5x: "
                    f"{'met' if tok <= 0.5 else '**not met**'})"
                )
            lines.append(line + ".")
            legacy = s.get("ours_over_ragas_legacy_pairs_per_s")
            if legacy is not None:
                lines.append(
                    f"* {label}, each side's defaults, Ragas' `evaluate()`: ours/Ragas pairs/s "
                    f"**{fmt(legacy)}x** (target ≥ 3.0x: "
                    f"{'met' if legacy >= 3.0 else '**not met**'}); prompt tokens per row "
                    f"**{fmt(s.get('ours_over_ragas_legacy_prompt_tokens'))}x**."
                )
    if lines:
        nan_ok = all(
            v
            for k, v in fig.get("targets_met", {}).items()
            if k.endswith("nan_rows") and v is not None
        )
        lines.append(
            f"* NaN rows, ours, every setting: {'0 (met)' if nan_ok else 'some (**not met**)'}."
        )
        parts += ["", "Against the targets:", "", *lines]
    parts += [
        "",
        f"Peak RSS of the bench process (ours) {fmt(fig.get('peak_rss_mb'), 0)} MiB; load "
        f"average at the start {' '.join(map(str, fig.get('load_average_start', [])))}.",
    ]
    return "\n".join(parts)


if __name__ == "__main__":
    raise SystemExit(main())
