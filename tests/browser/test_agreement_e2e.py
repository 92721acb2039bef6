"""Human labels in headless Chromium: the Agreement page of the demo, a label set in a row's
drill-down, and the agreement figures moving with it; the chance band on Distributions.
Screenshots go to ``test-artifacts/``."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from .ui import open_page, pick, settle, shot

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def _metric(page: Page, label: str) -> str:
    box = page.get_by_test_id("stMetric").filter(has_text=label).first
    return box.get_by_test_id("stMetricValue").inner_text().strip()


def test_a_label_set_in_the_drill_down_moves_the_agreement_figures(page: Page, app_url: str):
    open_page(page, app_url, "Agreement")
    pick(page, "Active run", "Demo (embedded default)")
    expect(page.get_by_text("Where the score and the label disagree")).to_be_visible()
    expect(page.get_by_test_id("stMetric").filter(has_text="AUROC")).to_be_visible()
    before = {k: _metric(page, k) for k in ("Labelled rows", "AUROC", "Precision")}
    assert before["Labelled rows"] == "48" and re.fullmatch(r"0\.\d{3}", before["AUROC"])
    expect(page.get_by_text("High score, bad label")).to_be_visible()
    # the chart (Vega-Lite, SVG for so few dots): both labels' boxes, the threshold, the band
    chart = page.get_by_test_id("stVegaLiteChart").first
    expect(chart.locator("svg.marks")).to_be_visible()
    for words in ("bad label (28)", "good label (20)", "best threshold", "unrelated pairs"):
        expect(chart.locator("text").filter(has_text=words).first).to_be_attached()
    assert page.get_by_test_id("stPlotlyChart").count() == 0  # no plotly loaded for it
    shot(page, "07-agreement")
    # the drill-down below opens on the worst disagreement: a bad label with a high score
    # (Streamlit draws a leading emoji as an icon of its own: match the words)
    control = page.get_by_role("radio").filter(has_text="relevant").filter(has_not_text="not")
    control.scroll_into_view_if_needed()
    expect(page.get_by_text("from the input's label column")).to_be_visible()
    expect(page.get_by_role("radio").filter(has_text="not relevant")).to_be_checked()
    control.click()  # the analyst disagrees with the input's label
    settle(page)
    expect(page.get_by_text(re.compile(r"set in the dashboard · \d\d \w{3} \d{4}"))).to_be_visible()
    after = {k: _metric(page, k) for k in ("Labelled rows", "AUROC", "Precision")}
    assert after["Labelled rows"] == "48"
    assert after["AUROC"] != before["AUROC"] and after["Precision"] != before["Precision"]
    expect(page.get_by_text("21 good · 27 bad")).to_be_visible()


def test_distributions_show_the_chance_band(page: Page, app_url: str):
    open_page(page, app_url, "Distributions")
    pick(page, "Active run", "Demo (embedded default)")
    expect(
        page.get_by_text(re.compile(r"Chance level: unrelated pairs score 0\.\d\d"))
    ).to_be_visible()
    chart = page.get_by_test_id("stVegaLiteChart").first  # the histogram, in SVG
    expect(chart.locator("svg.marks")).to_be_visible()
    band = chart.locator("text").filter(has_text=re.compile(r"unrelated pairs, all-MiniLM"))
    expect(band.first).to_be_attached()  # its note on the histogram's band
    expect(chart.locator("text").filter(has_text="threshold 0.50").first).to_be_attached()
    shot(page, "03-distributions-chance")
