"""Faults and fuzz: ``relevancy score`` against a misbehaving server, and hostile input files.

Three parts, each through the command line as a user runs it:

1. **Faults.** The toy OpenAI-compatible server (``relevancy.testing.openai_server``) in this
   process injects a seeded mix of every fault kind (429, 500, 503, slow replies, dropped
   connections, bad JSON, missing fields, fewer choices, empty content, wrong embedding counts
   and sizes) into a share of its requests, and ``relevancy score`` runs as a subprocess over
   ``--rows`` rows (``--no-cache``, ``--timeout 2``). Counted: the faults the server injected,
   the rows written (rows lost: asked minus written), the NaN rows grouped by their reason, the
   exit code and any traceback on stderr. The preflight's first requests are served without
   faults in that run; each early fault on the preflight is then tried on its own.
2. **Fuzz.** ``--files`` hostile files from a seeded generator: deep JSON, invalid UTF-8, NUL
   bytes, ragged and binary CSVs, a CSV renamed ``.parquet``, truncated Parquet, wrong-type
   cells, mixed trace formats, bad JSONL lines, huge cells, formula-like headers, random byte
   flips and cuts of good files... Each goes through ``relevancy.cli.main(["score", ...])`` in
   this process against the same server without faults. An outcome is fine when it is a scored
   file (exit 0) or one line on stderr with exit 2; anything raised out of ``main`` is a
   traceback, and several lines on stderr with exit 2 is counted apart.

3. **Probe** (``bench/fault_probe.py``): the second fault probe's cases (issue 35), each with
   a bound on its time: waits past the patience, 429s without Retry-After, lying rate-limit
   headers, Batch API jobs that end badly, stranded sidecars, a server that stops, a password
   in ``--base-url``, OTLP spans of the wrong types, an unwritable cache, a web page taken for
   Phoenix, a model file doctor cannot read.

Target: no traceback in any part, no row lost, every probe case within its bound.
``--parts`` measures some of them (with ``--save --merge``, the others' figures are kept).
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import io
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.fault_probe import probe, probe_tables
from bench.harness import ROOT, against, fmt, log, main, r, table

#: the words a NaN row's error starts with, for grouping (the rest names rows and numbers)
_REASON = re.compile(r"^(.*?)(?:[:(;]|$)")


def _rows(n: int) -> list[dict[str, str]]:
    topics = ["France", "Japan", "Brazil", "Kenya", "Canada", "Norway", "Egypt", "Chile"]
    return [
        {
            "id": f"r{i}",
            "question": f"What is the capital of {topics[i % 8]} (case {i})?",
            "answer": f"The capital of {topics[i % 8]} is a large city; this is answer {i}. "
            + "It has a long history. " * (i % 3),
        }
        for i in range(n)
    ]


def _reason(error: str) -> str:
    text = re.sub(r"\d+", "N", str(error).strip())
    m = _REASON.match(text)
    return (m.group(1) if m else text).strip()[:70] or "(empty)"


def fault_run(n: int, rate: float, seed: int, folder: Path) -> dict[str, Any]:
    """``relevancy score`` as a subprocess on ``n`` rows against the faulty server."""
    import pandas as pd

    from relevancy.testing.openai_server import (
        CHAT_MODEL,
        EMBEDDING_MODEL,
        FaultPlan,
        OpenAICompatServer,
    )

    src = folder / "faults.csv"
    pd.DataFrame(_rows(n)).to_csv(src, index=False)
    out = folder / "faults_out.csv"
    plan = FaultPlan(rate=rate, seed=seed)
    with OpenAICompatServer(faults=plan, retry_after=0.05, slow_seconds=1.0) as srv:
        cmd = [
            sys.executable,
            "-m",
            "relevancy.cli",
            "score",
            str(src),
            "-o",
            str(out),
            "--llm",
            f"openai:{CHAT_MODEL}",
            "--embeddings",
            f"openai:{EMBEDDING_MODEL}",
            "--base-url",
            srv.base_url,
            "--no-cache",
            "--timeout",
            "2",
            "-q",
        ]
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        # the preflight's requests are served normally here (a faulted preflight is measured
        # on its own: preflight_faults); the rows meet the faults
        srv.script([None] * PREFLIGHT_REQUESTS)
        started = time.perf_counter()
        done = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT)
        wall = time.perf_counter() - started
        stats = srv.stats()
    written = pd.read_csv(out, keep_default_na=False) if out.exists() else pd.DataFrame()
    scores = pd.to_numeric(written.get("score", pd.Series(dtype=float)), errors="coerce")
    nan = written[scores.isna()] if len(written) else written
    reasons = collections.Counter(_reason(e) for e in nan.get("error", []))
    ids = set(written.get("id", pd.Series(dtype=str)).astype(str))
    lost = [row["id"] for row in _rows(n) if row["id"] not in ids]
    log(
        f"  faults: {n} rows, {sum(stats['by_fault'].values())} faults, exit {done.returncode}, "
        f"{len(written)} written, {len(nan)} NaN, {wall:.0f} s"
    )
    return {
        "rows": n,
        "fault_rate": rate,
        "seed": seed,
        "requests": stats["total"],
        "faults_injected": int(sum(stats["by_fault"].values())),
        "faults_by_kind": dict(sorted(stats["by_fault"].items())),
        "exit": done.returncode,
        "rows_written": len(written),
        "rows_lost": len(lost),
        "nan_rows": len(nan),
        "nan_reasons": dict(reasons.most_common()),
        "tracebacks": done.stderr.count("Traceback (most recent call last)"),
        "stderr_tail": done.stderr.strip().splitlines()[-3:],
        "wall_s": r(wall, 1),
    }


#: requests the CLI's preflight sends before the first row (the models list, each model)
PREFLIGHT_REQUESTS = 3


def preflight_faults(folder: Path) -> list[dict[str, Any]]:
    """Each early fault on the preflight's first request: the exit code and whether stderr
    holds a traceback (the row run above keeps its preflight clear of faults)."""
    import pandas as pd

    from relevancy.testing.openai_server import (
        CHAT_MODEL,
        EARLY_FAULTS,
        EMBEDDING_MODEL,
        OpenAICompatServer,
    )

    src = folder / "preflight.csv"
    pd.DataFrame(_rows(3)).to_csv(src, index=False)
    out = []
    for kind in [*sorted(EARLY_FAULTS), "missing_fields"]:
        with OpenAICompatServer(retry_after=0.05) as srv:
            srv.script([kind])
            cmd = [
                sys.executable,
                "-m",
                "relevancy.cli",
                "score",
                str(src),
                "-o",
                str(folder / "preflight_out.csv"),
                "--llm",
                f"openai:{CHAT_MODEL}",
                "--embeddings",
                f"openai:{EMBEDDING_MODEL}",
                "--base-url",
                srv.base_url,
                "--no-cache",
                "--timeout",
                "2",
                "-q",
            ]
            env = {**os.environ, "PYTHONPATH": str(ROOT)}
            done = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT)
        lines = done.stderr.strip().splitlines()
        out.append(
            {
                "fault": kind,
                "exit": done.returncode,
                "traceback": "Traceback (most recent call last)" in done.stderr,
                "last_line": lines[-1][:160] if lines else "",
            }
        )
    log(f"  preflight faults: {[(p['fault'], p['exit'], p['traceback']) for p in out]}")
    return out


# -- the hostile files ----------------------------------------------------------------------

_GOOD = [{"question": f"What is item {i}?", "answer": f"Item {i} is a thing."} for i in range(4)]


def _csv(rows: list[dict[str, Any]]) -> bytes:
    import pandas as pd

    return pd.DataFrame(rows).to_csv(index=False).encode()


def _jsonl(rows: list[Any]) -> bytes:
    return "".join(json.dumps(x) + "\n" for x in rows).encode()


def _parquet(rows: list[dict[str, Any]]) -> bytes:
    import pandas as pd

    buf = io.BytesIO()
    pd.DataFrame(rows).to_parquet(buf)
    return buf.getvalue()


def _deep(depth: int) -> bytes:
    return ("[" * depth + "]" * depth).encode()


def _deep_object(depth: int) -> bytes:
    return ('{"a":' * depth + "1" + "}" * depth).encode()


#: (name, suffix, bytes) makers; the seeded ones take the generator
_FIXED: list[tuple[str, str, Callable[[], bytes]]] = [
    ("deep JSON array", ".json", lambda: _deep(100_000)),
    ("deep JSON object", ".json", lambda: _deep_object(100_000)),
    ("deep JSONL line", ".jsonl", lambda: _jsonl(_GOOD[:1]) + _deep(50_000) + b"\n"),
    (
        "deep JSON in a cell",
        ".jsonl",
        lambda: _jsonl([{"question": "Q?", "answer": {"x": json.loads(_deep(500))}}]),
    ),
    ("empty file", ".csv", lambda: b""),
    ("header only", ".csv", lambda: b"question,answer\n"),
    ("invalid UTF-8", ".csv", lambda: b"question,answer\n\xff\xfe What?,\xc3\x28 bad\n"),
    ("NUL bytes", ".csv", lambda: b"question,answer\nWh\x00at?,It\x00 is.\n"),
    ("ragged CSV", ".csv", lambda: b'question,answer\nA?,B.,extra,more\nC?\n"open quote,D.\n'),
    ("CSV renamed .parquet", ".parquet", lambda: _csv(_GOOD)),
    ("truncated Parquet", ".parquet", lambda: _parquet(_GOOD)[:200]),
    ("JSON renamed .csv", ".csv", lambda: json.dumps(_GOOD).encode()),
    ("binary noise", ".csv", lambda: bytes(range(256)) * 8),
    ("bad JSONL line", ".jsonl", lambda: _jsonl(_GOOD[:2]) + b"{not json\n" + _jsonl(_GOOD[2:])),
    ("JSON scalar", ".json", lambda: b"42"),
    ("JSON null", ".json", lambda: b"null"),
    ("JSON list of scalars", ".json", lambda: b"[1, 2, 3]"),
    (
        "wrong-type cells",
        ".jsonl",
        lambda: _jsonl(
            [
                {"question": 12345, "answer": [1, 2, 3]},
                {"question": None, "answer": {"a": 1}},
                {"question": True, "answer": 1.5},
            ]
        ),
    ),
    (
        "mixed trace formats",
        ".jsonl",
        lambda: _jsonl(
            [
                {
                    "messages": [
                        {"role": "user", "content": "Q?"},
                        {"role": "assistant", "content": "A."},
                    ]
                },
                {
                    "id": "x",
                    "run_type": "chain",
                    "inputs": {"question": "Q?"},
                    "outputs": {"o": "A."},
                    "parent_run_id": None,
                },
                {"question": "Q?", "answer": "A."},
            ]
        ),
    ),
    ("huge answer", ".csv", lambda: _csv([{"question": "What?", "answer": "word " * 400_000}])),
    (
        "formula headers",
        ".csv",
        lambda: _csv(
            [{'=HYPERLINK("http://evil","h")': "x", "question": "@SUM(A1)?", "answer": "+1 is -1."}]
        ),
    ),
    (
        "odd column names",
        ".csv",
        lambda: _csv(
            [{'a"b': 1, "[x]": 2, "select": 3, "é ü": 4, "question": "Q?", "answer": "A."}]
        ),
    ),
    ("BOM and CRLF", ".csv", lambda: b"\xef\xbb\xbfquestion,answer\r\nQ?,A.\r\n"),
    ("UTF-16", ".csv", lambda: "question,answer\nQ?,A.\n".encode("utf-16")),
    ("many columns", ".csv", lambda: _csv([{**{f"c{i}": i for i in range(3000)}, **_GOOD[0]}])),
    ("no answer column", ".csv", lambda: _csv([{"question": "Q?", "other": "x"}])),
    ("blank answers", ".csv", lambda: _csv([{"question": "Q?", "answer": "   "}] * 3)),
    ("a folder of nothing", "", lambda: b""),
]


def _mutated(rng: random.Random) -> tuple[str, str, bytes]:
    """A good file of a random format, then flipped bytes, a cut, or a spliced-in chunk."""
    kind = rng.choice([".csv", ".jsonl", ".json", ".parquet", ".tsv"])
    rows = [dict(row) for row in _GOOD]
    if kind == ".csv":
        data = _csv(rows)
    elif kind == ".tsv":
        data = _csv(rows).replace(b",", b"\t")
    elif kind == ".jsonl":
        data = _jsonl(rows)
    elif kind == ".json":
        data = json.dumps(rows).encode()
    else:
        data = _parquet(rows)
    buf = bytearray(data)
    how = rng.choice(["flip", "cut", "splice", "flip"])
    if how == "flip":
        for _ in range(rng.randint(1, 12)):
            i = rng.randrange(len(buf))
            buf[i] = rng.randrange(256)
    elif how == "cut":
        buf = buf[: rng.randrange(1, len(buf))]
    else:
        i = rng.randrange(len(buf))
        junk = rng.choice(
            [
                b"\x00" * 20,
                b'"' * 9,
                b"[" * 2000,
                b"{" * 2000,
                b"\n\n\n",
                "\u202e\ufeff".encode(),
                b"\xc0\xaf",
                b",,,,,",
            ]
        )
        buf[i:i] = junk
    return f"{how} of a {kind.lstrip('.')} file", kind, bytes(buf)


def fuzz(files: int, seed: int, folder: Path, base_url: str) -> dict[str, Any]:
    """Each hostile file through ``relevancy score`` in this process."""
    from relevancy.cli import main as cli
    from relevancy.testing.openai_server import CHAT_MODEL, EMBEDDING_MODEL

    rng = random.Random(seed)
    cases = [(name, suffix, make()) for name, suffix, make in _FIXED]
    while len(cases) < files:
        cases.append(_mutated(rng))
    outcomes: collections.Counter[str] = collections.Counter()
    problems: list[dict[str, str]] = []
    for i, (name, suffix, data) in enumerate(cases):
        path = folder / f"fuzz_{i}{suffix}"
        if suffix:
            path.write_bytes(data)
        else:
            path.mkdir()
        out = folder / f"fuzz_{i}_out.csv"
        argv = [
            "score",
            str(path),
            "-o",
            str(out),
            "--llm",
            f"openai:{CHAT_MODEL}",
            "--embeddings",
            f"openai:{EMBEDDING_MODEL}",
            "--base-url",
            base_url,
            "--no-cache",
            "--timeout",
            "5",
            "-q",
        ]
        err, std = io.StringIO(), io.StringIO()
        try:
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(std):
                code = cli(argv)
        except SystemExit as exc:  # argparse
            code = exc.code if isinstance(exc.code, int) else 2
        except BaseException as exc:  # noqa: BLE001 - what the bench counts
            outcomes["traceback"] += 1
            last = traceback.format_exception_only(type(exc), exc)[-1].strip()
            problems.append({"file": name, "outcome": "traceback", "detail": last[:160]})
            continue
        lines = [x for x in err.getvalue().strip().splitlines() if x.strip()]
        if code == 0 and out.exists():
            outcomes["scored"] += 1
        elif code == 2 and len(lines) == 1:
            outcomes["one line, exit 2"] += 1
        else:
            kind = f"exit {code}, {len(lines)} lines on stderr"
            outcomes[kind] += 1
            problems.append({"file": name, "outcome": kind, "detail": " / ".join(lines)[-160:]})
    log(f"  fuzz: {len(cases)} files: {dict(outcomes)}")
    return {"files": len(cases), "seed": seed, "outcomes": dict(outcomes), "problems": problems}


def measure(args: argparse.Namespace) -> dict[str, Any]:
    from relevancy.testing.openai_server import OpenAICompatServer

    parts = {p.strip() for p in args.parts.split(",") if p.strip()}
    figures: dict[str, Any] = {"faults": {}, "fuzz": {}, "probe": []}
    with tempfile.TemporaryDirectory(prefix="bench-faults-") as tmp:
        folder = Path(tmp)
        os.environ["RELEVANCY_CACHE_DIR"] = str(folder / "cache")
        os.environ["RELEVANCY_STORE"] = str(folder / "runs.sqlite3")
        if "faults" in parts:
            figures["faults"] = fault_run(args.rows, args.fault_rate, args.seed, folder)
            figures["faults"]["preflight"] = preflight_faults(folder)
        if "fuzz" in parts:
            with OpenAICompatServer() as srv:
                figures["fuzz"] = fuzz(args.files, args.seed, folder, srv.base_url)
        if "probe" in parts:
            figures["probe"] = probe(folder, args.probe_rows, log)
    return figures


def tables(fig: dict[str, Any]) -> dict[str, str]:
    f, z = fig.get("faults", {}), fig.get("fuzz", {})
    kinds = ", ".join(f"{k} {v}" for k, v in (f.get("faults_by_kind") or {}).items())
    reasons = "; ".join(f"{k} ({v})" for k, v in (f.get("nan_reasons") or {}).items()) or "none"
    faults = table(
        [
            "rows",
            "fault rate",
            "requests",
            "faults injected",
            "rows written",
            "rows lost",
            "NaN rows",
            "exit",
            "tracebacks",
            "wall s",
        ],
        [
            [
                fmt(f.get("rows"), 0),
                fmt(f.get("fault_rate")),
                fmt(f.get("requests"), 0),
                fmt(f.get("faults_injected"), 0),
                fmt(f.get("rows_written"), 0),
                fmt(f.get("rows_lost"), 0),
                fmt(f.get("nan_rows"), 0),
                f.get("exit"),
                fmt(f.get("tracebacks"), 0),
                fmt(f.get("wall_s"), 0),
            ]
        ],
    )
    outcomes = z.get("outcomes") or {}
    fuzz_table = table(["hostile files", *outcomes], [[fmt(z.get("files"), 0), *outcomes.values()]])
    problems = (
        table(
            ["file", "outcome", "what it said"],
            [[p["file"], p["outcome"], p["detail"]] for p in z.get("problems") or []],
        )
        if z.get("problems")
        else "No file gave a traceback or more than one line."
    )
    pre = f.get("preflight") or []
    preflight = table(
        ["fault on the preflight's first request", "exit", "traceback", "last line on stderr"],
        [
            [p["fault"], p["exit"], "**yes**" if p["traceback"] else "no", p["last_line"]]
            for p in pre
        ],
    )
    pre_tb = sum(bool(p["traceback"]) for p in pre)
    tracebacks = (f.get("tracebacks") or 0) + outcomes.get("traceback", 0) + pre_tb
    targets = against(
        [
            ("tracebacks (faults + fuzz)", tracebacks, "0", tracebacks == 0),
            ("rows lost", f.get("rows_lost"), "0", f.get("rows_lost") == 0),
            (
                "NaN rows without a reason",
                (f.get("nan_reasons") or {}).get("(empty)", 0),
                "0",
                not (f.get("nan_reasons") or {}).get("(empty)"),
            ),
        ]
    )
    return {
        "": f"{faults}\n\nFaults injected: {kinds}.\n\nNaN rows by reason: {reasons}.\n\n"
        f"{preflight}\n\n{fuzz_table}\n\n{problems}\n\n{targets}",
        "probe": probe_tables(fig.get("probe") or []),
    }


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--fault-rate", type=float, default=0.3, help="share of requests faulted")
    p.add_argument("--seed", type=int, default=7, help="the fault plan's and the fuzz's seed")
    p.add_argument("--files", type=int, default=80, help="hostile files (fixed ones, then fuzz)")
    p.add_argument("--parts", default="faults,fuzz,probe", help="which parts: faults, fuzz, probe")
    p.add_argument(
        "--probe-rows", type=int, default=60, help="rows of the probe's rate-limit cases"
    )


if __name__ == "__main__":
    quick = ["--rows", "40", "--files", "30", "--probe-rows", "12"]
    raise SystemExit(main("faults", measure, arguments, rows=300, quick=quick))
