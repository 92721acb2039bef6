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

MLflow needs no server here: its tracking store is a SQLite file (``sqlite:///...``) that the
client (``mlflow-skinny`` with SQLAlchemy and Alembic, the ``mlflow`` extra) reads and writes
itself.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from relevancy.testing.processes import ServerProcess, free_port

__all__ = ["PhoenixServer", "phoenix_executable", "PHOENIX_VENV"]

#: the folder, at the repository's root, of the server's own virtual environment
PHOENIX_VENV = ".venv-phoenix"


def phoenix_executable() -> Path | None:
    """The ``phoenix`` command: ``$RELEVANCY_PHOENIX``, else ``.venv-phoenix/bin/phoenix`` at
    the repository's root, else one on the PATH; None when there is none."""
    given = os.environ.get("RELEVANCY_PHOENIX")
    if given:
        return Path(given)
    local = Path(__file__).resolve().parents[2] / PHOENIX_VENV / "bin" / "phoenix"
    if local.is_file():
        return local
    found = shutil.which("phoenix")
    return Path(found) if found else None


class PhoenixServer:
    """``phoenix serve`` with its database in ``workdir``, on free ports of 127.0.0.1."""

    def __init__(
        self, workdir: str | os.PathLike[str], *, executable: Path | None = None,
        timeout: float = 180.0,
    ) -> None:  # fmt: skip
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
            [str(exe), "serve"], url_to_poll=f"{self.base_url}/healthz", env=env,
            log_path=self.workdir / "phoenix.log", timeout=timeout, name="phoenix serve",
        )  # fmt: skip

    @property
    def start_s(self) -> float | None:
        """Seconds from launch until the server answered."""
        return self.process.start_s

    def __enter__(self) -> PhoenixServer:
        self.process.start()
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.process.stop()
