"""The bench harness's record keeping (the benches themselves run by hand: bench/README.md)."""

from __future__ import annotations

import doctest
import json

import pytest

import bench.harness as harness


@pytest.mark.parametrize("module", ["bench.harness", "bench._dashboard", "bench._browser"])
def test_doctests(module):
    import importlib

    failed, tried = doctest.testmod(importlib.import_module(module))
    assert tried and not failed


def test_the_two_dashboard_benches_time_the_same_pages_and_actions():
    """AppTest and the browser share one list: every page's script is there to run, each
    record key is used once, and the browser table puts AppTest's figure beside its own."""
    from bench import _browser, _dashboard

    assert [p.name for p in _dashboard.PAGES][:2] == ["Home", "Dataset"]
    for page in _dashboard.PAGES:
        assert (harness.ROOT / page.script).is_file(), page
    keys = [a.apptest for a in _dashboard.ACTIONS if a.apptest]
    assert len(keys) == len(set(keys)) and "drilldown_s" in keys
    size = {
        "rows": 10,
        "first_render": {"4_Compare.py": {"s": 0.51}},
        "filter_change_s": 0.25,
        "browser": {
            "pages": {"Compare": {"first_s": 9.6, "median_s": 7.2}},
            "actions": {"filter": {"first_s": 1.0, "median_s": 0.76}},
            "server_peak_mib": 100.0,
        },
    }
    lines = {line.split(" | ")[0]: line for line in _browser.tables([size]).splitlines()}
    assert lines["| Compare"].startswith("| Compare | 9.60 / 7.20 |")
    assert lines["| Compare"].endswith("| 0.51 |")  # AppTest's first render beside it
    assert lines["| action: filter"].endswith("| 0.25 |")


def test_the_scale_bench_holds_a_million_cli_rows_to_issue_38s_targets():
    """bench.dashboard_scale's CLI targets: the rate against 10,000 rows, memory by quarter."""
    import bench.dashboard_scale as scale

    failed, tried = doctest.testmod(scale)
    assert tried and not failed
    runs = [
        {"rows": 10_000, "store_rows_before": 0, "rows_per_s": 150.0},
        {"rows": 1_000_000, "store_rows_before": 0, "rows_per_s": 120.0},  # 20% slower
        {"rows": 1_000_000, "store_rows_before": 1_000_000, "rows_per_s": 150.0},  # not fresh
    ]
    runs[1]["rss_quarters_median_mb"] = [300, 340, 380, 420]  # climbs 40%
    assert [(k, ok) for k, _, _, ok in scale.cli_targets(runs)] == [
        ("1,000,000 rows: rows/s against 10,000 rows", False),
        ("1,000,000 rows: median RSS, last quarter against the first", False),
    ]
    assert scale.cli_targets(runs[1:]) == []  # no 10,000-row run to hold it to


def test_merge_keeps_the_parts_not_measured_again(tmp_path, monkeypatch):
    monkeypatch.setattr(harness, "RESULTS_DIR", tmp_path)
    old = harness.make_record(
        "ok",
        ["python", "-m", "bench.x"],
        10.0,
        [1.0, 1.0, 1.0],
        {
            "dashboard": [{"rows": 10}],
            "local": [{"rows": 500, "peak": 900}],
            "peak_rss_mb": 900,
            "python": "3.11",
        },
        log="bench/results/x.log",
    )
    harness.save_record("x", old)
    new = harness.make_record(
        "ok",
        ["python", "-m", "bench.x", "--local-rows", "500"],
        5.0,
        [0.5, 0.5, 0.5],
        {
            "dashboard": [],
            "local": [{"rows": 500, "peak": 550}],
            "peak_rss_mb": 560,
            "python": "3.11",
        },
        log=None,
    )
    harness.save_record("x", harness.merge_record(harness.read_record("x"), new))
    got = json.loads((tmp_path / "x.json").read_text())
    assert got["figures"]["dashboard"] == [{"rows": 10}]  # kept
    assert got["figures"]["local"] == [{"rows": 500, "peak": 550}]  # replaced
    assert got["figures"]["peak_rss_mb"] == 560
    assert got["command"] == (
        "python -m bench.x; then python -m bench.x --local-rows 500 (measured again: local)"
    )
    # nothing saved before: the new record as it is
    assert harness.merge_record(None, new) == new


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_the_browser_bench_writes_every_figure(tmp_path):
    """``python -m bench.dashboard_scale --browser`` at 2,000 rows: it completes and writes every
    page's and every action's figures (what they are is not asserted: timings go to RESULTS.md)."""
    import subprocess
    import sys

    from bench import _browser
    from relevancy.testing.browser import chromium_missing

    if chromium_missing():
        pytest.skip(chromium_missing())
    out = tmp_path / "figures.json"
    cmd = [sys.executable, "-m", "bench.dashboard_scale", "--sizes", "2000", "--cli-rows"]
    cmd += ["--local-rows", "--browser", "--no-apptest", "--visits", "1", "--json", str(out)]
    done = subprocess.run(cmd, cwd=harness.ROOT, capture_output=True, text=True, timeout=1100)
    assert done.returncode == 0, done.stderr[-3000:]
    (size,) = json.loads(out.read_text())["dashboard"]
    assert "error" not in size, size.get("error")
    browser = size["browser"]
    assert list(browser["pages"]) == [p.name for p in _browser.PAGES]
    for name, page in browser["pages"].items():
        for key in ("median_s", "first_s", "server_cpu_s", "browser_cpu_s"):
            assert isinstance(page[key], float | int) and page[key] >= 0, (name, key, page)
        assert page["errors"] == 0, name
    assert set(browser["actions"]) == {
        "filter",
        "sort",
        "drill-down",
        "over time: day",
        "over time: hour",
        "compare: tie margin",
        "compare: regression opened",
        "embeddings: point clicked",
    }
    for name, action in browser["actions"].items():
        assert isinstance(action["median_s"], float | int) and action["median_s"] >= 0, name
        assert action["errors"] == 0, name
    tabs = browser["two_tabs"]  # the heaviest page in two tabs at once, against one tab
    assert tabs["page"] in browser["pages"] and tabs["one_tab_s"] > 0 and tabs["two_tabs_s"] > 0
    assert tabs["ratio"] == pytest.approx(tabs["two_tabs_s"] / tabs["one_tab_s"], abs=0.01)
    assert browser["server_peak_mib"] > 0
    shown = _browser.tables([size])  # RESULTS.md's table of it
    assert "| Compare |" in shown and "two tabs at once" in shown
