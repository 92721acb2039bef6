"""A followed run on the Dataset page in headless Chromium: it says where it reads from, offers
no Resume (its follower scores its rows), and rows the follower adds appear without a reload;
once the follower stops, the page says how to go on."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pandas as pd
import pytest
from playwright.sync_api import Page, expect

from relevancy import AnswerRelevancy
from relevancy.runs import RunStore
from relevancy.testing.fakes import FakeEmbedder, FakeGenerator

from .ui import open_page, shot

pytestmark = [pytest.mark.browser, pytest.mark.slow]

SOURCE = "phoenix://127.0.0.1:6006/support"


def arrive(store: RunStore, run_id: int, questions: list[str]) -> None:
    """What `relevancy score --follow` does with new spans: add them (with the cursor), then
    save each result as it is scored."""
    frame = pd.DataFrame(
        {
            "user_input": questions,
            "response": [f"The answer to: {q}" for q in questions],
            "span_id": [f"span-{q}" for q in questions],
        }
    )
    now = datetime.now(timezone.utc)
    rows = store.add_followed(
        run_id, frame, frame["span_id"].tolist(), [now.timestamp()] * len(frame), read_to=now
    )
    metric = AnswerRelevancy(llm=FakeGenerator(), embeddings=FakeEmbedder(dim=16), cache=False)
    store.append_results(run_id, list(zip(rows, metric.score_many(frame))))


def test_a_followed_run_grows_on_the_dataset_page(page: Page, app_url: str, app_home: Path):
    store_path = app_home / "runs.sqlite3"
    store = RunStore(store_path)
    follow = {"follow": {"source": SOURCE, "interval": 2}, "backend": "embedded"}
    run_id = store.create_followed_run("live support", follow, SOURCE)
    lease = store.take_follow_lease(run_id, ttl=300)  # this process follows it, as the CLI does
    arrive(store, run_id, ["Where is Paris?", "How tall is K2?", "Who wrote Faust?"])
    open_page(page, app_url, f"Dataset?run={run_id}")
    expect(page.get_by_text("new rows appear here as they are scored")).to_be_visible(
        timeout=60_000
    )
    expect(page.get_by_text(f"Run #{run_id} · 3 of 3 rows scored")).to_be_visible()
    expect(page.get_by_role("button", name="Resume")).to_have_count(0)
    arrive(store, run_id, ["When did Rome fall?", "What is a quark?"])
    expect(page.get_by_text(f"Run #{run_id} · 5 of 5 rows scored")).to_be_visible(timeout=20_000)
    expect(page.get_by_text("What is a quark?").first).to_be_attached()
    shot(page, "14-dataset-followed")
    # the Runs page names it followed, offers no Resume, and shows the command that follows it
    open_page(page, app_url, f"Runs?run={run_id}")
    expect(page.get_by_text("followed (grows as its source does)")).to_be_visible(timeout=60_000)
    expect(page.get_by_role("button", name="Resume")).to_have_count(0)
    expect(
        page.get_by_text(f'--from "{SOURCE}" --follow --save-run "live support"')
    ).to_be_visible()
    open_page(page, app_url, f"Dataset?run={run_id}")
    # the follower stops (it lets go of the run): the page says how to go on, without a reload
    store.drop_follow_lease(lease)
    expect(page.get_by_text("Its follower is not running")).to_be_visible(timeout=60_000)
    expect(page.get_by_text(f"relevancy score --from {SOURCE} --follow")).to_be_visible()
