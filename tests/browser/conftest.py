"""A real ``streamlit run app.py`` on a free port, and Playwright on Debian's Chromium.

The server gets its own run store and model cache (temporary folders), so the browser tests
start from a fresh install: the precomputed demo is imported on first start. Screenshots go to
``test-artifacts/`` (git-ignored).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from relevancy.testing.browser import VIEWPORT, DashboardServer, chromium_missing, launch_args

from helpers import ARTIFACTS, ROOT


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    missing = chromium_missing()
    if missing:
        skip = pytest.mark.skip(reason=missing)
        for item in items:
            if "browser" in item.keywords:
                item.add_marker(skip)


@pytest.fixture(scope="session")
def app_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The server's folder: its run store is ``runs.sqlite3`` in it."""
    return tmp_path_factory.mktemp("browser-home")


@pytest.fixture(scope="session")
def app_url(app_home: Path) -> Iterator[str]:
    with DashboardServer(app_home, ROOT, timeout=90) as server:
        ARTIFACTS.mkdir(exist_ok=True)
        yield server.url
    shutil.copy(app_home / "streamlit.log", ARTIFACTS / "streamlit.log")


# pytest-playwright hooks: Debian's chromium instead of `playwright install`
@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args: dict) -> dict:
    return {**browser_type_launch_args, **launch_args()}


@pytest.fixture(scope="session")
def browser_context_args(browser_context_args: dict) -> dict:
    return {**browser_context_args, "viewport": dict(VIEWPORT)}


@pytest.fixture(scope="session")
def base_url() -> None:
    """Replaces pytest-base-url's fixture (an instance-method fixture pytest 9 warns about)."""
    return None
