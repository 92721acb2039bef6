"""Links to a row in headless Chromium: the address bar follows the drill-down, and the copied
URL, opened in a new browser context (no session), shows the same row; a link to a run that is
not there says so in one line. Screenshot: ``test-artifacts/11-dataset-row-link.png``.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlsplit

import pytest
from playwright.sync_api import Browser, Page, Playwright, expect

from relevancy.testing.browser import launch_args

from .ui import ARTIFACTS, open_options, open_page, pick, settle, shot

pytestmark = [pytest.mark.browser, pytest.mark.slow]

DEMO_NAME = "Demo (embedded default)"


def _params(url: str) -> dict[str, str]:
    return {k: v[-1] for k, v in parse_qs(urlsplit(url).query).items()}


def _drill_down(page: Page) -> dict[str, str]:
    """What the drill-down shows: its row (caption), question and score."""
    caption = (
        page.get_by_test_id("stCaptionContainer")
        .filter(has_text=re.compile(r"^row \d+( · |$)"))
        .first
    )
    score = (
        page.get_by_test_id("stMetric")
        .filter(has=page.get_by_test_id("stMetricLabel").get_by_text("Score", exact=True))
        .first.get_by_test_id("stMetricValue")
    )
    return {
        "row": caption.inner_text().split(" · ")[0],
        "question": page.get_by_test_id("stText").first.inner_text(),
        "score": score.inner_text(),
        "picked": page.get_by_role("combobox", name="Row to inspect").input_value(),
    }


def _open_dataset(page: Page, app_url: str, query: str = "") -> None:
    """The Dataset page, once its drill-down is drawn and the address bar names its row (the
    first start of a fresh server imports the demo: its first script run takes a while)."""
    open_page(page, app_url, f"Dataset{query}")
    expect(page.get_by_role("combobox", name="Row to inspect")).to_be_visible(timeout=120_000)
    page.wait_for_url(re.compile(r"/Dataset\?run=\d+&row=\d+$"), timeout=120_000)
    settle(page)


def _pick_row(page: Page, nth: int) -> None:
    """Choose the ``nth`` option that is not the row shown now, and wait until the picker holds
    it. (The list opens scrolled to the current row and draws only the options in view, so a
    bare index can land on the row already shown.)"""
    picker = page.get_by_role("combobox", name="Row to inspect")
    current = picker.input_value()
    open_options(page, picker)
    options = page.get_by_role("option")
    choices = [i for i in range(options.count()) if options.nth(i).inner_text().strip() != current]
    assert len(choices) > nth, f"only {len(choices)} other rows in view"
    option = options.nth(choices[nth])
    text = option.inner_text().strip()
    option.click()
    expect(picker).to_have_value(text)
    settle(page)


def test_a_copied_row_link_opens_the_same_drill_down_in_a_new_context(
    page: Page, app_url: str, browser: Browser, browser_context_args: dict
):
    from relevancy.runs import demo_results

    _open_dataset(page, app_url)
    pick(page, "Active run", DEMO_NAME)
    _pick_row(page, 5)
    shown = _drill_down(page)
    # the address bar names the run and the row as the page numbers it (1-based)
    url = page.url
    params = _params(url)
    assert urlsplit(url).path == "/Dataset" and set(params) == {"run", "row"}
    assert shown["row"] == f"row {params['row']}" and shown["picked"].startswith(
        shown["row"] + " · "
    )
    expected = demo_results()[int(params["row"]) - 1]
    assert shown["question"] == expected.user_input
    assert shown["score"] == f"{expected.value:.3f}"
    # the copy box holds the same address, and its button copies it
    box = page.locator(".rel-link")
    expect(box).to_have_count(1)
    assert box.locator("code").inner_text().strip() == url
    expect(page.get_by_text("Link to this row")).to_be_visible()
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    box.get_by_role("button", name="Copy").click()
    expect(box.get_by_role("button")).to_have_text("Copied")
    copied = page.evaluate("navigator.clipboard.readText()")
    assert copied == url
    path = shot(page, "11-dataset-row-link")
    assert path.stat().st_size > 0
    # a new browser context: no cookies, no session; the link alone opens the same drill-down
    context = browser.new_context(**browser_context_args)
    try:
        fresh = context.new_page()
        fresh.goto(copied)
        expect(fresh.get_by_role("combobox", name="Row to inspect")).to_be_visible(timeout=120_000)
        settle(fresh)
        expect(fresh.get_by_test_id("stException")).to_have_count(0)
        assert _drill_down(fresh) == shown
        assert _params(fresh.url) == params
        expect(fresh.get_by_role("combobox", name="Active run")).to_have_value(
            re.compile(rf"^#{params['run']} · ")
        )
        expect(fresh.get_by_test_id("stAlertContentWarning").filter(has_text="link")).to_have_count(
            0
        )
    finally:
        context.close()
    # another row: the box and its button follow it (the drill-down's fragment draws them again)
    _pick_row(page, 6)
    expect(box.locator("code")).not_to_have_text(url)
    again = box.locator("code").inner_text().strip()
    assert again == page.url and again != url
    box.get_by_role("button", name="Copy").click()
    expect(box.get_by_role("button")).to_have_text("Copied")
    assert page.evaluate("navigator.clipboard.readText()") == again


def test_back_reopens_the_previous_row(page: Page, app_url: str):
    _open_dataset(page, app_url)
    pick(page, "Active run", DEMO_NAME)
    _pick_row(page, 2)
    first = _drill_down(page)
    _pick_row(page, 7)
    assert _drill_down(page)["row"] != first["row"]
    page.go_back()
    settle(page)
    assert _drill_down(page) == first
    assert _params(page.url)["row"] == first["row"].removeprefix("row ")


def test_a_link_to_a_missing_run_says_so_and_the_page_still_works(page: Page, app_url: str):
    _open_dataset(page, app_url, "?run=9999&row=3")
    warning = page.get_by_test_id("stAlertContentWarning").filter(
        has_text="Run #9999 from the link is not in this run store"
    )
    expect(warning).to_have_count(1)
    expect(warning).to_contain_text("Active run")
    # one line, and no other warning about the link (no second one for its row)
    links = page.get_by_test_id("stAlertContentWarning").filter(has_text=re.compile("link"))
    expect(links).to_have_count(1)
    # the page shows the active run, its grid and a drill-down, and the URL says which
    expect(page.get_by_role("heading", name=re.compile(r"^Results · "))).to_be_visible()
    shown = _drill_down(page)
    params = _params(page.url)
    assert params["run"] != "9999" and shown["row"] == f"row {params['row']}"
    shot(page, "12-dataset-missing-run-link")


def test_the_reports_rows_open_in_the_dashboard(page: Page, app_url: str):
    """The HTML report built on the Runs page links each row it lists to its drill-down here."""
    from relevancy.runs import demo_results

    open_page(page, app_url, "Runs?run=1")  # a link to the demo run (the first of the store)
    expect(page.get_by_role("heading", level=3).first).to_contain_text(DEMO_NAME)
    with page.expect_download(timeout=120_000) as download:
        page.get_by_role("button", name="HTML report", exact=True).click()
    report = ARTIFACTS / "report-links.html"
    download.value.save_as(report)
    page.goto(report.as_uri())
    rows = page.locator("tr[id^='row-']")
    expect(rows).to_have_count(10)
    first = rows.first
    number = first.get_attribute("id").removeprefix("row-")
    expect(first.locator("a.row")).to_have_attribute("href", f"#row-{number}")
    first.get_by_role("link", name="open ↗").click()
    page.wait_for_url(f"{app_url}/Dataset?run=1&row={number}", timeout=120_000)
    expect(page.get_by_role("combobox", name="Row to inspect")).to_be_visible(timeout=120_000)
    settle(page)
    shown = _drill_down(page)
    expected = demo_results()[int(number) - 1]
    assert shown["row"] == f"row {number}" and shown["question"] == expected.user_input


def test_a_row_link_opens_at_the_drill_down(page: Page, app_url: str):
    """Issue 24: a link to row 30 shows its drill-down, not the top of the page."""
    _open_dataset(page, app_url, "?run=1&row=30")
    heading = page.get_by_role("heading", name="Drill down")
    expect(heading).to_be_in_viewport(timeout=30_000)
    expect(page.get_by_text("Score a new dataset").first).not_to_be_in_viewport()  # the top
    assert _drill_down(page)["row"] == "row 30"


def test_the_copy_button_copies_on_a_plain_http_address(
    playwright: Playwright, app_url: str, browser_context_args: dict
):
    """A team opens the dashboard at http://its-host:8501: not a secure context, so no
    clipboard API there (a tester found the button did nothing); it copies the selected
    address instead, and says so."""
    port = urlsplit(app_url).port
    args = launch_args()
    args["args"] = [*args["args"], "--host-resolver-rules=MAP dash.test 127.0.0.1"]
    browser = playwright.chromium.launch(**args)
    try:
        page = browser.new_context(**browser_context_args).new_page()
        page.goto(f"http://dash.test:{port}/Dataset?run=1&row=5")
        expect(page.get_by_role("combobox", name="Row to inspect")).to_be_visible(timeout=120_000)
        assert page.evaluate("window.isSecureContext") is False
        box = page.locator(".rel-link")
        box.get_by_role("button", name="Copy").click()
        expect(box.get_by_role("button")).to_have_text("Copied")
        assert page.evaluate("window.getSelection().toString()").strip() == (
            f"http://dash.test:{port}/Dataset?run=1&row=5"
        )
    finally:
        browser.close()
