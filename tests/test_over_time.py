"""Relevancy over time: times read, buckets and their CIs, change marks, alert windows, the
webhook against a real local HTTP server, and the Over time page under AppTest."""

from __future__ import annotations

import doctest
import json
import re
import threading
from collections.abc import Iterator
from datetime import datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pandas as pd
import pytest

from relevancy import InputError
from relevancy.analysis import alerts, timeline
from relevancy.analysis.alerts import WindowCheck, check_windows, parse_window, window_of
from relevancy.analysis.timeline import (
    bucket_table,
    change_marks,
    choose_bucket,
    find_time_column,
    parse_times,
)
from relevancy.core.stats import bootstrap_ci
from relevancy.io import webhook
from relevancy.io.webhook import post_alert

from helpers import DEMO, T0, app, timed_run, visit


@pytest.mark.parametrize("module", [timeline, alerts, webhook])
def test_doctests(module):
    failed, tried = doctest.testmod(module)
    assert tried and not failed


# --- times and buckets -------------------------------------------------------------------------
def test_time_column_found_by_name():
    assert find_time_column(["question", "answer", "request_time"]) == "request_time"
    assert find_time_column(["startTime", "timestamp"]) == "startTime"  # the trace's start first
    assert find_time_column(["question", "answer"]) is None


def test_epoch_numbers_told_apart_by_magnitude_and_iso_text_with_or_without_zone():
    seconds = T0.timestamp()
    cells = [
        seconds,
        seconds * 1e3,
        int(seconds * 1e6),
        int(seconds) * 10**9,
        str(int(seconds)),
        "2026-12-06T09:00:00Z",
        "2026-12-06 09:00",  # no zone: UTC
        "2026-12-06T10:00:00+01:00",
        pd.Timestamp("2026-12-06 09:00"),
    ]
    parsed = parse_times(cells)
    assert parsed.bad == parsed.empty == 0
    assert set(parsed.values) == {pd.Timestamp(T0)}


def test_unparseable_cells_are_counted_and_said():
    parsed = parse_times(["2026-12-06T09:00Z", "yesterday", "", None, 42, True])
    assert parsed.empty == 2 and parsed.bad == 3  # 42 is too small to be a time; True no time
    assert parsed.values.isna().tolist() == [False, True, True, True, True, True]
    line = parsed.describe()
    assert "3 cell(s) are not times" in line and "'yesterday'" in line
    assert "2 row(s) have no time" in line


def test_bucket_chosen_from_the_span_and_the_rows():
    def every(minutes, hours):
        return [T0 + timedelta(minutes=m) for m in range(0, int(hours * 60), minutes)]

    assert choose_bucket(every(1, 5)) == "10min"  # 10 rows in 10 minutes
    assert choose_bucket(every(5, 5)) == "hour"  # 2 rows in 10 minutes: too few for a CI
    assert choose_bucket(every(5, 48)) == "hour"
    assert choose_bucket(every(60, 40 * 24)) == "day"
    assert choose_bucket([T0, T0 + timedelta(days=900)]) == "week"
    assert choose_bucket([T0, T0 + timedelta(hours=2)]) == "hour"  # few rows: an hour at least


def test_bucket_means_cis_failed_rows_and_groups():
    times = [T0 + timedelta(minutes=m) for m in (1, 5, 20, 40, 61, 62, 70)]
    scores = [0.9, 0.7, np.nan, 0.5, 0.2, 0.4, np.nan]
    table = bucket_table(times, scores, bucket="hour")
    assert table["start"].tolist() == [pd.Timestamp(T0), pd.Timestamp(T0 + timedelta(hours=1))]
    assert table["n"].tolist() == [4, 3] and table["failed"].tolist() == [1, 1]
    assert table["scored"].tolist() == [3, 2]
    assert table["mean"].round(6).tolist() == [0.7, 0.3]  # NaN left out of the mean
    assert (table["low"].iloc[0], table["high"].iloc[0]) == bootstrap_ci([0.9, 0.7, 0.5])
    grouped = bucket_table(times, scores, bucket="hour", groups=list("aabbaab"))
    first = grouped[grouped["group"] == "a"]
    assert first["n"].tolist() == [2, 2] and first["mean"].round(6).tolist() == [0.8, 0.3]


