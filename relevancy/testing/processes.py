"""Start a server in a subprocess for a test or a bench, and wait until it answers.

    from relevancy.testing.processes import ServerProcess, free_port

    port = free_port()
    cmd = [sys.executable, "-m", "relevancy.testing.openai_server", "--port", str(port)]
    with ServerProcess(cmd, url_to_poll=f"http://127.0.0.1:{port}/v1/models") as server:
        ...  # the server answers here; it is stopped on leaving the block

Only the standard library is used, so tests, benches and scripts can all import it cheaply.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any, NoReturn

__all__ = ["ServerProcess", "free_port", "free_ports"]


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port on ``host`` that nothing listens on right now."""
    return free_ports(1, host)[0]


def free_ports(n: int, host: str = "127.0.0.1") -> list[int]:
    """``n`` different TCP ports on ``host`` that nothing listens on right now (all held open
    while they are chosen: ports asked for one at a time may repeat)."""
    sockets = [socket.socket() for _ in range(n)]
    try:
        for s in sockets:
            s.bind((host, 0))
        return [int(s.getsockname()[1]) for s in sockets]
    finally:
        for s in sockets:
            s.close()


class ServerProcess:
    """A server subprocess that counts as started once ``url_to_poll`` answers.

    :meth:`start` runs ``cmd`` and polls ``url_to_poll`` every ``poll_interval`` seconds until
    it answers with a 2xx status (and, when ``expect`` is given, exactly that body). If the
    process exits first, or ``timeout`` seconds pass, the process is killed and a RuntimeError
    says why, followed by the end of the log when there is one. :meth:`stop` terminates the
    process and kills it if it has not exited after ``stop_timeout`` seconds.

    Output goes to ``log_path`` (stdout and stderr together, the file rewritten) or is
    discarded. ``env`` replaces the environment (None inherits it); ``cwd`` is the working
    folder. Use it as a context manager, or call :meth:`start` and :meth:`stop`.
    """

    def __init__(
        self,
        cmd: Sequence[str],
        *,
        url_to_poll: str,
        expect: bytes | None = None,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        log_path: str | os.PathLike[str] | None = None,
        timeout: float = 60.0,
        poll_interval: float = 0.5,
        request_timeout: float = 2.0,
        stop_timeout: float = 15.0,
        name: str | None = None,
        log_tail_chars: int = 3000,
        process_group: bool = False,
    ) -> None:
        self.cmd = [str(part) for part in cmd]
        self.url_to_poll = url_to_poll
        self.expect = expect
        self.env = dict(env) if env is not None else None
        self.cwd = cwd
        self.log_path = Path(log_path) if log_path is not None else None
        self.timeout = timeout
        self.poll_interval = poll_interval
        self.request_timeout = request_timeout
        self.stop_timeout = stop_timeout
        self.name = name or _short_name(self.cmd)
        self.log_tail_chars = log_tail_chars
        #: the process leads a group of its own, and is stopped or killed with its children
        self.process_group = process_group
        #: The running process (None before :meth:`start` and after :meth:`stop`).
        self.proc: subprocess.Popen[bytes] | None = None
        #: Seconds from launch until the URL answered.
        self.start_s: float | None = None
        self._log: IO[bytes] | None = None

    @property
    def pid(self) -> int:
        if self.proc is None:
            raise RuntimeError(f"{self.name} is not running; call start() first")
        return self.proc.pid

    def start(self) -> ServerProcess:
        """Launch the process and return once the URL answers."""
        if self.proc is not None:
            return self
        output: Any = subprocess.DEVNULL
        if self.log_path is not None:
            self._log = output = self.log_path.open("wb")
        started = time.monotonic()
        self.proc = subprocess.Popen(
            self.cmd,
            cwd=self.cwd,
            env=self.env,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=self.process_group,
        )
        deadline = started + self.timeout
        while not self._answers():
            if self.proc.poll() is not None:
                self._fail(f"exited with code {self.proc.returncode} before answering")
            if time.monotonic() > deadline:
                self._fail(f"did not answer within {self.timeout:g} s")
            time.sleep(self.poll_interval)
        self.start_s = time.monotonic() - started
        return self

    def stop(self) -> None:
        """Terminate the process, then kill it if it lingers; close its log."""
        proc, self.proc = self.proc, None
        if proc is not None and (proc.poll() is None or self.process_group):
            self._signal(proc, signal.SIGTERM)
            try:
                proc.wait(self.stop_timeout)
            except subprocess.TimeoutExpired:  # e.g. a worker thread still finishing
                self._signal(proc, signal.SIGKILL)
                proc.wait(self.stop_timeout)
            if self.process_group:  # children that outlive their parent
                self._signal(proc, signal.SIGKILL)
        if self._log is not None:
            self._log.close()
            self._log = None

    def kill(self) -> None:
        """End the process at once (SIGKILL, to its group when it leads one), as a crash does;
        close its log."""
        proc = self.proc
        if proc is not None:
            self._signal(proc, signal.SIGKILL)
            proc.wait(self.stop_timeout)
        self.stop()

    def _signal(self, proc: subprocess.Popen[bytes], sig: int) -> None:
        try:
            if self.process_group:
                os.killpg(proc.pid, sig)
            else:
                proc.send_signal(sig)
        except (ProcessLookupError, PermissionError):
            pass

    def __enter__(self) -> ServerProcess:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = f"pid {self.proc.pid}" if self.proc is not None else "stopped"
        return f"<ServerProcess {self.name} {state} {self.url_to_poll}>"

    def _answers(self) -> bool:
        try:
            with urllib.request.urlopen(self.url_to_poll, timeout=self.request_timeout) as resp:
                ok = 200 <= resp.status < 300
                return ok and (self.expect is None or resp.read() == self.expect)
        except OSError:  # refused, reset, timed out, or an HTTP error status
            return False

    def _fail(self, why: str) -> NoReturn:
        proc = self.proc
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()
        self.proc = None
        message = f"{self.name} {why} at {self.url_to_poll}"
        if self._log is not None:
            self._log.close()
            self._log = None
        if self.log_path is not None:
            tail = self.log_path.read_text(errors="replace")[-self.log_tail_chars :]
            message += f"; the end of its log ({self.log_path}):\n{tail}"
        raise RuntimeError(message)


def _short_name(cmd: list[str]) -> str:
    """``python -m pkg.mod ...`` -> ``pkg.mod``; otherwise the program's file name."""
    if "-m" in cmd[:-1]:
        return cmd[cmd.index("-m") + 1]
    return Path(cmd[0]).name
