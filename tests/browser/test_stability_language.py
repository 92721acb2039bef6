"""In headless Chromium: re-score a French demo row 5 times from the Dataset page, and see its
stability band and its languages in the drill-down, then the run's figures on the Runs page."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from .ui import open_page, pick, settle, shot

pytestmark = [pytest.mark.browser, pytest.mark.slow]

FRENCH = "Quelle est la hauteur de la tour Eiffel ?"


def test_stability_band_and_languages_in_the_drill_down(page: Page, app_url: str):
    open_page(page, app_url, "Dataset")
    pick(page, "Active run", "Demo (embedded default)")
    inspect = page.get_by_role("combobox", name="Row to inspect")
    inspect.click()
    page.keyboard.type("tour Eiffel")  # the list is virtual: filter it to the French rows
    page.get_by_role("option").filter(has_text=FRENCH).first.click()
    settle(page)
    languages = re.compile(r"Languages: question in French, answer in French")
    expect(page.get_by_text(languages)).to_be_visible()
    reason = "The generated questions are in another language than the question"
    expect(page.get_by_text(reason, exact=True)).to_be_visible()  # the reason's title
    page.get_by_text("re-score rows k times").first.click()  # the Stability expander
    settle(page)  # the row in the drill-down is the default choice
    page.get_by_role("button", name=re.compile(r"Re-score 1 row\(s\) 5 times")).click()
    expect(page.get_by_text(re.compile(r"Re-scored 1 row\(s\) 5 times"))).to_be_visible(
        timeout=240_000
    )
    settle(page)
    band = re.compile(r"Stability over 5 re-scorings · range -?\d\.\d{3}–\d\.\d{3}")
    expect(page.get_by_text(band)).to_be_visible()
    expect(page.get_by_text("generator seeds 0, 3, 6, 9, 12", exact=True)).to_be_visible()
    # the band's chart: one dot per repeat, drawn
    chart = page.locator('[data-testid="stPlotlyChart"]').first  # the band, above the bars
    expect(chart.locator(".scatterlayer .point")).to_have_count(5)
    shot(page, "11-dataset-stability-language")
    # the Runs page of the same run: a page opened afresh is a new session, whose active run
    # is the newest (other tests add runs), so the link names the demo's run as a user's would
    run = re.search(r"[?&]run=(\d+)", page.url)
    assert run, page.url
    open_page(page, app_url, f"Runs?run={run.group(1)}")
    expect(page.get_by_text(re.compile(r"1 row re-scored up to 5 times"))).to_be_visible()
    expect(page.get_by_text("Median per-row sd")).to_be_visible()
