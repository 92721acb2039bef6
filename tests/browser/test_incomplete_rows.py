"""A row with a cut-off question in headless Chromium: counted on the run's cards, listed by the
Status filter, "1 of 3" in the grid, and a drill-down that says incomplete instead of ✅."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from playwright.sync_api import Page, expect

from .ui import open_page, pick, shot

pytestmark = [pytest.mark.browser, pytest.mark.slow]

CUT = "cut off after 20 s and again after 40 s"


def _run_with_a_cut_off_row(store_path: Path) -> None:
    """Two rows written into the app's store: one from 3 of 3 questions, one from 1 of 3."""
    from relevancy.core.result import QuestionScore, RelevancyResult
    from relevancy.core.triage import triage
    from relevancy.runs import RunStore

    def row(answer: str, sims: list[float | None]) -> RelevancyResult:
        result = RelevancyResult(
            user_input="What are the seasons?",
            response=answer,
            value=sum(s for s in sims if s is not None) / sum(s is not None for s in sims),
            questions=[
                QuestionScore("", None, None, CUT)
                if s is None
                else QuestionScore(f"What about seasons {i}?", s, None)
                for i, s in enumerate(sims)
            ],
            answer_similarity=0.7,
            strictness=3,
            parts=[{"text": answer, "similarity": 0.7}],
        )
        t = triage(result)
        result.reason, result.flags = t.reason, list(t.flags)
        return result

    answers = ["Spring, summer, autumn and winter.", "The four seasons of the year."]
    results = [row(answers[0], [0.7, 0.72, 0.68]), row(answers[1], [0.75, None, None])]
    store = RunStore(store_path)
    inputs = pd.DataFrame({"user_input": ["What are the seasons?"] * 2, "response": answers})
    run = store.create_run("Cut-off questions", {"backend": "cli"}, inputs)
    store.append_results(run, enumerate(results))


def test_a_row_with_a_cut_off_question_is_counted_filtered_and_not_called_relevant(
    page: Page, app_url: str, app_home: Path
):
    _run_with_a_cut_off_row(app_home / "runs.sqlite3")
    open_page(page, app_url, "Dataset")
    pick(page, "Active run", "Cut-off questions")
    expect(page.get_by_role("heading", name="Results · Cut-off questions")).to_be_visible()
    card = page.locator('[data-testid="stMetric"]').filter(has_text="Incomplete")
    expect(card.locator('[data-testid="stMetricValue"]')).to_have_text("1")
    pick(page, "Status", "incomplete")
    expect(page.get_by_text("1 of 2 rows", exact=True)).to_be_visible()
    expect(page.get_by_text("Not a verdict: incomplete: 1 of 3 questions").first).to_be_visible()
    expect(page.get_by_text("0.750 · incomplete")).to_be_visible()
    expect(page.get_by_text("0.750 · relevant")).to_have_count(0)
    expect(page.get_by_text("Incomplete: 1 of 3 questions").first).to_be_visible()
    expect(page.get_by_text(CUT).first).to_be_visible()
    shot(page, "10-dataset-incomplete-row")
