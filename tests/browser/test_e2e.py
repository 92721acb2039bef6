"""End to end in headless Chromium against ``streamlit run app.py``.

A newcomer's path: the home page with the demo loaded, upload a file and score it with the
embedded models, see the results and open a row's drill-down, then the distributions, the
embeddings map, a comparison of two variants and the saved runs. Each page is saved as a
screenshot under ``test-artifacts/``.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from relevancy.testing.browser import vega_point

from .ui import ARTIFACTS, new_dataset, open_options, open_page, pick, settle, shot, start_scoring

pytestmark = [pytest.mark.browser, pytest.mark.slow]

UPLOAD = (
    "question,answer,variant\n"
    'When was the first super bowl?,"The first superbowl was held on Jan 15, 1967.",baseline\n'
    "When was the first super bowl?,The Super Bowl is a very popular American game.,candidate\n"
    "What is the capital of Japan?,Tokyo is the capital of Japan.,baseline\n"
    "What is the capital of Japan?,I'm not sure.,candidate\n"
)


def demo_mean() -> str:
    """The shipped demo's mean score, from its results file (not copied from a page)."""
    from relevancy.runs import demo_results

    values = [r.value for r in demo_results() if r.ok]
    return f"{sum(values) / len(values):.3f}"


def test_home_with_the_demo_loaded(page: Page, app_url: str):
    # the demo is run 1 (imported on the first start); other tests of this session add runs,
    # and Home shows the newest unless a run is named
    open_page(page, app_url, "?run=1")
    expect(page.get_by_text("Active run:")).to_be_visible()
    expect(page.get_by_text("Demo (embedded default)").first).to_be_visible()
    expect(page.locator('[data-testid="stMetricValue"]').first).to_have_text(demo_mean())
    # the precomputed example is explained without running anything
    expect(page.locator(".rel-questions")).to_have_count(2)  # each answer's question bars
    expect(page.get_by_text("Part of the question is not answered").first).to_be_visible()
    expect(page.locator(".rel-shaded").first).to_be_visible()
    # edit an answer and score both live with the embedded models
    page.get_by_role("textbox", name="Answer B").fill(
        "Paris is the capital of France, which is in Europe."
    )
    page.get_by_test_id("stBaseButton-primary").filter(has_text="Score").click()
    expect(page.get_by_text("Scored", exact=True)).to_be_visible(timeout=120_000)
    settle(page)
    expect(page.get_by_text("Showing the bundled precomputed result")).to_have_count(0)
    expect(page.locator(".rel-questions")).to_have_count(2)  # each answer's question bars
    expect(page.get_by_text(re.compile(r"(Score|Ragas value) = \(")).nth(1)).to_be_visible()
    shot(page, "01-home")


def test_upload_score_and_drill_down(page: Page, app_url: str, tmp_path: Path):
    csv = tmp_path / "two-variants.csv"
    csv.write_text(UPLOAD, encoding="utf-8")
    new_dataset(page, app_url, upload=csv)
    expect(page.get_by_text("Preview · 4 rows")).to_be_visible()
    expect(page.get_by_text("2 variant(s): baseline (2), candidate (2).")).to_be_visible()
    start_scoring(page, "Browser upload", 4)
    expect(page.get_by_text(re.compile(r"Scored 4 rows in"))).to_be_visible(timeout=180_000)
    settle(page)
    expect(page.get_by_role("heading", name="Results · Browser upload")).to_be_visible()
    table = page.locator('[data-testid="stDataFrame"]').last
    expect(table).to_be_visible()
    expect(page.get_by_text("4 of 4 rows", exact=True)).to_be_visible()
    # select the second row in the grid: the drill-down follows the selection
    inspect = page.get_by_role("combobox", name="Row to inspect")
    before = inspect.input_value()
    assert before.startswith("row ")
    table.scroll_into_view_if_needed()
    box = table.bounding_box()
    assert box is not None
    page.mouse.click(box["x"] + 18, box["y"] + 35 + 35 + 17)  # header, row 1, then row 2
    settle(page)
    expect(inspect).not_to_have_value(before)
    expect(page.get_by_text("Generated questions and their similarity").first).to_be_visible()
    expect(page.locator(".rel-shaded").first).to_be_visible()
    expect(page.get_by_text(re.compile(r"(Score|Ragas value) = \(")).first).to_be_visible()
    shot(page, "02-dataset-results-drilldown")


