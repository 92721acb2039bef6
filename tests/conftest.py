"""Shared fixtures: every test gets its own cache and run-store folders; ``toy_server`` is the
toy OpenAI-compatible server for one test. Helpers to import are in ``helpers.py``."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from relevancy.backends import forget_controllers
from relevancy.testing.openai_server import OpenAICompatServer


@pytest.fixture(autouse=True)
def _isolated_dirs(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch):
    base = tmp_path_factory.mktemp("relevancy-home")
    monkeypatch.setenv("RELEVANCY_CACHE_DIR", str(base / "cache"))
    monkeypatch.setenv("RELEVANCY_STORE", str(base / "runs.sqlite3"))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    yield
    # the rate controllers are shared per process and keyed by the server's address: a later
    # test on a reused port must not inherit this one's (a max_wait set here, a learned limit)
    forget_controllers()


@pytest.fixture
def toy_server() -> Iterator[OpenAICompatServer]:
    """The toy OpenAI-compatible server on 127.0.0.1, default settings, started for one test
    (``helpers.cli_backends`` and ``helpers.toy_metric`` point the CLI and the metric at it)."""
    with OpenAICompatServer() as srv:
        yield srv


def pytest_collection_modifyitems(session, config, items):
    """Run the browser tests last: Playwright's sync API keeps an event loop running in the main
    thread for the rest of the session, which other tests' ``asyncio.run`` cannot share."""
    items.sort(key=lambda item: "tests/browser/" in item.nodeid.replace("\\", "/"))
