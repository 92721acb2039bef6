"""The Over time page's Streamlit code: the time column, the controls, the chart (redrawn every
few seconds while the run is followed), a bucket's rows, and the alert windows.

Session keys are ``ot_*``. The run's rows are read through a cache keyed on the run's version
(its ``updated`` time and row counts), so rows another process adds show at the next refresh.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

import numpy as np
import pandas as pd
import streamlit as st

from relevancy.analysis.alerts import (
    BELOW_ALPHA,
    DROP_ALPHA,
    DROP_MARGIN,
    WindowCheck,
    check_windows,
    parse_window,
)
from relevancy.analysis.timeline import (
    BUCKETS,
    CHANGE_NAMES,
    T_ABOVE,
    TIME_NAMES,
    ParsedTimes,
    bucket_table,
    change_marks,
    choose_bucket,
    find_time_column,
    parse_times,
    time_span,
)
from relevancy.dashboard.views.format import esc, fmt, grid_style
from relevancy.dashboard.views.links import row_url
from relevancy.dashboard.views.reference import add_band
from relevancy.dashboard.widgets.labels import run_chance
from relevancy.dashboard.widgets.live import follow_interval, follower_running
from relevancy.dashboard.widgets.permalink import dashboard_url
from relevancy.dashboard.widgets.state import get_store, input_columns
from relevancy.errors import InputError
from relevancy.report.timeline_chart import timeline_figure
from relevancy.runs import RunInfo, RunStore

__all__ = [
    "Controls",
    "NO_TIME",
    "time_column",
    "controls",
    "live_interval",
    "live_caption",
    "draw_live",
    "draw_timeline",
]

#: the one line a run without a time column gets
NO_TIME = (
    "This run's rows have no time column: the names recognised are "
    + ", ".join(f"`{n}`" for n in TIME_NAMES)
    + " (any case)."
)
#: a run updated this recently counts as followed (its chart refreshes)
LIVE_WITHIN = timedelta(minutes=5)
#: seconds between refreshes of a run that is not followed but changed lately
DEFAULT_INTERVAL = 10.0
_BUCKET_LABELS = {
    "auto": "auto",
    "10min": "10 minutes",
    "hour": "hour",
    "day": "day",
    "week": "week",
}


@dataclass(frozen=True)
class Controls:
    """What the user picked above the chart."""

    time_column: str
    bucket: str  #: "auto" or a key of BUCKETS
    split: str | None  #: the column the lines are split by
    alert_below: float | None  #: the alert threshold (None: alerts off)
    window: str  #: the alert window as typed ("1h")
    min_rows: int
    marks: tuple[str, ...] = ()  #: the columns whose changes are marked


def time_column(info: RunInfo) -> str | None:
    """The time column: found by name, or picked; ``None`` (with the one line) when none."""
    own = input_columns(info)
    found = find_time_column(own)
    if found is None:
        st.info(NO_TIME, icon="🕒")
    if not own:
        return None
    return st.selectbox(
        "Time column",
        own,
        index=own.index(found) if found else None,
        placeholder="pick the column holding each row's time",
        key=f"ot_time_{info.id}",
        help="The column read as each row's time: ISO text (UTC when it names no zone), or "
        "epoch seconds, milliseconds, microseconds or nanoseconds.",
    )


def controls(info: RunInfo, column: str, threshold: float) -> Controls:
    """The bucket, the split and the alerts' settings."""
    c1, c2 = st.columns([3, 2])
    bucket = c1.segmented_control(
        "Bucket",
        list(_BUCKET_LABELS),
        format_func=_BUCKET_LABELS.get,
        default="auto",
        key="ot_bucket",
        required=True,
        help="auto: the narrowest bucket that splits the run's span of time into at most 72.",
    )
    splits = ["llm"] + [c for c in input_columns(info) if c != column]
    split = c2.selectbox(
        "Split by",
        splits,
        index=None,
        placeholder="nothing",
        key="ot_split",
        format_func=lambda c: "model (llm)" if c == "llm" else c,
    )
    wanted = {n.lower() for n in CHANGE_NAMES}
    marked = st.multiselect(
        "Mark changes of",
        splits,
        default=[c for c in splits if c.lower() in wanted],
        key=f"ot_marks_{info.id}",
        format_func=lambda c: "model (llm)" if c == "llm" else c,
        placeholder="no column",
        help="A dotted line where each of these columns first takes a new value (a model or a "
        "prompt version). Found by name; pick the run's own columns for them.",
    )
    on = st.toggle("Alerts", key="ot_alerts", help="Mark the windows whose relevancy is low.")
    below, window, min_rows = None, "1h", 10
    if on:
        a1, a2, a3 = st.columns(3)
        below = a1.number_input(
            "Alert below", 0.0, 1.0, float(threshold), 0.05, key="ot_below", format="%.2f"
        )
        window = a2.text_input("Window", "1h", key="ot_window", help="30m, 1h, 1d, 2w...")
        min_rows = int(a3.number_input("Rows needed at least", 2, 10_000, 10, key="ot_min_rows"))
    return Controls(column, str(bucket), split, below, window, min_rows, tuple(marked))


