"""The embedded generator's worker process, seen from the process that uses it.

llama.cpp is native code: a segfault or a hang inside it would take the calling process down
with it (the CLI, the dashboard's server) without a word. So the embedded generator runs in a
worker process (``python -m relevancy.backends._llama_worker``), one per Python process,
started at the first request and shared by every ``SmolLMGenerator``: each request carries
its generator's settings, and the worker keeps one model per (file, context, threads), as the
in-process path does. Requests are served one at a time (the in-process path serialises them
as well: llama.cpp contexts are not thread-safe). The worker runs with
``OMP_WAIT_POLICY=PASSIVE`` unless the environment sets a policy (see :func:`_omp_default`).

Protocol: one JSON object per line, a request on the worker's stdin, its answer on the
worker's stdout (the worker moves its own stdout, native code's included, to stderr). The
worker's stderr is drained by a thread into a short ring buffer, quoted when it fails.

When the worker dies (end of its stdout; a negative return code names the signal) or hangs
(no answer ``n x 2 x 4 x time_limit + HANG_MARGIN_S`` seconds after the request: each sample
is cut off inside the worker after at most 4 x ``time_limit``, and retried once, see
``_budget.py``; a longer wait is a native hang), it is
stopped, started again once per process, and the request is sent again. A second failure
marks the worker broken: that request and every later one raise :class:`GeneratorCrashed`,
whose message names the component and what to run (``relevancy doctor``). The metric turns
it into the row's error; the process, and the dashboard it serves, stays up.
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import importlib.metadata
import itertools
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from relevancy.backends._budget import worst_case_seconds
from relevancy.core.result import GenerationSet
from relevancy.errors import ConfigError, GenerationError

__all__ = [
    "GeneratorCrashed",
    "child_env",
    "LlamaWorker",
    "component",
    "generate_in_worker",
    "worker",
    "worker_status",
    "FAULT_ENV",
]

#: test hook, read by the worker: ``crash@N`` (SIGSEGV) or ``hang@N`` at its Nth request
FAULT_ENV = "RELEVANCY_WORKER_FAULT"
WORKER_MODULE = "relevancy.backends._llama_worker"
#: seconds a request may take beyond its samples' own cut-offs before it counts as a hang
HANG_MARGIN_S = 60.0
#: restarts of a worker that died or hung, per process
RESTARTS = 1
STDERR_LINES = 40
_PACKAGE_ROOT = Path(__file__).resolve().parents[2]


class GeneratorCrashed(GenerationError):
    """The embedded generator's worker died or hung (after its one restart)."""


def llama_cpp_version() -> str:
    """The installed llama-cpp-python's version (without loading its native library)."""
    try:
        return importlib.metadata.version("llama-cpp-python")
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def component() -> str:
    """What failed, in the words of every error about it."""
    return f"the embedded generator (llama.cpp, llama-cpp-python {llama_cpp_version()})"


def child_env(**extra: str) -> dict[str, str]:
    """This process's environment for a child that must import this same ``relevancy``.

    The child gets the same ``sys.path`` as this interpreter would, except what was added at
    run time (``streamlit run app.py`` adds the checkout): so a checkout's folder goes first on
    ``PYTHONPATH``; an installed package (site-packages) needs nothing.
    """
    env = dict(os.environ, **extra)
    if _PACKAGE_ROOT.name not in ("site-packages", "dist-packages"):
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(_PACKAGE_ROOT), env.get("PYTHONPATH", "")) if p
        )
    return env


def _omp_default() -> dict[str, str]:
    """``OMP_WAIT_POLICY=PASSIVE`` for the worker, unless the user chose a policy.

    llama.cpp's threads are OpenMP's (libgomp). Called from a single thread, as in the worker,
    libgomp's default busy-waits between steps, and loses its cores to anything else that runs,
    the embedder of the process it serves first of all: several times slower than in-process in
    ``bench/amx.py`` (``worker_spin``), where passive waiting costs nothing measurable.
    """
    return {} if os.environ.get("OMP_WAIT_POLICY") else {"OMP_WAIT_POLICY": "PASSIVE"}


class _Died(Exception):
    """The worker process stopped or stopped answering (the message says how)."""


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


