"""The bench harness's record keeping (the benches themselves run by hand: bench/README.md)."""

from __future__ import annotations

import doctest
import json

import bench.harness as harness


def test_doctests():
    failed, tried = doctest.testmod(harness)
    assert tried and not failed


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