def test_distributions(page: Page, app_url: str):
    open_page(page, app_url, "Distributions")
    histogram = page.get_by_test_id("stVegaLiteChart").first
    expect(histogram.locator("svg.marks")).to_be_visible()
    expect(histogram.locator("text").filter(has_text="Answer Relevancy").first).to_be_attached()
    expect(page.get_by_text("Summary statistics")).to_be_visible()
    shot(page, "03-distributions")


def test_embeddings_map(page: Page, app_url: str):
    open_page(page, app_url, "Embeddings")
    chart = page.get_by_test_id("stVegaLiteChart").first  # a 2-D map: a canvas, no plotly
    expect(chart.locator("canvas")).to_be_visible()
    expect(page.get_by_test_id("stPlotlyChart")).to_have_count(0)
    # a box dragged over the middle of the map: its rows are offered below it
    box = chart.locator("canvas").bounding_box()
    assert box is not None
    x0, y0 = box["x"] + box["width"] * 0.3, box["y"] + box["height"] * 0.3
    page.mouse.move(x0, y0, steps=4)
    page.mouse.down()
    page.mouse.move(x0 + box["width"] * 0.4, y0 + box["height"] * 0.4, steps=8)
    page.mouse.up()
    settle(page)
    expect(page.locator('[data-testid="stException"]')).to_have_count(0)
    expect(page.get_by_text(re.compile(r"\d+ rows selected; showing the first"))).to_be_visible()
    expect(page.get_by_text("Generated questions and their similarity").first).to_be_visible()
    shot(page, "04-embeddings")
    page.locator('[data-testid="stButtonGroup"] button').filter(has_text="3D").click()
    settle(page)
    expect(page.locator('[data-testid="stPlotlyChart"] .gl-container').first).to_be_attached()


#: text a page shows cut short (an ellipsis, or clipped by its box)
CLIPPED = """() => Array.from(document.querySelectorAll('[data-testid="stMain"] *')).filter(
    e => e.innerText && e.innerText.trim() && e.scrollWidth > e.clientWidth + 1 &&
    (getComputedStyle(e).textOverflow === 'ellipsis' || getComputedStyle(e).overflow === 'hidden')
).map(e => e.innerText.slice(0, 60))"""


def test_the_dataset_filter_bar_shows_its_labels_whole_at_1400_px(page: Page, app_url: str):
    open_page(page, app_url, "Dataset")  # the browser context is 1,400 px wide
    expect(page.get_by_text("Only below 0.50")).to_be_visible()
    assert page.evaluate(CLIPPED) == []


def test_a_click_on_a_point_opens_its_row(page: Page, app_url: str):
    open_page(page, app_url, "Embeddings")
    # the demo's 48 rows (another test's run of 5 has too few points to find by hovering)
    pick(page, "Active run", "Demo (embedded default)")
    settle(page)
    chart = page.get_by_test_id("stVegaLiteChart").first
    expect(chart.locator("canvas")).to_be_visible()
    row = page.get_by_role("combobox", name="Row", exact=True)
    before = row.input_value()
    for k in range(20):  # a generated question of another row than the one open
        x, y, tip = vega_point(page, chart, "generated question", k=k)
        number = int(re.search(r"row\s+(\d+)", tip).group(1))
        if not before.startswith(f"row {number} "):
            break
    page.mouse.click(x, y)
    settle(page)
    expect(page.locator('[data-testid="stException"]')).to_have_count(0)
    expect(row).to_have_value(re.compile(rf"^row {number} · "))