def test_week_buckets_start_on_monday():
    table = bucket_table([T0], [0.5], bucket="week")  # Sunday 2026-12-06
    assert table["start"].iloc[0] == pd.Timestamp("2026-11-30", tz="UTC")


def test_change_marks_the_first_time_a_new_model_or_prompt_appears():
    times = [T0 + timedelta(hours=h) for h in (3, 0, 1, 2, 4)]
    frame = pd.DataFrame(
        {
            "llm": ["b", "a", "a", "b", "a"],
            "prompt_version": ["v1"] * 4 + ["v2"],
            "x": list("xyzxy"),
        }
    )
    marks = change_marks(times, frame)
    assert marks[["column", "value", "previous"]].values.tolist() == [
        ["llm", "b", "a"],
        ["prompt_version", "v2", "v1"],
    ]
    assert marks["time"].tolist() == [
        pd.Timestamp(T0 + timedelta(hours=2)),
        T0 + timedelta(hours=4),
    ]


# --- alerts --------------------------------------------------------------------------------------
def test_change_marks_of_the_columns_asked_for_whatever_their_names():
    times = pd.to_datetime(["2026-01-01 09:00", "2026-01-01 10:00", "2026-01-01 11:00"], utc=True)
    frame = pd.DataFrame({"deploy": ["r1", "r2", "r2"], "model": ["a", "a", "b"]})
    by_name = change_marks(times, frame)  # "model" is a known name, "deploy" is not
    assert by_name[["column", "value"]].values.tolist() == [["model", "b"]]
    asked = change_marks(times, frame, columns=["deploy"])
    assert asked[["column", "value", "previous"]].values.tolist() == [["deploy", "r2", "r1"]]
    assert change_marks(times, frame, columns=[]).empty


def test_parse_window_and_aligned_windows():
    assert parse_window("30m") == timedelta(minutes=30)
    assert parse_window("1h") == timedelta(hours=1)
    assert parse_window(" 1d ") == timedelta(days=1)
    assert parse_window("2w") == timedelta(weeks=2)
    for bad in ("", "h", "1y", "-1h", "0m", "1 hour please"):
        with pytest.raises(InputError) as err:
            parse_window(bad)
        assert "\n" not in str(err.value) and "30m, 1h, 1d or 2w" in str(err.value)
    start, end = window_of(datetime(2026, 12, 6, 9, 59), timedelta(hours=1))  # naive: UTC
    assert (start, end) == (T0, T0 + timedelta(hours=1))


def _rows(start: datetime, scores: list[float]) -> tuple[list[datetime], list[float]]:
    step = timedelta(hours=1) / (len(scores) + 1)
    return [start + step * (i + 1) for i in range(len(scores))], scores


def test_too_few_rows_never_alert_and_say_how_many_are_needed():
    times, scores = _rows(T0, [0.1, 0.2, 0.1, np.nan])
    (check,) = check_windows(times, scores, below=0.6, window=timedelta(hours=1))
    assert (check.status, check.kind, check.n, check.n_failed) == ("too_few", "", 3, 1)
    assert check.needed == 10
    assert check.message.endswith("only 3 rows: 10 needed to tell")
    assert "2026-12-06 09:00-10:00 UTC" in check.message


def test_below_needs_the_ci_upper_bound_below_the_threshold():
    rng = np.random.default_rng(0)
    wide = list(np.clip(0.55 + rng.normal(0, 0.3, 12), 0, 1))  # mean under 0.6, CI reaches it
    narrow = [0.40, 0.42, 0.44, 0.38, 0.41, 0.43, 0.39, 0.40, 0.42, 0.41, 0.40, 0.44]
    # the narrow window first: a window after the wide one is judged with the wide one's spread
    t1, s1 = _rows(T0, narrow)
    t2, s2 = _rows(T0 + timedelta(hours=1), wide)
    second, first = check_windows(
        t1 + t2, s1 + s2, below=0.6, window=timedelta(hours=1), drop=False
    )
    assert first.mean < 0.6 <= first.high
    assert first.status == "too_few" and first.needed > first.n  # more rows would tell
    assert second.status == "alert" and second.kind == "below" and second.high < 0.6
    assert second.message == (
        f"relevancy {second.mean:.2f} (95% CI {second.low:.2f}-{second.high:.2f}, 12 rows) in "
        "2026-12-06 09:00-10:00 UTC is below 0.60"
    )
    assert json.loads(json.dumps(second.to_json()))["start"] == "2026-12-06T09:00:00+00:00"


