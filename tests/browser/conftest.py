"""A real ``streamlit run app.py`` on a free port, and Playwright on Debian's Chromium.

The server gets its own run store and model cache (temporary folders), so the browser tests
start from a fresh install: the precomputed demo is imported on first start. Screenshots go to
``test-artifacts/`` (git-ignored).
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from relevancy.testing.processes import ServerProcess, free_port

from helpers import ARTIFACTS, ROOT

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not Path(CHROMIUM).exists():
        skip = pytest.mark.skip(
            reason="Debian's chromium is not installed (apt-get install chromium)"
        )
        for item in items:
            if "browser" in item.keywords:
                item.add_marker(skip)


@pytest.fixture(scope="session")
def app_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The server's folder: its run store is ``runs.sqlite3`` in it."""
    return tmp_path_factory.mktemp("browser-home")


@pytest.fixture(scope="session")
def app_url(app_home: Path) -> Iterator[str]:
    home = app_home
    env = {
        **os.environ,
        "RELEVANCY_STORE": str(home / "runs.sqlite3"),
        "RELEVANCY_CACHE_DIR": str(home / "cache"),
        "PYTHONUNBUFFERED": "1",
    }
    env.pop("OPENAI_API_KEY", None)
    port = free_port()
    log_path = home / "streamlit.log"
    server = ServerProcess(
        [
            sys.executable,
            "-m",
            "streamlit",
            "run",
            "app.py",
            "--server.headless",
            "true",
            "--server.port",
            str(port),
            "--server.address",
            "127.0.0.1",
            "--browser.gatherUsageStats",
            "false",
            "--server.fileWatcherType",
            "none",
        ],
        url_to_poll=f"http://127.0.0.1:{port}/_stcore/health",
        expect=b"ok",
        env=env,
        cwd=ROOT,
        log_path=log_path,
        timeout=90,
        poll_interval=0.3,
        request_timeout=1,
        stop_timeout=15,
        name="streamlit",
    )
    with server:
        ARTIFACTS.mkdir(exist_ok=True)
        yield f"http://127.0.0.1:{port}"
    shutil.copy(log_path, ARTIFACTS / "streamlit.log")


# pytest-playwright hooks: Debian's chromium instead of `playwright install`
@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args: dict) -> dict:
    return {**browser_type_launch_args, "executable_path": CHROMIUM, "args": CHROMIUM_FLAGS}


@pytest.fixture(scope="session")
def browser_context_args(browser_context_args: dict) -> dict:
    return {**browser_context_args, "viewport": {"width": 1400, "height": 1000}}


@pytest.fixture(scope="session")
def base_url() -> None:
    """Replaces pytest-base-url's fixture (an instance-method fixture pytest 9 warns about)."""
    return None
