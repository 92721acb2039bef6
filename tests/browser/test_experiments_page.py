"""The Experiments page in headless Chromium against the toy server taught to answer: the judge
set in the sidebar, a template edited, two models, the experiment run (96 answers), the
question x variant matrix opened, one answer read as text, then Compare opened on two variants
(24 pairs). The screenshot is docs/08-experiments.png's source."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from relevancy.testing.openai_server import CHAT_MODEL, EMBEDDING_MODEL, OpenAICompatServer

from .ui import open_page, pick, settle, shot

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def _fill(field, value: str) -> None:
    field.fill(value)
    field.press("Tab")  # a text area sends its value when it loses focus


def test_an_experiment_from_templates_to_compare(page: Page, app_url: str):
    with OpenAICompatServer() as srv:
        srv.answer_models = ("toy-a", "toy-b")
        open_page(page, app_url, "Experiments")
        sidebar = page.locator('[data-testid="stSidebar"]')
        sidebar.get_by_text("Scoring settings").click()
        sidebar.get_by_text("OpenAI-compatible server").click()
        settle(page)
        for label, value in (
            ("Base URL", srv.base_url),
            ("Generator model", CHAT_MODEL),
            ("Embedding model", EMBEDDING_MODEL),
        ):
            _fill(sidebar.get_by_role("textbox", name=label), value)
            settle(page)
        main = page.locator('[data-testid="stMain"]')
        _fill(
            main.get_by_role("textbox", name="Models (comma-separated; local = the embedded one)"),
            "toy-a, toy-b",
        )
        _fill(
            main.get_by_role(
                "textbox", name="OpenAI-compatible endpoint (for models other than local)"
            ),
            srv.base_url,
        )
        _fill(
            main.get_by_role("textbox", name="System").first, "Answer in one sentence. *not bold*"
        )
        settle(page)
        expect(main.locator('[data-testid="stMetricValue"]').first).to_have_text("96")

        main.get_by_role("button", name="Run the experiment").click()
        expect(main.get_by_text("Per variant")).to_be_visible(timeout=300_000)
        settle(page)
        expect(page.locator('[data-testid="stException"]')).to_have_count(0)
        expect(main.locator('[data-testid="stAlertContentError"]')).to_have_count(0)
        asked = [
            r
            for r in list(srv.requests)
            if r["path"] == "/v1/chat/completions"
            and (r["body"] or {}).get("model") in srv.answer_models
        ]
        assert len(asked) == 96

        # the matrix, opened full screen: 24 questions down, 4 variants across
        matrix = main.locator('[data-testid="stDataFrame"]').nth(1)
        matrix.scroll_into_view_if_needed()
        matrix.hover()
        page.get_by_role("button", name="Fullscreen").last.click()  # the matrix's toolbar
        expect(page.get_by_role("button", name="Close fullscreen")).to_be_visible()
        grid = main.locator('table[role="grid"]').nth(1)  # the matrix's accessible table
        expect(grid).to_have_attribute("aria-rowcount", "25")  # a header and 24 questions
        expect(grid).to_have_attribute("aria-colcount", "5")  # the question and 4 variants
        expect(grid).to_contain_text("detailed · toy-b")
        expect(grid).to_contain_text(re.compile(r"Where is France.*\d\.\d\d (ok|padded)"))
        page.get_by_role("button", name="Close fullscreen").click()
        settle(page)

        # the prompt sent and its answer are text: the asterisks are drawn, nothing is bold
        prompt = main.locator('[data-testid="stText"]').filter(has_text="*not bold*")
        expect(prompt.first).to_be_visible()
        expect(main.locator("strong, em").filter(has_text="not bold")).to_have_count(0)
        shot(page, "08-experiments")

        pick(page, "with B", "concise · toy-b")
        main.get_by_role("button", name="Open in Compare").click()
        settle(page)
        expect(page).to_have_url(re.compile(r"/Compare"))
        pairs = page.locator('[data-testid="stMetric"]').filter(has_text="Pairs")
        expect(pairs.locator('[data-testid="stMetricValue"]')).to_have_text("24")
        shot(page, "08-experiments-compare")
