"""What the pages do to be fast in the browser (issue 47), checked without one: Over time's
bucket CIs without a bootstrap per large bucket, Compare's scatter in WebGL, a large box from
its quartiles. The timings themselves are bench.dashboard_scale --browser's (bench/RESULTS.md)."""

from __future__ import annotations

import math
from datetime import datetime, timedelta, timezone

import numpy as np
import pandas as pd

from relevancy.analysis.alerts import t_quantile
from relevancy.analysis.timeline import T_ABOVE, bucket_table, mean_ci
from relevancy.core.stats import bootstrap_ci
from relevancy.report import charts, compare_charts

T0 = datetime(2026, 1, 5, tzinfo=timezone.utc)


def test_a_large_bucket_gets_the_t_interval_a_small_one_the_bootstrap():
    rng = np.random.default_rng(1)
    big = rng.beta(5, 2, size=500)
    low, high = mean_ci(big)
    half = t_quantile(0.975, big.size - 1) * big.std(ddof=1) / math.sqrt(big.size)
    assert math.isclose(low, big.mean() - half) and math.isclose(high, big.mean() + half)
    lo_boot, hi_boot = bootstrap_ci(big)  # the two agree to within the bootstrap's own noise
    assert abs(lo_boot - low) < 0.004 and abs(hi_boot - high) < 0.004
    small = big[:T_ABOVE]
    assert mean_ci(small) == bootstrap_ci(small)
    assert all(math.isnan(x) for x in mean_ci(np.array([0.5, np.nan])))


def test_bucket_table_uses_the_same_intervals_bucket_by_bucket():
    rng = np.random.default_rng(2)
    minutes = np.concatenate([rng.uniform(0, 60, 200), rng.uniform(60, 120, 12)])
    times = [T0 + timedelta(minutes=float(m)) for m in minutes]
    scores = rng.uniform(0, 1, minutes.size)
    scores[[3, 205]] = np.nan
    table = bucket_table(times, scores, bucket="hour", groups=["a"] * minutes.size)
    assert table["n"].tolist() == [200, 12] and table["failed"].tolist() == [1, 1]
    for (_, line), part in zip(table.iterrows(), (scores[:200], scores[200:])):
        assert math.isclose(line["mean"], np.nanmean(part))
        assert np.allclose((line["low"], line["high"]), mean_ci(part))


def test_compare_scatter_draws_a_stated_sample_in_svg_and_keeps_its_hover():
    n = compare_charts.SCATTER_PAIRS + 1
    paired = pd.DataFrame(
        {"user_input": [f"q{i}" for i in range(n)], "score_a": np.linspace(0, 1, n)}
    )
    paired["score_b"] = paired["score_a"][::-1].to_numpy()
    paired["diff"] = paired["score_b"] - paired["score_a"]
    paired["outcome"] = np.where(paired["diff"] > 0.02, "win", "loss")
    fig = compare_charts.ab_scatter(paired, label_a="old", label_b="new")
    dots = [t for t in fig.data if t.mode == "markers"]
    assert {t.type for t in dots} == {"scatter"}  # SVG: no WebGL context to start
    assert sum(len(t.x) for t in dots) == compare_charts.SCATTER_PAIRS
    assert f"{compare_charts.SCATTER_PAIRS:,} pairs drawn at random" in fig.layout.title.text
    assert "diff %{customdata:+.3f}" in dots[0].hovertemplate and dots[0].text[0].startswith("q")
    small = compare_charts.ab_scatter(paired.head(10), label_a="old", label_b="new")
    assert sum(len(t.x) for t in small.data if t.mode == "markers") == 10


def test_a_group_above_the_box_limit_sends_its_quartiles_not_its_scores():
    n = charts.BOX_SCORES_UP_TO + 1
    frame = pd.DataFrame({"score": np.linspace(0, 1, n), "variant": "a"})
    (box,) = charts.score_box(frame, by="variant").data
    assert box.y is None and box.q1 is not None and len(box.q1) == 1
    (whole,) = charts.score_box(frame.head(100), by="variant").data
    assert len(whole.y) == 100
