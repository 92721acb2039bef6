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
import time
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
    "vega_point",
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


#: the tooltip Vega-Lite charts show on hover (vega-tooltip's element), when it is showing
_TOOLTIP = """() => {
  const e = document.getElementById('vg-tooltip-element');
  return e && e.classList.contains('visible') ? e.innerText : null;
}"""


def vega_point(
    page: Any, chart: Any, tooltip: str, k: int = 0, tries: int = 1500
) -> tuple[float, float, str]:
    """The page coordinates of a mark on the Vega-Lite chart ``chart`` (a Playwright locator)
    whose tooltip holds ``tooltip``, and the tooltip's text. A canvas tells nothing of where it
    drew: the pointer is moved over it until such a tooltip shows, along a sequence that covers
    the plot evenly (``k`` starts it elsewhere: another mark). The pointer is left there."""
    canvas = chart.locator("canvas").first
    canvas.scroll_into_view_if_needed()
    box = canvas.bounding_box()
    if box is None:
        raise AssertionError("the chart has no canvas on the page")
    for i in range(k * 7 + 1, k * 7 + 1 + tries):
        # the plane's golden-ratio sequence: each new point falls where none has been yet
        u, v = (i * 0.7548776662) % 1.0, (i * 0.5698402910) % 1.0
        x, y = box["x"] + box["width"] * (0.1 + 0.8 * u), box["y"] + box["height"] * (0.1 + 0.8 * v)
        page.mouse.move(x, y)
        time.sleep(0.03)
        shown = page.evaluate(_TOOLTIP)
        if shown and tooltip in shown:
            return x, y, shown
    raise AssertionError(f"no mark with a tooltip of {tooltip!r} found in {tries} places")
