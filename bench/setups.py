"""What the benches start beside the library: the toy OpenAI-compatible server, llama.cpp's
server with the embedded SmolLM2, and Ragas in its own venv (``bench/ragas_side.py``).

Servers run in subprocesses on 127.0.0.1 through ``relevancy.testing.processes.ServerProcess``,
as the tests start them; each is a context manager that stops it on the way out.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.harness import ROOT, vm_hwm_mb

#: Ragas' venv (see bench/README.md): bench/.venv-ragas, or .venv-ragas at the repository root
RAGAS_VENVS = (ROOT / "bench" / ".venv-ragas", ROOT / ".venv-ragas")
RAGAS_ENV = {"RAGAS_DO_NOT_TRACK": "true"}


class _Server:
    """A server subprocess with a temporary folder of its own (its log, its usage log)."""

    def __init__(self) -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix="bench-server-")
        self.folder = Path(self._tmp.name)
        self.log_path = self.folder / "server.log"

    def _start(
        self, cmd: list[str], url: str, *, env: dict[str, str] | None = None, timeout: float = 60.0
    ) -> None:
        from relevancy.testing.processes import ServerProcess

        self.process = ServerProcess(
            cmd,
            url_to_poll=url,
            env=env,
            log_path=self.log_path,
            timeout=timeout,
            poll_interval=0.2,
            stop_timeout=15,
        ).start()
        self.start_s = self.process.start_s or 0.0

    def stop(self) -> None:
        self.process.stop()
        self._tmp.cleanup()

    def __enter__(self) -> _Server:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class ToyServer(_Server):
    """The toy server (``relevancy.testing.openai_server``): instant answers by default, or a
    remote API's cost model (``latency`` per request, ``token_latency`` per completion token,
    usage counted like a BPE tokenizer and logged a line per request: :meth:`usage_since`)."""

    def __init__(
        self,
        *,
        latency: float = 0.0,
        token_latency: float = 0.0,
        honour_n: bool = True,
        extra: Sequence[str] = (),
    ) -> None:
        from relevancy.testing.processes import free_port

        super().__init__()
        port = free_port()
        self.base_url = f"http://127.0.0.1:{port}/v1"
        self.usage_log = self.folder / "usage.jsonl"
        self.usage_log.touch()
        cmd = [
            sys.executable,
            "-m",
            "relevancy.testing.openai_server",
            "--port",
            str(port),
            "--latency",
            str(latency),
            "--token-latency",
            str(token_latency),
            "--tokenizer",
            "approx",
            "--usage-log",
            str(self.usage_log),
        ]
        cmd += list(extra)  # e.g. the rate limits: --rpm, --tpm, --limit-window
        self._start(cmd if honour_n else [*cmd, "--no-n"], self.base_url + "/models")

    def offset(self) -> int:
        return self.usage_log.stat().st_size

    def usage_since(self, offset: int) -> list[dict[str, Any]]:
        """The server's usage lines (one a request) logged after ``offset``."""
        time.sleep(0.1)  # the last request's line
        with self.usage_log.open("rb") as fh:
            fh.seek(offset)
            return [json.loads(line) for line in fh.read().decode().splitlines() if line]


# --------------------------------------------------------------------------------------------
# llama.cpp's server
# --------------------------------------------------------------------------------------------

LLAMA_MODEL = "smollm2"
_PERF = re.compile(
    r"prompt eval time =\s+([\d.]+) ms /\s+(\d+) tokens.*?"
    r"\beval time =\s+([\d.]+) ms /\s+(\d+) runs.*?"
    r"total time =\s+([\d.]+) ms",
    re.S,
)
_HIT = re.compile(r"(\d+) prefix-match hit, remaining (\d+) prompt tokens to eval")