def test_compare_two_variants(page: Page, app_url: str):
    """Stands alone: the demo run (in every fresh store) has two prompt variants."""
    open_page(page, app_url, "Compare")
    pick(page, "Active run", "Demo (embedded default)")
    expect(page.get_by_text("Pairs", exact=True)).to_be_visible()
    metrics = page.locator('[data-testid="stMetricValue"]')
    expect(metrics.first).to_have_text("24")  # 24 questions, prompt-A vs prompt-B
    expect(page.get_by_text("Biggest regressions")).to_be_visible()
    charts = page.get_by_test_id("stVegaLiteChart")  # the scatter (a canvas), the histogram
    expect(charts).to_have_count(2)
    expect(charts.first.locator("canvas")).to_be_visible()
    expect(
        charts.nth(1).locator("text").filter(has_text="difference, B − A").first
    ).to_be_attached()
    won = re.compile(r"prompt-B wins \d+% of the pairs that are not ties")
    expect(page.get_by_text(won)).to_be_visible()
    with page.expect_download(timeout=120_000) as download:  # every pair, built when clicked
        page.get_by_role("button", name="All 24 pairs (CSV)").click()
    pairs = ARTIFACTS / "pairs.csv"
    download.value.save_as(pairs)
    lines = pairs.read_text(encoding="utf-8").splitlines()
    assert lines[0].startswith("id,question,prompt-A,prompt-B,") and len(lines) == 25
    shot(page, "06-compare-demo")


def test_runs_page(page: Page, app_url: str):
    open_page(page, app_url, "Runs")
    # the page acts on the active run (the sidebar's): its heading (a subheader) names it
    heading = page.get_by_role("heading", level=3).first
    expect(heading).to_have_text(re.compile(r"#\d+ · .+ · (complete|partial|empty)"))
    expect(page.get_by_role("button", name="CSV", exact=True)).to_be_visible()
    with page.expect_download(timeout=120_000) as download:  # built when clicked
        page.get_by_role("button", name="HTML report", exact=True).click()
    report = ARTIFACTS / "report.html"
    download.value.save_as(report)
    text = report.read_text(encoding="utf-8")
    assert "<!DOCTYPE html>" in text and "plotly" in text
    shot(page, "07-runs")


def _scored_per_run(store: Path) -> dict[str, int]:
    from relevancy.runs import RunStore

    return {r.name: r.n_scored for r in RunStore(store).list_runs()}


#: 16 rows no other test scores (nothing cached): enough that a cancel after the first rows
#: lands while some are still waiting, with the embedded generator's 4 rows at once
CANCEL_ROWS = "question,answer\n" + "".join(
    f"How many legs does a {animal} have?,A {animal} has {legs} legs.\n"
    for animal, legs in (
        ("spider", 8),
        ("cat", 4),
        ("chicken", 2),
        ("beetle", 6),
        ("crab", 10),
        ("horse", 4),
        ("ostrich", 2),
        ("ant", 6),
        ("lobster", 10),
        ("dog", 4),
        ("penguin", 2),
        ("moth", 6),
        ("scorpion", 8),
        ("goat", 4),
        ("duck", 2),
        ("tick", 8),
    )
)
CANCEL_N = 16