def _updated(info: RunInfo) -> datetime | None:
    try:
        when = datetime.fromisoformat(str(info.updated))
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=timezone.utc)


def live_interval(store: RunStore, info: RunInfo, *, now: datetime | None = None) -> float | None:
    """Seconds between refreshes while the run grows, else ``None``: a followed run while its
    follower runs (:func:`follower_running`, as the Dataset page says), another run while it
    changed in the last few minutes. A followed run whose follower stopped is not refreshed."""
    if isinstance(info.settings.get("follow"), dict):
        return follow_interval(info) if follower_running(store, info) else None
    updated = _updated(info)
    now = now or datetime.now(timezone.utc)
    if updated is not None and now - updated <= LIVE_WITHIN:
        return DEFAULT_INTERVAL
    return None


def live_caption(info: RunInfo, every: float | None) -> str:
    """What the page says about refreshing: a followed run is followed while its follower runs
    (``every``: seconds) and said to be stopped when not (``every`` None); another run (a CLI
    run just saved, a run being scored) is only said to have changed lately."""
    if isinstance(info.settings.get("follow"), dict):
        if every is None:
            return (
                "⏸️ This run follows a source, but its follower is not running: the chart shows "
                "the rows saved so far and is not refreshed."
            )
        return f"🔴 Following this run: the chart takes in new rows every {every:g} s."
    minutes = int(LIVE_WITHIN.total_seconds() // 60)
    return (
        f"🟠 This run changed in the last {minutes} minutes: the chart takes in new rows every "
        f"{every:g} s while it changes."
    )


def draw_live(run_id: int, c: Controls) -> None:
    """The chart, refreshed while the run grows; when it stops growing (its follower stopped,
    or it has not changed for a while), the whole page is drawn again, without refreshes."""
    store = get_store()
    if live_interval(store, store.get_run(run_id)) is None:
        st.rerun(scope="app")
    draw_timeline(run_id, c)


@st.cache_data(show_spinner=False, max_entries=16)
def _rows(
    path: str, run_id: int, version: str, column: str, split: str | None, marks: tuple[str, ...]
) -> tuple[pd.DataFrame, ParsedTimes]:
    """The scored rows' time, score, reason, split and change columns (cached per version)."""
    store = RunStore(path)
    names = ["score", "reason", "llm", column]
    names += [c for c in (*marks, split) if c and c not in names]
    frame = store.columns(run_id, names)
    return frame, parse_times(frame[column])


def _checks(
    times: pd.Series, scores: np.ndarray, c: Controls, until: datetime | None
) -> list[WindowCheck]:
    """The alert windows; for a run still growing (``until``: now), complete windows only, as
    ``relevancy score --follow`` checks them."""
    if c.alert_below is None:
        return []
    try:
        window = parse_window(c.window)
    except InputError as exc:
        st.error(str(exc), icon="⏱️")
        return []
    return check_windows(
        times, scores, below=c.alert_below, window=window, min_rows=c.min_rows, until=until
    )


def draw_timeline(run_id: int, c: Controls) -> None:
    """The chart, the bucket's rows and the alerts, from the run as it is now."""
    store = get_store()
    info = store.get_run(run_id)
    frame, parsed = _rows(
        str(store.path), run_id, store.version(run_id), c.time_column, c.split, c.marks
    )
    has_time = parsed.values.notna().to_numpy()
    if not has_time.any():
        st.warning(
            f"No row of this run has a time in column **{esc(c.time_column)}**: "
            + esc(parsed.describe()),
            icon="🕒",
        )
        return
    times = parsed.values[has_time]
    rows = frame[has_time].reset_index(drop=True).assign(time=times.reset_index(drop=True))
    bucket = choose_bucket(times) if c.bucket == "auto" else c.bucket
    groups = rows[c.split].astype(str) if c.split else None
    table = bucket_table(rows["time"], rows["score"], bucket=bucket, groups=groups)
    marks = change_marks(rows["time"], rows, columns=c.marks)
    growing = isinstance(info.settings.get("follow"), dict) and follower_running(store, info)
    until = datetime.now(timezone.utc) if growing else None
    checks = _checks(rows["time"], rows["score"].to_numpy(float), c, until)
    alerting = [ch for ch in checks if ch.status == "alert"]
    fig = timeline_figure(
        table,
        bucket_width=pd.Timedelta(BUCKETS[bucket]),
        marks=marks,
        alerts=[(pd.Timestamp(a.start), pd.Timestamp(a.end)) for a in alerting],
        threshold=c.alert_below,
    )
    level = None
    if info.mode == "ragas":
        level = max(run_chance(run_id).values(), key=lambda lv: lv.rows, default=None)
    # the band's note at its foot, above the bars: high means run along its top
    st.plotly_chart(add_band(fig, level, axis="y", note="bottom left"), key="ot_chart")
    span = time_span(times.min(), times.max(), dash=" to ")
    st.caption(
        f"{int(has_time.sum()):,} rows from {span}, per {_BUCKET_LABELS[bucket]}. Each point is "
        "a bucket's mean score (failed rows counted, not averaged) with its 95% CI as the band "
        f"(Student's t above {T_ABOVE} scores, a bootstrap below) "
        "(a bar on a bucket with no neighbour); the line breaks where buckets have no rows; "
        "the grey bars (right axis) count its rows."
        + (" The shaded band is where unrelated pairs score (chance)." if level else "")
        + (
            " Dotted lines: the first row of a new value of "
            + ", ".join(sorted({esc(m) for m in marks["column"]}))
            + "."
            if len(marks)
            else ""
        )
    )
    if parsed.bad or parsed.empty:
        st.caption("⚠️ " + esc(parsed.describe()))
    _bucket_rows(run_id, rows, table, bucket)
    if c.alert_below is not None and checks:
        _alert_list(checks, c, until is not None)


def _bucket_rows(run_id: int, rows: pd.DataFrame, table: pd.DataFrame, bucket: str) -> None:
    totals = table.groupby("start", sort=True).agg(n=("n", "sum"), failed=("failed", "sum"))
    width = pd.Timedelta(BUCKETS[bucket])
    labels = {
        start: f"{time_span(start, start + width)} · {int(t.n):,} rows"
        + (f", {int(t.failed):,} failed" if t.failed else "")
        for start, t in totals.iterrows()
    }
    starts = list(labels)
    picked = st.selectbox(
        "Open a bucket's rows",
        starts,
        index=None,
        format_func=labels.get,
        placeholder="pick a bucket to see its rows and their reasons",
        key="ot_bucket_rows",
    )
    if picked is None:
        return
    end = picked + width
    inside = rows[(rows["time"] >= picked) & (rows["time"] < end)].sort_values("time")
    texts = get_store().inputs(run_id, inside["row"].tolist())
    one_day = picked.date() == (end - pd.Timedelta(1, "us")).date()
    clock = "%H:%M:%S" if one_day else "%Y-%m-%d %H:%M:%S"
    base = dashboard_url()
    shown = pd.DataFrame(
        {
            "row": inside["row"].to_numpy() + 1,
            "time": inside["time"].dt.strftime(clock).to_numpy(),
            "score": inside["score"].to_numpy(),
            "reason": inside["reason"].to_numpy(),
            "question": texts.loc[inside["row"], "user_input"].to_numpy(),
            "answer": texts.loc[inside["row"], "response"].to_numpy(),
            "drill-down": [row_url(run_id, int(r), base) for r in inside["row"]],
        }
    )
    st.dataframe(
        grid_style(shown, {"row": "{:,d}", "score": "{:.3f}"}),  # a failed score: "—"
        hide_index=True,
        key="ot_rows",
        column_config={
            "row": st.column_config.NumberColumn("#", width="small"),
            "drill-down": st.column_config.LinkColumn(
                "drill-down", display_text="open", help="The row on the Dataset page"
            ),
        },
    )
    st.caption(
        f"{len(shown):,} rows of {time_span(picked, end)}; **open** "
        "shows a row's drill-down on the Dataset page."
    )


def _alert_list(checks: list[WindowCheck], c: Controls, growing: bool = False) -> None:
    alerting = [ch for ch in checks if ch.status == "alert"]
    few = sum(ch.status == "too_few" for ch in checks)
    st.markdown(f"**Alerts** (below {fmt(c.alert_below, 2)}, windows of {esc(c.window)})")
    if alerting:
        st.dataframe(
            pd.DataFrame(
                {
                    "window": [time_span(a.start, a.end) for a in alerting],
                    "kind": [a.kind for a in alerting],
                    "rows": [a.n for a in alerting],
                    "mean": [a.mean for a in alerting],
                    "message": [a.message for a in alerting],
                }
            ),
            hide_index=True,
            key="ot_alert_table",
            column_config={"mean": st.column_config.NumberColumn(format="%.3f")},
        )
    else:
        st.caption(f"No window alerts among {len(checks)}.")
    if few:
        st.caption(
            f"{few} window(s) have too few rows to tell (fewer than {c.min_rows}, or a CI that "
            "still reaches the threshold): no alert on those."
        )
    st.caption(
        "A window alerts when its mean is below the threshold and so is its one-sided "
        f"{1 - BELOW_ALPHA:.2%} t bound (with the larger of its spread and the previous "
        "window's), or when it is lower than the previous window by more than Welch's t at "
        f"{DROP_ALPHA:.2%} allows, past {DROP_MARGIN:g}."
        + (" The window in progress is judged once it ends." if growing else "")
    )
