"""The dashboard served and the browser that drives it, as the browser tests and the browser
bench both set them up: ``streamlit run app.py`` on a run store of its own, and Debian's
Chromium (not ``playwright install``'s) with the same flags and window.

    from relevancy.testing.browser import DashboardServer, launch_args

    with DashboardServer(home, ROOT) as server, sync_playwright() as pw:
        browser = pw.chromium.launch(**launch_args())
        ...  # server.url; the store is home/runs.sqlite3, the model cache home/cache

Only the standard library and :mod:`relevancy.testing.processes` are imported: Playwright is
the caller's.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Any

from relevancy.testing.processes import ServerProcess, free_port

__all__ = [
    "CHROMIUM",
    "CHROMIUM_FLAGS",
    "VIEWPORT",
    "DashboardServer",
    "chromium_missing",
    "launch_args",
]

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_FLAGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
VIEWPORT = {"width": 1400, "height": 1000}


def launch_args() -> dict[str, Any]:
    """Playwright's ``chromium.launch`` arguments: Debian's Chromium and its flags."""
    return {"executable_path": CHROMIUM, "args": list(CHROMIUM_FLAGS)}


def chromium_missing() -> str | None:
    """Why the browser cannot run here, or None when it can."""
    if Path(CHROMIUM).exists():
        return None
    return "Debian's chromium is not installed (apt-get install chromium)"


class DashboardServer(ServerProcess):
    """``streamlit run app.py`` from ``root``, headless on a free local port, its run store
    ``home/runs.sqlite3`` and model cache ``home/cache``, no OpenAI key, its output in
    ``home/streamlit.log``; started by entering it (or :meth:`start`), at :attr:`url`."""

    def __init__(self, home: Path, root: Path, *, timeout: float = 120.0) -> None:
        port = free_port()
        #: the dashboard's address (no trailing slash)
        self.url = f"http://127.0.0.1:{port}"
        env = {
            **os.environ,
            "RELEVANCY_STORE": str(home / "runs.sqlite3"),
            "RELEVANCY_CACHE_DIR": str(home / "cache"),
            "PYTHONUNBUFFERED": "1",
        }
        env.pop("OPENAI_API_KEY", None)
        cmd = [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true"]
        cmd += ["--server.port", str(port), "--server.address", "127.0.0.1"]
        cmd += ["--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"]
        super().__init__(
            cmd,
            url_to_poll=f"{self.url}/_stcore/health",
            expect=b"ok",
            env=env,
            cwd=root,
            log_path=home / "streamlit.log",
            timeout=timeout,
            poll_interval=0.3,
            request_timeout=1,
            stop_timeout=15,
            name="streamlit",
        )

    def __enter__(self) -> DashboardServer:
        self.start()
        return self