def test_drop_against_the_previous_window_with_rows():
    high = [0.90, 0.92, 0.88, 0.91, 0.89, 0.90, 0.93, 0.87, 0.90, 0.91]
    low = [0.70, 0.72, 0.68, 0.71, 0.69, 0.70, 0.73, 0.67, 0.70, 0.71]
    same = [0.71, 0.69, 0.70, 0.72, 0.68, 0.70, 0.71, 0.69, 0.70, 0.70]
    t1, _ = _rows(T0, high)
    t2, _ = _rows(T0 + timedelta(hours=3), low)  # two empty windows between: skipped
    t3, _ = _rows(T0 + timedelta(hours=4), same)
    checks = check_windows(t1 + t2 + t3, high + low + same, below=0.5, window=timedelta(hours=1))
    assert [(c.status, c.kind) for c in checks] == [("ok", ""), ("alert", "drop"), ("ok", "")]
    assert "dropped from 0.90" in checks[1].message
    no_drop = check_windows(t1 + t2, high + low, below=0.5, window=timedelta(hours=1), drop=False)
    assert [c.status for c in no_drop] == ["ok", "ok"]


def test_until_keeps_complete_windows_only():
    times, scores = _rows(T0, [0.8] * 10)
    later, more = _rows(T0 + timedelta(hours=1), [0.8] * 10)
    until = T0 + timedelta(hours=1, minutes=30)
    checks = check_windows(
        times + later, scores + more, below=0.6, window=timedelta(hours=1), until=until
    )
    assert [c.start for c in checks] == [T0]


# --- the webhook ---------------------------------------------------------------------------------
class _Receiver(BaseHTTPRequestHandler):
    status = 200
    delay = 0.0
    bodies: list[dict] = []

    def do_POST(self):  # noqa: N802 (http.server's name)
        length = int(self.headers.get("Content-Length", 0))
        body = json.loads(self.rfile.read(length))
        self.server.bodies.append((self.path, self.headers.get("Content-Type"), body))
        if self.server.delay:
            self.server.release.wait(self.server.delay)
        try:
            self.send_response(self.server.status)
            self.end_headers()
            self.wfile.write(b"ok")
        except OSError:  # the client gave up waiting (the timeout test)
            pass

    def log_message(self, *args):
        pass


@pytest.fixture
def receiver() -> Iterator[ThreadingHTTPServer]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Receiver)
    server.bodies, server.status, server.delay = [], 200, 0.0
    server.release = threading.Event()
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield server
    server.release.set()
    server.shutdown()
    server.server_close()
    thread.join(5)


def _alert() -> WindowCheck:
    times, scores = _rows(T0, [0.40, 0.42, 0.44, 0.38, 0.41, 0.43, 0.39, 0.40, 0.42, 0.41])
    (check,) = check_windows(times, scores, below=0.6, window=timedelta(hours=1))
    assert check.status == "alert"
    return check


def test_webhook_posts_a_slack_compatible_body(receiver):
    url = f"http://127.0.0.1:{receiver.server_port}/services/T000/B000/SECRET"
    check = _alert()
    post_alert(url, check, run="#4 prod", timeout=5)
    ((path, kind, body),) = receiver.bodies
    assert path == "/services/T000/B000/SECRET" and kind == "application/json"
    assert body["text"] == f"{check.message} (run #4 prod)"
    assert body["relevancy"] == {**check.to_json(), "run": "#4 prod"}
    post_alert(url, {"message": "plain mapping", "n": 3}, run="r")
    assert receiver.bodies[-1][2]["relevancy"] == {"message": "plain mapping", "n": 3, "run": "r"}


