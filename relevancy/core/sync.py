"""Run a coroutine from blocking code, even where an event loop is already running.

``asyncio.run`` refuses to start inside a running loop (Jupyter, some test runners, Playwright's
sync API). There the coroutine runs on a fresh loop in a worker thread instead.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["run_sync"]

T = TypeVar("T")


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coro).result()