def test_cancel_keeps_what_was_scored_then_resume_is_offered(
    page: Page, app_url: str, app_home: Path, tmp_path: Path
):
    """Cancel keeps the rows scored so far, then Resume scores the rest."""
    csv = tmp_path / "legs.csv"
    csv.write_text(CANCEL_ROWS, encoding="utf-8")
    new_dataset(page, app_url, upload=csv)
    start_scoring(page, "Cancelled demo", CANCEL_N)
    # wait for the first rows to be saved, then cancel
    expect(page.get_by_text(re.compile(rf"Scored \d+ of {CANCEL_N} rows"))).to_be_visible(
        timeout=120_000
    )
    page.get_by_role("button", name=re.compile("Cancel")).click()
    settle(page)
    expect(page.get_by_text("Scoring stopped.")).to_be_visible()
    partial = page.get_by_text(
        re.compile(rf"Run Cancelled demo is partial: \d+ of {CANCEL_N} rows scored")
    )
    expect(partial).to_be_visible()
    scored = int(re.search(rf"(\d+) of {CANCEL_N}", partial.inner_text()).group(1))
    assert 0 < scored < CANCEL_N
    resume = page.get_by_role("button", name=f"Resume ({CANCEL_N - scored} rows left)")
    expect(resume).to_be_visible()
    # the grid holds every scored row: the rows in flight at the cancel may have been saved by
    # the time it is drawn, so it counts at least what the message said
    grid = page.get_by_text(re.compile(r"^(\d+) of \1 rows$"))
    expect(grid).to_be_visible(timeout=30_000)  # drawn below the cards and filters
    assert int(grid.inner_text().split()[0].replace(",", "")) >= scored
    shot(page, "08-dataset-cancelled")
    # the rows in flight finish in the background, then nothing else is scored: no new run
    # (a stale Score click must not restart the job) and the cancelled run stays partial
    store = app_home / "runs.sqlite3"
    last, stable_since = None, time.monotonic()
    while time.monotonic() - stable_since < 4:
        now = _scored_per_run(store)
        if now != last:
            last, stable_since = now, time.monotonic()
        time.sleep(0.5)
    assert last is not None
    assert sum(1 for name in last if name == "Cancelled demo") == 1
    assert scored <= last["Cancelled demo"] < CANCEL_N
    # Resume scores the rest, and only the rest
    open_page(page, app_url, "Dataset")
    page.get_by_role("button", name=re.compile(r"Resume \(\d+ rows left\)")).click()
    expect(page.get_by_text(re.compile(r"Resumed: scored \d+ more rows"))).to_be_visible(
        timeout=240_000
    )
    settle(page)
    done = _scored_per_run(store)
    assert done["Cancelled demo"] == CANCEL_N and sum(1 for n in done if n == "Cancelled demo") == 1
    expect(page.get_by_text(f"{CANCEL_N} of {CANCEL_N} rows", exact=True)).to_be_visible()


def test_a_10000_row_run_opens_and_drills_down(page: Page, app_url: str, app_home: Path):
    """A large run (written straight into the app's store) opens, pages and drills down."""
    from relevancy.runs import RunStore
    from relevancy.testing.synthetic import write_synthetic_run

    write_synthetic_run(RunStore(app_home / "runs.sqlite3"), 10_000, name="Ten thousand rows")
    open_page(page, app_url, "Dataset")
    pick(page, "Active run", "Ten thousand rows")
    expect(page.get_by_role("heading", name="Results · Ten thousand rows")).to_be_visible()
    expect(page.get_by_text("Page (of 20, 500 rows each)")).to_be_visible()
    expect(page.get_by_text(re.compile(r"10,000 of 10,000 rows \(page 1 of 20\)"))).to_be_visible()
    inspect = page.get_by_role("combobox", name="Row to inspect")
    before = inspect.input_value()
    open_options(page, inspect)
    page.get_by_role("option").nth(3).click()
    settle(page)
    expect(inspect).not_to_have_value(before)
    expect(page.get_by_text("Generated questions and their similarity").first).to_be_visible()
    expect(page.get_by_text(re.compile(r"kind: (ok|evasive)")).first).to_be_visible()
    shot(page, "09-dataset-10000-rows")
    open_page(page, app_url, "Embeddings")
    expect(page.get_by_text(re.compile(r"A sample of 500 of 10,000 rows"))).to_be_visible()
    # every row (40,000 points): plotly's WebGL map, and its lasso round the middle
    page.get_by_text("All 10,000 rows (slower to draw)").click()
    settle(page)
    chart = page.get_by_test_id("stPlotlyChart").first
    expect(chart.locator(".gl-container").first).to_be_attached()
    expect(page.get_by_text("pick the lasso", exact=False)).to_be_visible()
    chart.hover()
    chart.locator('.modebar-btn[data-attr="dragmode"][data-val="lasso"]').click()
    plot = chart.locator(".nsewdrag").first.bounding_box()
    assert plot is not None
    cx, cy = plot["x"] + plot["width"] / 2, plot["y"] + plot["height"] / 2
    page.mouse.move(cx - 40, cy - 40)
    page.mouse.down()
    for dx, dy in ((40, -40), (40, 40), (-40, 40), (-40, -40)):
        page.mouse.move(cx + dx, cy + dy, steps=4)
    page.mouse.up()
    settle(page)
    expect(page.locator('[data-testid="stException"]')).to_have_count(0)
    expect(page.get_by_text(re.compile(r"\d+ rows selected; showing the first"))).to_be_visible()