@pytest.mark.parametrize("failure", ["status", "silence"])
def test_webhook_failures_are_one_line_without_the_url_path(receiver, failure):
    url = f"http://127.0.0.1:{receiver.server_port}/services/T000/B000/SECRET"
    if failure == "status":
        receiver.status = 500
    else:
        receiver.delay = 5.0
    with pytest.raises(InputError) as err:
        post_alert(url, _alert(), run="r", timeout=0.5)
    text = str(err.value)
    assert "\n" not in text and "SECRET" not in text and "services" not in text
    assert f"http://127.0.0.1:{receiver.server_port}" in text
    assert ("HTTP 500" in text) if failure == "status" else ("did not answer within 0.5 s" in text)


def test_webhook_refuses_other_schemes_and_unreachable_hosts():
    with pytest.raises(InputError, match="not an http"):
        post_alert("file:///etc/SECRET", {"message": "x"}, run="r")
    with pytest.raises(InputError) as err:  # a port nothing listens on
        post_alert("http://127.0.0.1:9/hook/SECRET", {"message": "x"}, run="r", timeout=2)
    assert "SECRET" not in str(err.value) and "could not be reached" in str(err.value)


# --- the Over time page under AppTest ------------------------------------------------------------
def _figure(at) -> dict:
    (chart,) = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    return chart


def _trace_values(v) -> list:
    if isinstance(v, dict) and "bdata" in v:
        import base64

        return np.frombuffer(base64.b64decode(v["bdata"]), dtype=v["dtype"]).tolist()
    return list(v)


def test_over_time_page_draws_the_store_buckets_opens_rows_and_alerts():
    from relevancy.paths import default_store_path
    from relevancy.runs import RunStore

    at = app(query={"run": str(DEMO)})
    visit(at, "7_Over_time.py")
    assert any("no time column" in i.value and "`start_time`" in i.value for i in at.info)
    assert not at.get("plotly_chart")

    store = RunStore(default_store_path())
    run_id, inputs, _ = timed_run(store)
    at.session_state["active_run"] = run_id
    visit(at, "7_Over_time.py")
    assert at.selectbox(key=f"ot_time_{run_id}").value == "start_time"
    # just written, not followed: refreshed while it changes, and said so (not "following")
    assert any("This run changed in the last 5 minutes" in c.value for c in at.caption)
    assert not any("Following" in c.value for c in at.caption)
    captions = [re.sub(r"\\(.)", r"\1", c.value) for c in at.caption]  # markdown escapes off
    assert any("1 cell(s) are not times (such as 'n/a')" in c for c in captions)
    assert any("24 rows from 2026-12-06 09:02 to 11:37 UTC, per hour" in c for c in captions)

    spec = _figure(at)
    stored = store.columns(run_id, ["score"])["score"].to_numpy()[:24]  # the timed rows, in order
    per_hour = stored.reshape(3, 8)
    traces = {t.get("name"): t for t in spec["data"]}
    assert _trace_values(traces["rows"]["y"]) == [8, 8, 8]
    means = _trace_values(traces["mean score"]["y"])
    assert np.allclose(means, per_hour.mean(axis=1))
    assert means[2] < 0.6 < min(means[:2])
    notes = [a["text"] for a in spec["layout"].get("annotations", [])]
    assert "prompt_version: v2" in notes
    # which columns mark a change is the user's to pick (found by name at first)
    marked = at.multiselect(key=f"ot_marks_{run_id}")
    assert marked.value == ["llm", "prompt_version"]
    marked.set_value([]).run()
    assert "prompt_version: v2" not in [
        a["text"] for a in _figure(at)["layout"].get("annotations", [])
    ]
    at.multiselect(key=f"ot_marks_{run_id}").set_value(["prompt_version"]).run()
    assert "prompt_version: v2" in [a["text"] for a in _figure(at)["layout"]["annotations"]]
    assert any(
        "the first row of a new value of prompt_version" in re.sub(r"\\(.)", r"\1", c.value)
        for c in at.caption
    )

    at.selectbox(key="ot_bucket_rows").set_value(pd.Timestamp(T0 + timedelta(hours=2))).run()
    rows = next(d.value for d in at.dataframe if "drill-down" in d.value.columns)
    assert len(rows) == 8 and set(rows["reason"]) <= set(store.counts(run_id))
    assert rows["question"].iloc[0] == inputs["user_input"].iloc[16]
    assert np.allclose(rows["score"], per_hour[2])
    assert rows["drill-down"].iloc[0] == f"Dataset?run={run_id}&row=17"

    at.toggle(key="ot_alerts").set_value(True).run()
    at.number_input(key="ot_below").set_value(0.6).run()
    assert any(
        "3 window(s) have too few rows to tell (fewer than 10" in c.value for c in at.caption
    )
    at.number_input(key="ot_min_rows").set_value(5).run()
    alerts = next(d.value for d in at.dataframe if "kind" in d.value.columns)
    assert alerts["window"].tolist() == ["2026-12-06 11:00-12:00 UTC"] and alerts[
        "kind"
    ].tolist() == ["below"]


