"""The Over time chart draws only what is there (issue 46, item 6): the line and its CI band
break at buckets with no rows, a bucket with no neighbour shows its CI as an error bar, change
marks at one moment share a label, bucket spans name their dates (and seconds), and the rows
axis counts in whole numbers with thousands separators."""

from __future__ import annotations

import json
import math
from datetime import timedelta

import numpy as np
import pandas as pd

from relevancy.analysis.timeline import bucket_table, time_span
from relevancy.report.timeline_chart import timeline_figure

from helpers import T0, app, timed_run, visit

HOUR = pd.Timedelta("1h")


def _table(hours: list[int], *, per: int = 6, group: str | None = None) -> pd.DataFrame:
    rng = np.random.default_rng(7)
    times = [T0 + timedelta(hours=h, minutes=m) for h in hours for m in range(0, 60, 60 // per)]
    scores = rng.uniform(0.3, 0.9, len(times))
    groups = None if group is None else [group] * len(times)
    return bucket_table(times, scores, bucket="hour", groups=groups)


def _traces(fig) -> dict[str, dict]:
    return {t["name"]: t for t in json.loads(fig.to_json())["data"]}


def _values(v) -> list:
    if isinstance(v, dict) and "bdata" in v:
        import base64

        return np.frombuffer(base64.b64decode(v["bdata"]), dtype=v["dtype"]).tolist()
    return list(v)


def _nan(v) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def test_the_line_and_its_band_break_where_buckets_have_no_rows():
    table = _table([0, 1, 2, 14, 15, 16])  # twelve empty hours between
    traces = _traces(timeline_figure(table, bucket_width=HOUR))
    line = _values(traces["mean score"]["y"])
    assert len(line) == 7 and _nan(line[3]) and not any(_nan(v) for v in line[:3] + line[4:])
    assert traces["mean score"].get("connectgaps") is False
    band_x = traces["mean score: 95% CI"]["x"]
    shapes, shape = [], []
    for x in band_x:  # the band's closed shapes, parted by None
        if x is None:
            shapes.append(shape)
            shape = []
        else:
            shape.append(pd.Timestamp(x))
    shapes.append(shape)
    assert len(shapes) == 2
    for points in shapes:  # neither shape reaches across the empty hours
        assert max(points) - min(points) <= 2 * HOUR


def test_a_bucket_with_no_neighbour_shows_its_ci_as_an_error_bar():
    table = pd.concat([_table([0, 1], group="a"), _table([5], group="b")], ignore_index=True)
    table = pd.concat([table, _table([0, 3], group="c")], ignore_index=True)
    traces = _traces(timeline_figure(table, bucket_width=HOUR))
    assert "b: 95% CI" not in traces  # no band one bucket wide (it would not show)
    for group, buckets in (("b", [5]), ("c", [0, 3])):
        bar = traces[f"{group}: 95% CI (a bucket alone)"]
        rows = table[table["group"] == group]
        assert len(_values(bar["x"])) == len(buckets)
        up = _values(bar["error_y"]["array"])
        down = _values(bar["error_y"]["arrayminus"])
        assert np.allclose(up, rows["high"] - rows["mean"])
        assert np.allclose(down, rows["mean"] - rows["low"])
        assert min(up) > 0 and min(down) > 0
    assert "a: 95% CI (a bucket alone)" not in traces and "a: 95% CI" in traces


def test_change_marks_at_one_moment_share_one_label():
    table = _table(list(range(24)))
    at = pd.Timestamp(T0 + timedelta(hours=5))
    marks = pd.DataFrame(
        {
            "time": [at, at, at + pd.Timedelta("1s"), pd.Timestamp(T0 + timedelta(hours=18))],
            "column": ["llm", "prompt_version", "model", "llm"],
            "value": ["gpt-b", "v2", "m2", "gpt-c"],
            "previous": ["gpt-a", "v1", "m1", "gpt-b"],
        }
    )
    fig = json.loads(timeline_figure(table, bucket_width=HOUR, marks=marks).to_json())
    notes = [a["text"] for a in fig["layout"]["annotations"]]
    assert notes == ["llm: gpt-b · prompt_version: v2 · model: m2", "llm: gpt-c"]
    assert len(fig["layout"]["shapes"]) == 4  # every mark keeps its line


def test_the_rows_axis_counts_whole_rows_with_separators():
    table = _table([0, 1, 2])
    table["n"] = [16_667, 12_001, 9]  # as a run of a million rows over days has
    fig = json.loads(timeline_figure(table, bucket_width=HOUR).to_json())
    axis = fig["layout"]["yaxis2"]
    assert axis["tickformat"] == ",d"
    assert all(float(v).is_integer() for v in axis["tickvals"])
    assert "%{y:,}" in _traces_from(fig)["rows"]["hovertemplate"]


def _traces_from(fig: dict) -> dict[str, dict]:
    return {t["name"]: t for t in fig["data"]}


def test_spans_name_their_dates_and_seconds():
    t = pd.Timestamp(T0)
    assert time_span(t, t + HOUR) == "2026-12-06 09:00-10:00 UTC"
    day = t.normalize()
    assert time_span(day, day + pd.Timedelta("1D")) == "2026-12-06 00:00 to 2026-12-07 00:00 UTC"
    week = day - pd.Timedelta("6D")
    assert time_span(week, week + pd.Timedelta("7D")) == (
        "2026-11-30 00:00 to 2026-12-07 00:00 UTC"
    )
    assert time_span(t, t + pd.Timedelta("30s")) == "2026-12-06 09:00:00-09:00:30 UTC"
    assert time_span(t.tz_convert(None), t + HOUR) == "2026-12-06 09:00-10:00 UTC"  # naive: UTC


def test_the_page_names_a_day_bucket_by_its_dates():
    from relevancy.paths import default_store_path
    from relevancy.runs import RunStore

    run_id, _, _ = timed_run(RunStore(default_store_path()))
    at = app(query={"run": str(run_id)})
    visit(at, "7_Over_time.py")
    at.segmented_control(key="ot_bucket").set_value("day").run()
    day = pd.Timestamp("2026-12-06", tz="UTC")
    box = at.selectbox(key="ot_bucket_rows")
    assert box.options == ["2026-12-06 00:00 to 2026-12-07 00:00 UTC · 24 rows"]
    box.set_value(day).run()
    assert any("24 rows of 2026-12-06 00:00 to 2026-12-07 00:00 UTC" in c.value for c in at.caption)
    assert not any("00:00 UTC to 00:00" in c.value for c in at.caption)