KINDS = (
    "question,answer,kind\n"
    "What is the capital of Japan?,Tokyo is the capital of Japan.,good\n"
    "Where is France and what is its capital?,France is in western Europe.,partial\n"
    '"How long should I boil an egg for a soft yolk?","Boil an egg for six minutes for a soft '
    "yolk, then cool it in cold water. My grandmother kept chickens. She loved gardening in the "
    'spring and painting watercolours.",padded\n'
    "What is the capital of Japan?,Bananas are rich in potassium and grow in warm climates.,"
    "off topic\n"
    "How do vaccines work?,I don't know.,evasive\n"
)
#: the main reason each kind of answer gets with the embedded models
EXPECTED_REASONS = {
    "good": "ok",
    "partial": "partial",
    "padded": "padded",
    "off topic": "off_topic",
    "evasive": "noncommittal",
}


def test_each_kind_of_answer_gets_its_reason_in_the_grid_and_the_report(
    page: Page, app_url: str, tmp_path: Path
):
    csv = tmp_path / "kinds.csv"
    csv.write_text(KINDS, encoding="utf-8")
    new_dataset(page, app_url, upload=csv)
    start_scoring(page, "Kinds of answers", 5)
    expect(page.get_by_text(re.compile(r"Scored 5 rows in"))).to_be_visible(timeout=180_000)
    settle(page)
    expect(page.get_by_text("5 of 5 rows", exact=True)).to_be_visible()
    # the reason filter: each reason keeps exactly the row of its kind (the grid is a canvas,
    # so the rows kept are read from the count and from the drill-down, which follows them)
    reasons = page.get_by_role("combobox", name="Reason")
    for kind, reason in EXPECTED_REASONS.items():
        open_options(page, reasons)
        page.keyboard.type(reason)  # the list draws only the options in view: narrow it first
        page.get_by_role("option", name=reason, exact=True).click()
        page.keyboard.press("Escape")
        settle(page)
        expect(page.get_by_text("1 of 5 rows", exact=True)).to_be_visible()
        expect(page.get_by_text(re.compile(f"^row \\d+ · kind: {kind}$"))).to_be_visible()
        expect(page.get_by_text(re.compile(f"Main reason: {reason}")).first).to_be_visible()
        reasons.click()
        page.keyboard.press("Backspace")  # removes the chosen reason again
        page.keyboard.press("Escape")
        settle(page)
    shot(page, "10-dataset-reasons")
    # the HTML report's lowest rows carry the reason beside each answer
    open_page(page, app_url, "Runs")
    with page.expect_download(timeout=120_000) as download:
        page.get_by_role("button", name="HTML report", exact=True).click()
    report = download.value.path().read_text(encoding="utf-8")
    for answer, reason in (
        ("I don&#x27;t know.", "noncommittal"),
        ("Bananas are rich", "off_topic"),
    ):
        row = report[report.index(answer) - 600 : report.index(answer)]
        assert f"<b>{reason}</b>" in row, (answer, row)