def test_chat_records_keep_their_time_as_the_other_importers_do():
    from relevancy.io.importers.openai_chat import openai_chat
    from relevancy.io.importers.report import ImportReport

    messages = [{"role": "user", "content": "Where?"}, {"role": "assistant", "content": "Here."}]
    frame = openai_chat([{"messages": messages, "created": int(T0.timestamp())}], ImportReport())
    assert frame["created"].tolist() == ["2026-12-06T09:00:00+00:00"]
    assert find_time_column(frame.columns) == "created"
    assert parse_times(frame["created"]).values.tolist() == [pd.Timestamp(T0)]


def test_a_column_of_times_is_read_as_each_cell_alone_would_be():
    """parse_times reads ISO text on the column at once and the rest cell by cell: every cell
    gets the time _one gives it alone (epoch numbers as text or numbers, offsets, other formats,
    junk, blanks), and the empty and bad cells are counted the same."""
    import numpy as np
    import pandas as pd

    from relevancy.analysis.timeline import _is_empty, _one, parse_times

    cells = [
        "2026-01-05T10:00:00Z",
        "2026-01-05 10:00+01:00",
        " 2026-01-05T10:00:00.250 ",
        "2026-01-05",
        "1767607200000",
        1767607200,
        1767607200.5,
        None,
        "  ",
        "junk",
        "Jan 5, 2026 10:00",
        "2026-13-45 99:99",
        True,
        np.nan,
        pd.Timestamp("2026-01-01"),
        "20260105",
    ] * 3
    got = parse_times(cells)
    alone = [None if _is_empty(c) else _one(c) for c in cells]
    assert [None if pd.isna(v) else v for v in got.values] == alone
    assert got.empty == sum(_is_empty(c) for c in cells)
    assert got.bad == sum(not _is_empty(c) and _one(c) is None for c in cells)


def test_change_marks_keep_time_order_when_some_rows_have_no_time():
    """A row without a time is left out and the others are taken in time order (the times were
    sorted as objects before, and a missing one scrambled the order: a mark at 08:00 said the
    model changed from the one first seen at 10:00)."""
    import pandas as pd

    from relevancy.analysis.timeline import change_marks

    times = pd.to_datetime(
        ["2026-01-01 09:00", "2026-01-01 10:00", None, "2026-01-01 08:00", "2026-01-01 13:00"],
        utc=True,
    )
    frame = pd.DataFrame({"model": [None, "m", "x", "n", "o"], "llm": ["a", "a", "b", " ", 1]})
    marks = change_marks(times, frame)
    assert marks[["column", "value", "previous"]].values.tolist() == [
        ["model", "m", "n"],
        ["model", "o", "m"],
        ["llm", "1", "a"],
    ]
    assert [t.hour for t in marks["time"]] == [10, 13, 13]


