"""A real Arize Phoenix server for the tests and the sample scripts.

``phoenix serve`` runs from a virtual environment of its own (``.venv-phoenix``, made by
``bash scripts/setup.sh dev``): the server pulls ~100 packages (boto3 among them, which pins
``python-dateutil`` below the project's), while what the project itself needs is only the client
(``arize-phoenix-client``, the ``phoenix`` extra). The server keeps its SQLite database in a
working folder of the caller's (a temporary one in tests) and listens on free ports of 127.0.0.1::

    from relevancy.testing.tool_servers import PhoenixServer

    with PhoenixServer(tmp_path) as phoenix:
        phoenix.base_url           # http://127.0.0.1:PORT (the UI, the REST API, the client)
        phoenix.collector          # http://127.0.0.1:PORT/v1/traces (OTLP over HTTP)

MLflow's client (``mlflow-skinny`` with SQLAlchemy and Alembic, the ``mlflow`` extra) reads and
writes a SQLite store (``sqlite:///...``) itself. An *older* MLflow, with its tracking server,
runs from a venv of its own (``.venv-mlflow``, full ``mlflow`` at :data:`OLD_MLFLOW`, made by
``bash scripts/setup.sh dev``): stores it makes are what a team on that version has, and
``mlflow server`` serves one over HTTP::

    from relevancy.testing.tool_servers import MlflowServer, old_mlflow_python

    subprocess.run([old_mlflow_python(), "make_store.py", ...])  # a store made by MLflow 3.17
    with MlflowServer(tmp_path, "sqlite:///" + db) as server:
        server.url                 # http://127.0.0.1:PORT (the tracking URI)
        server.kill()              # gone at once (SIGKILL), as a crashed server is
        server.start()             # back, on the same port and store
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from relevancy.testing.processes import ServerProcess, free_port

__all__ = [
    "PhoenixServer",
    "phoenix_executable",
    "PHOENIX_VENV",
    "MlflowServer",
    "old_mlflow_python",
    "MLFLOW_VENV",
    "OLD_MLFLOW",
]

#: the folder, at the repository's root, of the server's own virtual environment
PHOENIX_VENV = ".venv-phoenix"
#: the folder, at the repository's root, of the older MLflow's virtual environment
MLFLOW_VENV = ".venv-mlflow"
#: the older MLflow it holds (full ``mlflow``, with its server): older than the client the
#: project pins (constraints.txt), so that its stores are at an older schema
OLD_MLFLOW = "3.17.2"
_ROOT = Path(__file__).resolve().parents[2]


def phoenix_executable() -> Path | None:
    """The ``phoenix`` command: ``$RELEVANCY_PHOENIX``, else ``.venv-phoenix/bin/phoenix`` at
    the repository's root, else one on the PATH; None when there is none."""
    given = os.environ.get("RELEVANCY_PHOENIX")
    if given:
        return Path(given)
    local = _ROOT / PHOENIX_VENV / "bin" / "phoenix"
    if local.is_file():
        return local
    found = shutil.which("phoenix")
    return Path(found) if found else None


class PhoenixServer:
    """``phoenix serve`` with its database in ``workdir``, on free ports of 127.0.0.1."""

    def __init__(
        self,
        workdir: str | os.PathLike[str],
        *,
        executable: Path | None = None,
        timeout: float = 180.0,
    ) -> None:
        exe = executable or phoenix_executable()
        if exe is None or not Path(exe).is_file():
            raise RuntimeError(
                "no Phoenix server: run `bash scripts/setup.sh dev` (it makes .venv-phoenix) "
                "or set RELEVANCY_PHOENIX to a `phoenix` command"
            )
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        env = {
            **os.environ,
            "PHOENIX_WORKING_DIR": str(self.workdir),
            "PHOENIX_HOST": "127.0.0.1",
            "PHOENIX_PORT": str(self.port),
            "PHOENIX_GRPC_PORT": str(free_port()),
            "PHOENIX_TELEMETRY_ENABLED": "false",
        }
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.collector = f"{self.base_url}/v1/traces"
        self.process = ServerProcess(
            [str(exe), "serve"],
            url_to_poll=f"{self.base_url}/healthz",
            env=env,
            log_path=self.workdir / "phoenix.log",
            timeout=timeout,
            name="phoenix serve",
        )

    @property
    def start_s(self) -> float | None:
        """Seconds from launch until the server answered."""
        return self.process.start_s

    def __enter__(self) -> PhoenixServer:
        self.process.start()
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.process.stop()


def old_mlflow_python() -> Path | None:
    """The Python of the older MLflow's venv: ``$RELEVANCY_OLD_MLFLOW_PYTHON``, else
    ``.venv-mlflow/bin/python`` at the repository's root; None when there is none."""
    given = os.environ.get("RELEVANCY_OLD_MLFLOW_PYTHON")
    if given:
        return Path(given)
    local = _ROOT / MLFLOW_VENV / "bin" / "python"
    return local if local.is_file() else None


class MlflowServer:
    """``mlflow server`` (the older MLflow's) on ``backend_uri``, on a free port of 127.0.0.1,
    one worker; its log in ``workdir``. :meth:`kill` ends it at once (SIGKILL, as a crash
    does); :meth:`start` brings it back on the same port and store."""

    def __init__(
        self,
        workdir: str | os.PathLike[str],
        backend_uri: str,
        *,
        python: Path | None = None,
        timeout: float = 120.0,
    ) -> None:
        exe = python or old_mlflow_python()
        if exe is None or not Path(exe).is_file():
            raise RuntimeError(
                "no older MLflow: run `bash scripts/setup.sh dev` (it makes .venv-mlflow) or "
                "set RELEVANCY_OLD_MLFLOW_PYTHON to a Python with mlflow installed"
            )
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        cmd = [
            str(exe),
            "-m",
            "mlflow",
            "server",
            "--backend-store-uri",
            backend_uri,
            "--default-artifact-root",
            str(self.workdir / "artifacts"),
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--workers",
            "1",
        ]
        env = {**os.environ, "MLFLOW_TRACKING_URI": "", "PYTHONUNBUFFERED": "1"}
        self._args = {
            "url_to_poll": f"{self.url}/health",
            "env": env,
            "timeout": timeout,
            "name": "mlflow server",
            "process_group": True,
        }
        self._cmd = cmd
        self._starts = 0
        self.process: ServerProcess | None = None

    def start(self) -> MlflowServer:
        """Start (or start again) the server; return once it answers."""
        if self.process is None:
            self._starts += 1
            log = self.workdir / f"mlflow-server-{self._starts}.log"
            self.process = ServerProcess(self._cmd, log_path=log, **self._args)
            self.process.start()
        return self

    @property
    def pid(self) -> int:
        if self.process is None:
            raise RuntimeError("mlflow server is not running")
        return self.process.pid

    def kill(self) -> None:
        """Kill the server and its workers at once (SIGKILL to its process group)."""
        if self.process is not None:
            self.process.kill()
            self.process = None

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop()
            self.process = None

    def __enter__(self) -> MlflowServer:
        return self.start()

    def __exit__(self, *exc_info: Any) -> None:
        self.stop()
