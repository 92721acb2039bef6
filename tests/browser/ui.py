"""What the browser tests do on a page: wait for a script run to finish, open a page, pick an
option, take a screenshot, upload a file and start scoring it. Screenshots go to
``test-artifacts/`` (git-ignored)."""

from __future__ import annotations

import re
import time
from pathlib import Path

from playwright.sync_api import Locator, Page, expect

from helpers import ARTIFACTS


def settle(page: Page, timeout: float = 120.0) -> None:
    """Wait until the script run is over: no 'Running' widget, no skeleton, for a moment."""
    page.wait_for_selector('[data-testid="stAppViewContainer"]', timeout=timeout * 1000)
    deadline = time.monotonic() + timeout
    quiet_since = None
    while time.monotonic() < deadline:
        busy = (
            page.locator('[data-testid="stStatusWidget"]').count()
            + page.locator('[data-testid="stSkeleton"]').count()
            + page.locator('[data-stale="true"]').count()
        )
        if busy:
            quiet_since = None
        elif quiet_since is None:
            quiet_since = time.monotonic()
        elif time.monotonic() - quiet_since > 1.2:
            return
        time.sleep(0.2)
    raise AssertionError("the app kept running")


def open_page(page: Page, url: str, path: str = "") -> None:
    page.goto(f"{url}/{path}")
    settle(page)
    expect(page.locator('[data-testid="stException"]')).to_have_count(0)


def shot(page: Page, name: str) -> Path:
    """A screenshot of the whole page (the viewport is grown to the content's height)."""
    settle(page)
    height = page.evaluate(
        "() => { const m = document.querySelector('[data-testid=\"stMain\"]');"
        " return m ? m.scrollHeight : document.body.scrollHeight; }"
    )
    page.set_viewport_size({"width": 1400, "height": max(900, min(int(height) + 40, 7000))})
    time.sleep(0.8)  # let plotly re-layout to the new size
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    page.set_viewport_size({"width": 1400, "height": 1000})
    return path


def open_options(page: Page, box: Locator) -> None:
    """Open a selectbox's or multiselect's list. A click that lands while the script is still
    re-drawing the widget opens nothing, so wait for a quiet page and try again."""
    for _ in range(4):
        settle(page)
        box.scroll_into_view_if_needed()
        box.click()
        try:
            expect(page.get_by_role("option").first).to_be_visible(timeout=4000)
            return
        except AssertionError:
            page.keyboard.press("Escape")
    raise AssertionError(f"the options of {box} never opened")


def pick(page: Page, label: str, option: str) -> None:
    """Choose ``option`` in the selectbox labelled ``label``."""
    open_options(page, page.get_by_role("combobox", name=label))
    page.get_by_role("option").filter(has_text=option).first.click()
    settle(page)


def new_dataset(page: Page, app_url: str, upload: Path | None = None) -> None:
    """The Dataset page's "Score a new dataset" panel, with ``upload`` in its file box."""
    open_page(page, app_url, "Dataset")
    page.get_by_text("Score a new dataset").click()
    if upload is not None:
        page.locator('[data-testid="stFileUploaderDropzoneInput"]').set_input_files(str(upload))
        settle(page)


def start_scoring(page: Page, run_name: str, rows: int) -> None:
    """Name the new run and press its "Score N rows" button."""
    name = page.get_by_label("Run name")
    name.fill(run_name)
    name.press("Enter")
    settle(page)
    page.get_by_role("button", name=re.compile(f"Score {rows} rows")).click()