def test_only_a_followed_run_says_it_is_followed(tmp_path):
    from relevancy.dashboard.widgets.timeline_panel import live_caption, live_interval
    from relevancy.runs import RunStore

    store = RunStore(tmp_path / "runs.sqlite3")
    follow = {"follow": {"source": "http://127.0.0.1:1/v1/traces", "interval": 3}}
    followed, _, _ = timed_run(store, settings=follow, scored=8)
    saved, _, _ = timed_run(store, scored=8)  # a CLI run just saved
    info = store.get_run(followed)
    assert live_interval(store, info) is None  # no follower holds it: not refreshed
    assert live_caption(info, None).startswith("⏸️ This run follows a source, but its follower")
    lease = store.take_follow_lease(followed, ttl=300)
    assert live_interval(store, info) == 3
    assert live_caption(info, 3).startswith("🔴 Following this run")
    store.drop_follow_lease(lease)
    assert live_interval(store, info) is None
    info = store.get_run(saved)
    assert live_interval(store, info) == 10
    assert live_caption(info, 10).startswith("🟠 This run changed in the last 5 minutes")


def _lease(store, run_id: int, *, host: str, pid: int, started: str, beat: float) -> None:
    import sqlite3

    with sqlite3.connect(store.path) as db:
        db.execute(
            "INSERT OR REPLACE INTO follow_lease VALUES (?, ?, ?, ?, 'token', ?, ?, 300.0)",
            (run_id, host, pid, started, "2026-01-01T00:00:00+00:00", beat),
        )


def test_follow_status_is_the_lease_alive_here_or_its_heartbeat_elsewhere(tmp_path):
    """One notion of "followed now": on this host the follower's process decides (a killed
    follower's fresh heartbeat does not keep the run followed); elsewhere its heartbeat."""
    import os
    import socket
    import subprocess
    import sys
    import time

    from relevancy.runs import RunStore

    store = RunStore(tmp_path / "runs.sqlite3")
    run_id, _, _ = timed_run(store, scored=8)
    assert store.follow_status(run_id) is False
    here, now = socket.gethostname(), time.time()
    lease = store.take_follow_lease(run_id, ttl=300)
    assert store.follow_status(run_id) is True
    store.drop_follow_lease(lease)
    assert store.follow_status(run_id) is False
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    )
    _lease(store, run_id, host=here, pid=int(gone.stdout), started="1", beat=now)
    assert store.follow_status(run_id) is False  # killed: its heartbeat is fresh, it is gone
    _lease(store, run_id, host=here, pid=os.getpid(), started="1", beat=now)
    assert store.follow_status(run_id) is False  # its pid now names another process
    _lease(store, run_id, host="elsewhere.example", pid=1, started="", beat=now - 10)
    assert store.follow_status(run_id) is True
    _lease(store, run_id, host="elsewhere.example", pid=1, started="", beat=now - 301)
    assert store.follow_status(run_id) is False


def test_over_time_and_dataset_agree_whether_the_follower_runs():
    """Over time said "Following this run... every 2 s" and kept refreshing after the follower
    stopped, while the Dataset page said it was not running: both read the follower's lease."""
    from datetime import timezone as tz

    from relevancy.paths import default_store_path
    from relevancy.runs import RunStore

    store = RunStore(default_store_path())
    _, inputs, results = timed_run(store)
    source = "http://127.0.0.1:1/v1/traces"
    follow = {"follow": {"source": source, "interval": 2}, "backend": "embedded"}
    run_id = store.create_followed_run("followed timed run", follow, source)
    now = datetime.now(tz.utc)
    keys = [f"span-{i}" for i in range(len(inputs))]
    rows = store.add_followed(run_id, inputs, keys, [now.timestamp()] * len(inputs), read_to=now)
    store.append_results(run_id, list(zip(rows, results)))
    lease = store.take_follow_lease(run_id, ttl=300)

    at = app(query={"run": str(run_id)})
    visit(at, "7_Over_time.py")
    assert any("Following this run" in c.value and "every 2 s" in c.value for c in at.caption)
    visit(at, "1_Dataset.py")
    assert any("new rows appear here" in i.value for i in at.info)

    store.drop_follow_lease(lease)  # the follower stops
    visit(at, "7_Over_time.py")
    assert not any("Following" in c.value for c in at.caption)
    assert any("its follower is not running" in c.value for c in at.caption)
    assert at.get("plotly_chart")  # the chart of the rows saved so far
    visit(at, "1_Dataset.py")
    assert any("Its follower is not running" in i.value for i in at.info)