class LlamaServer(_Server):
    """llama-cpp-python's server with the embedded SmolLM2 GGUF (one request at a time), started
    through :mod:`relevancy.testing.llama_cpp_server` (its extra buffer types off: as it is,
    it segfaults on a Xeon with AMX).

    libgomp's default busy-waiting makes a llama.cpp server that shares its cores with other
    processes 10-20x slower per token (9 ms -> 90-170 ms here): it runs with
    ``OMP_WAIT_POLICY=PASSIVE`` unless the environment says otherwise."""

    def __init__(self, threads: int = 2, n_ctx: int = 4096) -> None:
        from relevancy.backends import smollm_model_path
        from relevancy.testing.processes import free_port

        super().__init__()
        port = free_port()
        self.base_url = f"http://127.0.0.1:{port}/v1"
        self.threads, self.n_ctx = threads, n_ctx
        env = dict(os.environ)
        env.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        self.omp_wait_policy = env["OMP_WAIT_POLICY"]
        cmd = [
            sys.executable,
            "-m",
            "relevancy.testing.llama_cpp_server",
            "--model",
            str(smollm_model_path()),
            "--model_alias",
            LLAMA_MODEL,
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--n_threads",
            str(threads),
            "--n_ctx",
            str(n_ctx),
        ]
        self._start(cmd, self.base_url + "/models", env=env, timeout=120)

    def hwm_mb(self) -> float:
        return vm_hwm_mb(self.process.pid)

    def offset(self) -> int:
        return os.path.getsize(self.log_path)

    def requests_since(self, offset: int) -> list[dict[str, float]]:
        """One record per request completed after ``offset``, from llama.cpp's own timings:
        prompt tokens reused from its prefix cache and evaluated, completion tokens, and the
        seconds spent evaluating the prompt, decoding and in all (the rest is mostly
        sampling, grammar included)."""
        time.sleep(0.2)  # let the last request's lines reach the file
        with open(self.log_path, "rb") as fh:
            fh.seek(offset)
            text = fh.read().decode("utf-8", "replace")
        out, start = [], 0
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


# --------------------------------------------------------------------------------------------
# Ragas, in its own venv
# --------------------------------------------------------------------------------------------


def ragas_python() -> Path | None:
    return next(
        (v / "bin" / "python" for v in RAGAS_VENVS if (v / "bin" / "python").exists()), None
    )


def ragas_missing(*, minilm: bool) -> str | None:
    """Why Ragas' side cannot run here (``minilm``: with our MiniLM), or None when it can."""
    python = ragas_python()
    if python is None:
        return "no bench/.venv-ragas: see bench/README.md to create it"
    imports = "ragas, instructor, langchain_openai" + (", onnxruntime" if minilm else "")
    proc = subprocess.run(
        [str(python), "-c", f"import {imports}"],
        capture_output=True,
        text=True,
        env={**os.environ, **RAGAS_ENV},
    )
    if proc.returncode != 0:
        return "Ragas venv cannot import its pieces: " + proc.stderr.strip().splitlines()[-1]
    return None


def ragas(rows: list[dict[str, Any]], base_url: str, **options: Any) -> dict[str, Any]:
    """Ragas' side (``python -m bench.ragas_side``, in Ragas' venv) on ``rows``: its JSON.

    ``options`` become its command-line options (``mode="collections"`` ->
    ``--mode collections``); its per-row progress goes to this process's stderr.
    """
    python = ragas_python()
    assert python is not None, ragas_missing()
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
        json.dump(rows, fh)
    cmd = [str(python), "-m", "bench.ragas_side", "--rows-file", fh.name, "--base-url", base_url]
    for key, value in options.items():
        cmd += [f"--{key.replace('_', '-')}", str(value)]
    env = {**os.environ, **RAGAS_ENV, "PYTHONPATH": str(ROOT)}
    started = time.perf_counter()
    try:
        proc = subprocess.run(
            cmd, stdout=subprocess.PIPE, text=True, env=env, cwd=ROOT, timeout=3600
        )
    finally:
        os.unlink(fh.name)
    if proc.returncode != 0:
        raise RuntimeError(f"Ragas' side failed ({proc.returncode}); see the log above")
    out = json.loads(proc.stdout)
    out["process_s"] = time.perf_counter() - started
    return out