class _Process:
    """One worker process: send a request, wait for its answer, notice death and hangs."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", WORKER_MODULE],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=child_env(**_omp_default()),
            text=True,
            encoding="utf-8",
            bufsize=1,
        )
        self.stderr: collections.deque[str] = collections.deque(maxlen=STDERR_LINES)
        self.answers: queue.Queue[str | None] = queue.Queue()
        self.readers = [
            threading.Thread(target=self._read_stdout, daemon=True),
            threading.Thread(target=self._read_stderr, daemon=True),
        ]
        for reader in self.readers:
            reader.start()
        self.ids = itertools.count(1)

    def _read_stdout(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.answers.put(line)
        self.answers.put(None)  # end of output: the worker is gone

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            if line.strip():
                self.stderr.append(line.rstrip())

    def request(self, payload: dict[str, Any], seconds: float) -> dict[str, Any]:
        """Send ``payload`` and return the worker's answer to it, or raise :class:`_Died`."""
        rid = next(self.ids)
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.write(json.dumps({**payload, "id": rid}) + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            raise _Died(self._death()) from None
        end = time.monotonic() + seconds
        while True:
            try:
                line = self.answers.get(timeout=max(0.0, end - time.monotonic()))
            except queue.Empty:
                self.kill()
                raise _Died(f"hung: no answer in {seconds:.0f} s (stopped)") from None
            if line is None:
                raise _Died(self._death())
            try:
                answer = json.loads(line)
            except json.JSONDecodeError:
                self.stderr.append(f"(stray output) {line.rstrip()}")
                continue
            if answer.get("id") == rid:
                return answer

    def _death(self) -> str:
        """How the worker ended, in a few words."""
        try:
            code = self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.kill()
            return "stopped answering (its output closed)"
        if code < 0:
            return f"crashed: killed by {_signal_name(-code)}"
        last = self.stderr[-1] if self.stderr else ""
        return f"stopped: exit code {code}" + (f" ({last[:200]})" if last else "")

    def kill(self) -> None:
        with contextlib.suppress(OSError):
            self.proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=10)

    def close(self) -> None:
        """End the worker: close its input (it exits), kill it if it lingers, close its pipes."""
        with contextlib.suppress(OSError, ValueError):
            if self.proc.stdin is not None:
                self.proc.stdin.close()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.kill()
        for reader in self.readers:  # they end at the end of the pipes
            reader.join(timeout=5)
        for pipe in (self.proc.stdout, self.proc.stderr):
            with contextlib.suppress(OSError, ValueError):
                if pipe is not None:
                    pipe.close()


class LlamaWorker:
    """The worker process of this Python process, started and restarted on demand."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._process: _Process | None = None
        self._restarts_left = RESTARTS
        #: how each failure of the worker went, oldest first (with its last stderr lines)
        self.failures: list[dict[str, Any]] = []
        #: the message every request gets once the worker is given up on
        self.broken: str | None = None
        self.started = 0

    def call(self, payload: dict[str, Any], seconds: float) -> dict[str, Any]:
        """The worker's answer to ``payload``, restarting it once if it dies or hangs."""
        with self._lock:
            while True:
                if self.broken:
                    raise GeneratorCrashed(self.broken)
                if self._process is None:
                    self._process = _Process()
                    self.started += 1
                try:
                    return self._process.request(payload, seconds)
                except _Died as died:
                    process, self._process = self._process, None
                    process.close()
                    message = f"{component()} {died}; run `relevancy doctor`"
                    self.failures.append(
                        {
                            "what": f"{component()} {died}",
                            "message": message,
                            "pid": process.proc.pid,
                            "stderr": list(process.stderr)[-10:],
                        }
                    )
                    if self._restarts_left <= 0:
                        self.broken = message
                        raise GeneratorCrashed(message) from None
                    self._restarts_left -= 1  # start a new worker and send the request again

    def status(self) -> str | None:
        """One line when the worker failed in this process, else ``None``."""
        if not self.failures:
            return None
        what = self.failures[-1]["what"]
        if self.broken:
            return f"{what}; embedded scoring is off until this process restarts"
        return f"{what}; it was restarted and its request retried"

    def close(self) -> None:
        """Stop the worker (a later request starts a new one); failures are kept."""
        with self._lock:
            if self._process is not None:
                self._process.close()
                self._process = None

    def forget(self) -> None:
        """In a forked child: the parent's worker and lock are not this process's."""
        self._lock = threading.Lock()
        self._process = None
        self.started = 0

    def reset(self) -> None:
        """Stop the worker and forget its failures (tests; a dashboard's fresh start)."""
        self.close()
        with self._lock:
            self.failures.clear()
            self.broken = None
            self.started = 0
            self._restarts_left = RESTARTS


_WORKER = LlamaWorker()
atexit.register(_WORKER.close)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_WORKER.forget)


def worker() -> LlamaWorker:
    """The worker of this process (shared by every embedded generator)."""
    return _WORKER


def worker_status() -> str | None:
    """One line when this process's embedded-generator worker has failed, else ``None``."""
    return _WORKER.status()


_ERRORS: dict[str, type[Exception]] = {
    "ConfigError": ConfigError,
    "GenerationError": GenerationError,
}


def generate_in_worker(
    settings: dict[str, Any], response: str, n: int, language: str | None
) -> GenerationSet:
    """``SmolLMGenerator(**settings).generate(response, n, language)``, run by the worker."""
    seconds = worst_case_seconds(float(settings.get("time_limit", 20.0)), n) + HANG_MARGIN_S
    answer = _WORKER.call(
        {
            "op": "generate",
            "settings": settings,
            "response": response,
            "n": n,
            "language": language,
        },
        seconds,
    )
    if not answer.get("ok"):
        error = _ERRORS.get(answer.get("type", ""), GenerationError)
        raise error(answer.get("error") or "the embedded generator failed")
    data = answer["set"]
    out = GenerationSet.from_dict(data)
    out.cacheable = bool(data.get("cacheable", True))
    return out
