"""Upload → Compare by variant in headless Chromium: an upload with per-row ids and two
variants answering the same questions pairs on the questions (issue 24: it gave "No pairs")."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from .ui import new_dataset, open_page, settle, shot, start_scoring

pytestmark = [pytest.mark.browser, pytest.mark.slow]

UPLOAD = (
    "id,question,answer,variant\n"
    "1,What is the capital of Japan?,Tokyo is the capital of Japan.,A\n"
    "2,Who wrote Hamlet?,Hamlet was written by William Shakespeare.,A\n"
    "3,How tall is Mount Everest?,Mount Everest is 8849 metres tall.,A\n"
    "4,What is the capital of Japan?,Japan is an island country in Asia.,B\n"
    "5,Who wrote Hamlet?,I am not sure.,B\n"
    "6,How tall is Mount Everest?,It is the highest mountain on Earth at 8849 metres.,B\n"
)


def test_an_upload_with_per_row_ids_compares_its_variants(page: Page, app_url: str, tmp_path: Path):
    csv = tmp_path / "variants.csv"
    csv.write_text(UPLOAD, encoding="utf-8")
    new_dataset(page, app_url, upload=csv)
    expect(page.get_by_text("Preview · 6 rows")).to_be_visible()
    start_scoring(page, "Variants with ids", 6)
    expect(page.get_by_text(re.compile(r"Scored 6 rows in"))).to_be_visible(timeout=300_000)
    settle(page)
    open_page(page, app_url, "Compare")
    expect(page.get_by_text("No pairs")).to_have_count(0)
    expect(page.get_by_text("Pairs", exact=True)).to_be_visible()
    expect(page.locator('[data-testid="stMetricValue"]').first).to_have_text("3")
    expect(page.get_by_test_id("stVegaLiteChart").first.locator("canvas")).to_be_visible()
    shot(page, "06b-compare-upload-variants")
