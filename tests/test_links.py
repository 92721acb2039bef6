"""Links to a run and a row: built, read back, held against the store, and in the HTML report."""

from __future__ import annotations

import re

import pytest

from relevancy.dashboard.views.links import (
    Link,
    app_base,
    check_link,
    link_params,
    page_path,
    parse_link,
    row_anchor,
    row_url,
)
from relevancy.runs import RunInfo

PAGES = ["Dataset", "Distributions", "Embeddings", "Compare", "Runs"]


def _run(run_id: int, n_rows: int = 48, n_scored: int | None = None) -> RunInfo:
    return RunInfo(
        id=run_id,
        name=f"run {run_id}",
        created="2026-01-01T00:00:00",
        updated="2026-01-01T00:00:00",
        settings={},
        source="test",
        n_rows=n_rows,
        n_scored=n_rows if n_scored is None else n_scored,
        mean=0.5,
    )


RUNS = [_run(12, 48), _run(7, 10, n_scored=4)]


def _scored_first_rows(run: int, row: int) -> bool:
    """Run 7 is partial: its rows 0-3 are scored."""
    info = next(r for r in RUNS if r.id == run)
    return row < info.n_scored


def _check(params: dict, *, rows: bool = True) -> Link:
    return check_link(
        parse_link(params), RUNS, fallback=RUNS[0], rows=rows, scored=_scored_first_rows
    )


# --- building ------------------------------------------------------------------------------
def test_rows_in_links_are_one_based_and_read_back_zero_based():
    assert link_params(12, 36) == {"run": "12", "row": "37"}
    assert link_params(12) == {"run": "12"}
    assert link_params(None, 5) == {}
    link = parse_link(link_params(12, 36))
    assert (link.run, link.row) == (12, 36)
    assert row_url(12, 36) == "Dataset?run=12&row=37"
    assert row_url(12, 0, "http://host:8501/app/") == "http://host:8501/app/Dataset?run=12&row=1"
    assert row_anchor(36) == "row-37"


def test_page_paths_follow_streamlits_names():
    assert page_path("pages/1_Dataset.py") == "Dataset"
    assert page_path("pages/5_Runs.py") == "Runs"
    assert page_path("app.py") == ""


@pytest.mark.parametrize(
    ("url", "base"),
    [
        ("http://127.0.0.1:8501/Dataset", "http://127.0.0.1:8501"),
        ("http://127.0.0.1:8501/", "http://127.0.0.1:8501"),
        ("http://127.0.0.1:8501", "http://127.0.0.1:8501"),
        ("https://example.org/tools/relevancy/Compare", "https://example.org/tools/relevancy"),
        ("https://example.org/tools/relevancy", "https://example.org/tools/relevancy"),
        ("http://h/Dataset?run=3&row=4#x", "http://h"),
        ("http://h/Datasets", "http://h/Datasets"),  # not one of the pages: kept
        ("javascript:alert(1)", None),
        ("file:///etc/passwd", None),
        ("", None),
        (None, None),
    ],
)
def test_the_dashboards_address_from_a_pages_address(url, base):
    assert app_base(url, PAGES) == base


# --- reading -------------------------------------------------------------------------------
def test_a_good_link_opens_its_run_and_row():
    link = _check({"run": "12", "row": "37"})
    assert (link.run, link.row, link.problems) == (12, 36, ())
    link = _check({"run": " 12 ", "row": "+1", "utm_source": "mail"})  # other params ignored
    assert (link.run, link.row, link.problems) == (12, 0, ())
    link = _check({"run": ["3", "12"], "row": ["1", "48"]})  # repeated: the last counts
    assert (link.run, link.row, link.problems) == (12, 47, ())


def test_no_params_is_no_link():
    assert parse_link({}).empty
    assert parse_link({"utm_source": "mail"}).empty
    assert not parse_link({"run": "abc"}).empty


