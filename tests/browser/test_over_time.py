"""The Over time page in headless Chromium: a run whose rows carry times draws its chart, and a
bucket opens its rows; a followed run takes in rows another process saves, without a reload.
Screenshot: ``test-artifacts/13-over-time.png``.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from relevancy.runs import RunStore

from .ui import open_page, pick, settle, shot
from helpers import timed_run

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_over_time_chart_and_a_bucket_s_rows(page: Page, app_url: str, app_home: Path):
    store_path = app_home / "runs.sqlite3"
    run_id, _, _ = timed_run(RunStore(store_path))
    with sqlite3.connect(store_path) as db:  # finished an hour ago: not followed, no refresh
        db.execute("UPDATE runs SET updated = '2026-01-01T00:00:00+00:00' WHERE id = ?", (run_id,))
    open_page(page, app_url, f"Over_time?run={run_id}")
    chart = page.get_by_test_id("stPlotlyChart").first
    expect(chart).to_be_visible(timeout=60_000)
    expect(chart.locator(".scatterlayer .trace")).not_to_have_count(0)
    expect(chart.locator(".barlayer .point")).to_have_count(3)  # three hours of rows
    expect(page.get_by_text("24 rows from 2026-12-06 09:02")).to_be_visible()
    tables = page.get_by_test_id("stDataFrame").count()
    pick(page, "Open a bucket's rows", "2026-12-06 11:00-12:00 UTC · 8 rows")
    expect(page.get_by_test_id("stDataFrame")).to_have_count(tables + 1)
    expect(page.get_by_text("8 rows of 2026-12-06 11:00-12:00 UTC")).to_be_visible()
    settle(page)
    shot(page, "13-over-time")


def test_a_followed_run_shows_new_rows_without_a_reload(page: Page, app_url: str, app_home: Path):
    store = RunStore(app_home / "runs.sqlite3")
    follow = {"follow": {"source": "http://127.0.0.1:1/v1/traces", "interval": 2}}
    run_id, _, results = timed_run(store, settings=follow, scored=16)
    lease = store.take_follow_lease(run_id, ttl=300)  # this process follows it, as the CLI does
    try:
        open_page(page, app_url, f"Over_time?run={run_id}")
        expect(
            page.get_by_text("Following this run: the chart takes in new rows every 2 s")
        ).to_be_visible()
        expect(page.get_by_text("16 rows from 2026-12-06 09:02 to 10:37 UTC")).to_be_visible()
        # as `score --follow` saves them
        store.append_results(run_id, list(enumerate(results))[16:24])
        expect(page.get_by_text("24 rows from 2026-12-06 09:02 to 11:37 UTC")).to_be_visible(
            timeout=15_000
        )
        chart = page.get_by_test_id("stPlotlyChart").first
        expect(chart.locator(".barlayer .point")).to_have_count(3)
    finally:
        store.drop_follow_lease(lease)