@pytest.mark.parametrize("bad", ["abc", "", "1.5", "0", "-3", "12abc", "9" * 40, "<b>1</b>"])
def test_a_run_that_is_not_a_run_number_shows_the_fallback(bad):
    link = _check({"run": bad, "row": "3"})
    assert link.run is None and link.row is None
    (problem,) = link.problems  # one line, about the run (a row means nothing without it)
    assert "is not a run number" in problem
    assert "#12 · run 12" in problem.replace("\\", "")  # what is shown instead
    assert "Active run" in problem  # what to do
    assert "<b>" not in problem  # text from the URL is made inert


def test_a_deleted_run_says_so_and_what_to_do():
    link = _check({"run": "99", "row": "3"})
    assert link.run is None and link.row is None
    (problem,) = link.problems
    assert problem.startswith("Run #99 from the link is not in this run store")
    assert "instead" in problem and "Active run" in problem
    empty = check_link(parse_link({"run": "99"}), [], fallback=None, rows=True, scored=min)
    assert "no run to show" in empty.problems[0]


@pytest.mark.parametrize(("row", "why"), [("49", "no row 49"), ("0", "no row 0")])
def test_a_row_out_of_range_keeps_the_run(row, why):
    link = _check({"run": "12", "row": row})
    assert (link.run, link.row) == (12, None)
    (problem,) = link.problems
    assert f"Run #12 has 48 rows, so there is {why}" in problem
    assert "drill-down" in problem


@pytest.mark.parametrize("row", ["x", "", "3.0", "-1", "1e3"])
def test_a_row_that_is_not_a_number_keeps_the_run(row):
    link = _check({"run": "12", "row": row})
    assert (link.run, link.row) == (12, None)
    (problem,) = link.problems
    assert "is not a row number" in problem and "drill-down" in problem


def test_a_row_not_scored_yet_says_resume():
    assert _check({"run": "7", "row": "4"}).row == 3  # scored
    link = _check({"run": "7", "row": "5"})
    assert (link.run, link.row) == (7, None)
    (problem,) = link.problems
    assert "Row 5 of run #7 is not scored yet (4 of 10 rows are)" in problem
    assert "resume" in problem


def test_a_row_without_a_run():
    link = _check({"row": "3"})
    assert (link.run, link.row) == (None, None)
    (problem,) = link.problems
    assert "row 3 but no run" in problem


def test_pages_without_a_drill_down_ignore_the_row():
    assert _check({"run": "12", "row": "999"}, rows=False) == Link(run=12)
    assert _check({"run": "12", "row": "x"}, rows=False).problems == ()
    assert _check({"run": "99", "row": "1"}, rows=False).problems[0].startswith("Run #99")


# --- the report ----------------------------------------------------------------------------
def _report(dashboard_url: str | None) -> tuple[str, int]:
    from relevancy.report.html import build_report
    from relevancy.runs import RunStore, import_demo

    store = RunStore()  # the per-test store (tests/conftest.py)
    run_id = import_demo(store, force=True)
    assert run_id is not None
    return build_report(store, run_id, dashboard_url=dashboard_url), run_id


def _markup(html: str) -> str:
    """The report less its scripts (plotly's inlined JavaScript names URLs of its own)."""
    return re.sub(r"<script\b.*?</script>", "", html, flags=re.S)


def test_the_report_anchors_each_row_and_links_it_to_the_dashboard():
    html, run_id = _report("http://127.0.0.1:8501/")
    ids = re.findall(r"<tr id='row-(\d+)'>", html)
    assert len(ids) == 10 and len(set(ids)) == 10
    for n in ids:
        assert f"<a class='row' href='#row-{n}'" in html
        assert f"href='http://127.0.0.1:8501/Dataset?run={run_id}&amp;row={n}'" in html
    # nothing is fetched from elsewhere: the only links out are those to the dashboard
    outside = re.findall(r"""(?:href|src)=['"](https?://[^'"]+)""", _markup(html))
    assert outside and all(u.startswith("http://127.0.0.1:8501/Dataset?") for u in outside)


def test_the_report_without_the_dashboards_address_links_rows_inside_only():
    html, _ = _report(None)
    assert len(re.findall(r"<tr id='row-\d+'>", html)) == 10
    assert "open ↗" not in html and not re.findall(r"""href=['"]https?://""", _markup(html))
    assert "open ↗" not in _report("javascript:alert(1)")[0]
