"""Bad option values and a store that cannot be written: one line on stderr saying what to fix,
exit 2 for an option (1 for trouble at run time), never a traceback, and no run left behind
(issue 44, items 8 and 9)."""

from __future__ import annotations

import argparse
import contextlib
import os
import sqlite3
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from relevancy.analysis import alerts
from relevancy.analysis.alerts import check_windows, parse_window, window_of
from relevancy.cli import main, make_parser
from relevancy.errors import InputError
from relevancy.io.webhook import check_webhook_url, webhook_host
from relevancy.runs import RunStore

from helpers import cli_backends

#: every numeric option is tried with each of these
VALUES = ("nan", "inf", "-1", "0", "1e308", "many")
#: values no numeric option takes
NEVER = ("nan", "inf", "many")
#: the types of relevancy.cli._values that check a value
CHECKED = ("number", "whole", "span", "when")
#: a live source on a port nobody listens on (nothing is read: the command stops before)
DEAD = "phoenix://127.0.0.1:9/p"

#: each command, and the rest of a command line that fails cheaply, in one line, once the
#: options are through: --follow with --once; two files that are not there
AFTER = {
    "score": ["--from", DEAD, "--follow", "--once"],
    "compare": ["no-such-base.csv", "no-such-new.csv"],
    "export": ["1", "out.csv"],
}


def _subparser(command: str) -> argparse.ArgumentParser:
    parser = make_parser(command)
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return sub.choices[command]


def _is_numeric(action: argparse.Action) -> bool:
    """An option that takes a number, or a span or time written with one (``10m``)."""
    if not action.option_strings or action.nargs == 0:
        return False
    kind = action.type
    if kind in (int, float) or getattr(kind, "__name__", "") in CHECKED:
        return True
    default = action.default
    if isinstance(default, (int, float)) and not isinstance(default, bool):
        return True
    return isinstance(default, str) and default[:1].isdigit()


def _numeric_options() -> list[tuple[str, str]]:
    found = []
    for command in AFTER:
        for action in _subparser(command)._actions:
            if _is_numeric(action):
                found.append((command, max(action.option_strings, key=len)))
    return found


OPTIONS = _numeric_options()


def test_the_sweep_finds_the_options_it_should():
    names = {option for _, option in OPTIONS}
    # the follower's, the backends', score's own and compare's
    assert {"--poll", "--window", "--late", "--alert-below", "--min-rows"} <= names
    assert {"--seed", "--timeout", "--strictness", "--threshold", "--repeats"} <= names
    assert {("compare", "--tie-margin"), ("compare", "--fail-on-regression")} <= set(OPTIONS)
    # every one is checked by the parser: none is a bare int or float
    for command, option in OPTIONS:
        (action,) = [a for a in _subparser(command)._actions if option in a.option_strings]
        assert getattr(action.type, "__name__", "") in CHECKED, (command, option, action.type)


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str]]:
    code = main(argv)
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err + captured.out
    return code, [line for line in captured.err.splitlines() if line.strip()]


def _stopped(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str]]:
    """``relevancy score``'s exit code and its error lines: the input and estimate lines come
    first; the error must be one line, and the last."""
    code, err = _run(argv, capsys)
    said = [line for line in err if line.startswith("error")]
    assert said and said == err[-1:], err
    return code, said


@pytest.mark.parametrize("value", VALUES)
@pytest.mark.parametrize("command, option", OPTIONS, ids=" ".join)
def test_every_numeric_option_takes_a_bad_value_in_one_line(
    command, option, value, tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)  # export's out.csv, if it ever got that far
    argv = [command, f"{option}={value}", *AFTER[command]]
    if command == "export":
        argv += ["--store", str(tmp_path / "none" / "runs.sqlite3")]
    code, err = _run(argv, capsys)
    assert code == 2 and len(err) == 1, err
    refused = f"argument {option}" in err[0]
    if refused:  # by the parser: the value quoted, what to give said, one line
        assert err[0].startswith(f"relevancy {command}: error: argument {option}: {value!r} ")
        assert f"relevancy {command} --help" in err[0]
    else:  # a value the option takes: the command went on, to its own one-line stop
        assert value not in NEVER, err
        assert err[0].startswith("error: "), err


@pytest.mark.parametrize("value", VALUES)
def test_a_run_named_like_a_number_is_looked_up_in_one_line(value, tmp_path, capsys):
    store = tmp_path / "runs.sqlite3"
    RunStore(store)
    code, err = _run(["export", value, str(tmp_path / "o.csv"), "--store", str(store)], capsys)
    assert code == 2 and len(err) == 1 and f"no run {value!r} in {store}" in err[0], err


def test_a_bad_value_is_one_line_from_the_shell_too(tmp_path):
    for argv in (["score", "--poll", "nan"], ["score", "--window", "99999999999999d"]):
        proc = subprocess.run(
            [sys.executable, "-m", "relevancy.cli", *argv, "--from", DEAD, "--once"],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=tmp_path,
        )
        assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1, proc.stderr
        assert "Traceback" not in proc.stderr and argv[1] in proc.stderr


# --- spans and their labels ---------------------------------------------------------------------
def test_windows_are_refused_beyond_a_year_or_under_a_second():
    assert parse_window("366d") == timedelta(days=366)
    assert parse_window("1s") == timedelta(seconds=1)
    assert parse_window("1.5h") == timedelta(minutes=90)
    for bad in ("99999999999999d", "367d", "53w", "0.5s", "1" * 400 + "d"):
        with pytest.raises(InputError, match="is not a window: give one from 1s to 366d") as exc:
            parse_window(bad)
        assert "\n" not in str(exc.value)


def test_since_and_until_are_parsed_by_the_cli_not_an_importer():
    """``parse_when`` is the CLI's (``cli/_values.py``, standard library only); the Phoenix
    importer, which only fetches spans, no longer holds it (issue 46)."""
    from relevancy.cli import _values
    from relevancy.io.importers import phoenix_server

    assert not hasattr(phoenix_server, "parse_when")
    now = datetime(2026, 6, 1, 12, 0, tzinfo=timezone.utc)
    assert _values.parse_when("90m", now=now) == now - timedelta(minutes=90)
    assert _values.parse_when(" 2w ", now=now) == now - timedelta(weeks=2)
    assert _values.parse_when("2026-05-01", now=now) == datetime(2026, 5, 1, tzinfo=timezone.utc)
    assert _values.parse_when("2026-05-01T08:00Z") == datetime(2026, 5, 1, 8, tzinfo=timezone.utc)
    plus2 = _values.parse_when("2026-05-01T08:00+02:00")
    assert plus2 is not None and plus2.utcoffset() == timedelta(hours=2)
    assert _values.parse_when(None) is None and _values.parse_when("  ") is None
    with pytest.raises(InputError, match="'yesterday' is not a time"):
        _values.parse_when("yesterday")


def test_a_window_under_a_minute_is_labelled_with_seconds():
    start, end = window_of(datetime(2026, 12, 6, 5, 51, 40), timedelta(seconds=30))
    assert alerts._span(start, end) == "2026-12-06 05:51:30-05:52:00 UTC"
    start, end = window_of(datetime(2026, 12, 6, 5, 51, 10), timedelta(seconds=30))
    assert alerts._span(start, end) == "2026-12-06 05:51:00-05:51:30 UTC"
    start, end = window_of(datetime(2026, 12, 6, 23, 59, 50), timedelta(seconds=30))
    assert alerts._span(start, end) == "2026-12-06 23:59:30-24:00:00 UTC"
    # whole minutes keep the short label
    start, end = window_of(datetime(2026, 12, 6, 9, 41), timedelta(hours=1))
    assert alerts._span(start, end) == "2026-12-06 09:00-10:00 UTC"
    start, end = window_of(datetime(2026, 12, 6, 23, 41), timedelta(minutes=30))
    assert alerts._span(start, end) == "2026-12-06 23:30-24:00 UTC"
    # and the checks say it: two 30 s windows in one minute are told apart
    times = [datetime(2026, 12, 6, 5, 51, s) for s in (1, 2, 3, 31, 32, 33)]
    checks = check_windows(times, [0.9] * 6, below=0.5, window=parse_window("30s"), min_rows=2)
    said = " ".join(c.message for c in checks)
    assert "05:51:00-05:51:30 UTC" in said and "05:51:30-05:52:00 UTC" in said, said


# --- the alert webhook ----------------------------------------------------------------------------
BAD_HOOKS = {
    "http://[::1/services/SECRETPATH": "is not a URL",
    "http://127.0.0.1:99999/services/SECRETPATH": "has a port that is not a number",
    "ftp://files.example.com/SECRETPATH": "is not an http(s) URL",
    "https:///SECRETPATH": "names no host",
    "": "is empty",
}


def _no_runs(store: Path) -> bool:
    return not store.exists() or RunStore(store).list_runs() == []


@pytest.mark.parametrize(
    "url, says, where",
    [
        (url, says, where)
        for url, says in BAD_HOOKS.items()
        for where in ("option", "environment")
        if url or where == "option"  # an empty RELEVANCY_ALERT_WEBHOOK is no webhook
    ],
)
def test_a_bad_webhook_stops_the_start_in_one_line(url, says, where, tmp_path, monkeypatch, capsys):
    store = tmp_path / "runs.sqlite3"
    argv = ["score", "--from", DEAD, "--once", "--store", str(store), "--alert-below", "0.5"]
    if where == "option":
        argv += ["--alert-webhook", url]
    else:
        monkeypatch.setenv("RELEVANCY_ALERT_WEBHOOK", url)
    code, err = _run(argv, capsys)
    assert code == 2 and len(err) == 1, err
    named = "--alert-webhook" if where == "option" else "RELEVANCY_ALERT_WEBHOOK"
    assert err[0].startswith(f"error: {named}: the alert webhook") and says in err[0], err
    assert "SECRETPATH" not in err[0]
    assert _no_runs(store)


def test_webhook_urls_are_checked_and_shown_without_their_secret():
    url = " https://user:pw@hooks.example.com:8443/services/T0/B0/SECRET "
    assert check_webhook_url(url) == url.strip()
    assert webhook_host(url) == "https://hooks.example.com:8443"
    assert webhook_host("http://[::1]:8080/SECRET") == "http://[::1]:8080"
    assert webhook_host("http://[::1/SECRET") == "http://?"
    assert webhook_host("http://127.0.0.1:99999/SECRET") == "http://127.0.0.1:?"
    for bad in BAD_HOOKS:
        with pytest.raises(InputError) as exc:
            check_webhook_url(bad)
        assert "SECRET" not in str(exc.value)
    with pytest.raises(InputError, match="port that is not a number"):
        check_webhook_url("http://h:0/x")


# --- a run store that cannot be written ---------------------------------------------------------
@pytest.fixture
def pairs(tmp_path: Path) -> Path:
    path = tmp_path / "pairs.csv"
    path.write_text("question,answer\nWhat is 2+2?,4\nWhere is Paris?,In France\n")
    return path


def _score_into(store: Path | str, pairs: Path, srv, tmp_path: Path) -> list[str]:
    out = tmp_path / "o.csv"
    return ["score", str(pairs), "-o", str(out), "--save-run", "x", "--store", str(store)] + (
        cli_backends(srv, "-q", "--no-cache")
    )


def test_a_store_whose_folder_is_a_file_is_one_line(pairs, tmp_path, toy_server, capsys):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    code, err = _stopped(_score_into(blocker / "runs.sqlite3", pairs, toy_server, tmp_path), capsys)
    assert code == 2 and len(err) == 1 and str(blocker) in err[0], err


def test_a_store_under_proc_is_one_line(pairs, tmp_path, toy_server, capsys):
    """Where even root cannot make a folder."""
    if not Path("/proc/self").exists():
        pytest.skip("no /proc here")
    store = "/proc/relevancy-no-such/runs.sqlite3"
    code, err = _stopped(_score_into(store, pairs, toy_server, tmp_path), capsys)
    assert code == 2 and len(err) == 1 and "/proc/relevancy-no-such" in err[0], err


@contextlib.contextmanager
def _tmpfs(path: Path, size: str):
    """A small tmpfs at ``path`` (root only); skips the test where mounting is not allowed."""
    path.mkdir()
    made = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
        capture_output=True,
        text=True,
    )
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {made.stderr.strip()[:100]}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], capture_output=True)


def test_a_read_only_store_is_one_line(pairs, tmp_path, toy_server, capsys):
    with _tmpfs(tmp_path / "ro", "4m") as disk:
        store = disk / "runs.sqlite3"
        RunStore(store)
        subprocess.run(["mount", "-o", "remount,ro", str(disk)], check=True)
        code, err = _stopped(_score_into(store, pairs, toy_server, tmp_path), capsys)
        assert code == 2 and len(err) == 1, err
        assert str(disk) in err[0] and "--store" in err[0], err


def test_a_full_disk_is_one_line_and_leaves_no_run(pairs, tmp_path, toy_server, capsys):
    with _tmpfs(tmp_path / "full", "2m") as disk:
        store = disk / "runs.sqlite3"
        RunStore(store)
        with contextlib.suppress(OSError), open(disk / "filler", "wb") as fh:
            while True:
                fh.write(b"\0" * 16384)
                fh.flush()
        big = tmp_path / "big.csv"
        big.write_text("question,answer\n" + "".join(f"q{i}?,{'a' * 400}\n" for i in range(3000)))
        code, err = _stopped(_score_into(store, big, toy_server, tmp_path), capsys)
        assert code == 1 and len(err) == 1, err
        assert f"the disk holding the run store {store} is full" in err[0], err
        (disk / "filler").unlink()
        assert _no_runs(store)


LOCKER = """
import sqlite3, sys, time
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("BEGIN IMMEDIATE")
db.execute("UPDATE runs SET name = name")
print("locked", flush=True)
time.sleep(60)
"""


def test_a_store_locked_by_another_writer_is_one_line(
    pairs, tmp_path, toy_server, monkeypatch, capsys
):
    store = tmp_path / "runs.sqlite3"
    RunStore(store)
    monkeypatch.setenv("RELEVANCY_STORE_WAIT", "0.5")
    with subprocess.Popen(
        [sys.executable, "-c", LOCKER, str(store)], stdout=subprocess.PIPE, text=True
    ) as locker:
        try:
            assert locker.stdout.readline().strip() == "locked"
            started = time.monotonic()
            code, err = _stopped(_score_into(store, pairs, toy_server, tmp_path), capsys)
            waited = time.monotonic() - started
        finally:
            locker.kill()
    assert code == 1 and len(err) == 1, err
    assert f"the run store {store} is locked by another process" in err[0]
    assert "(waited 0.5 s)" in err[0] and "RELEVANCY_STORE_WAIT" in err[0]
    assert waited < 30
    assert _no_runs(store)


@pytest.mark.parametrize("wait", ["nan", "-1", "soon", "1e9"])
def test_a_bad_store_wait_is_one_line(wait, tmp_path, monkeypatch, capsys):
    store = tmp_path / "runs.sqlite3"
    sqlite3.connect(store).close()
    monkeypatch.setenv("RELEVANCY_STORE_WAIT", wait)
    code, err = _run(["export", "1", str(tmp_path / "o.csv"), "--store", str(store)], capsys)
    assert code == 2 and len(err) == 1 and f"RELEVANCY_STORE_WAIT is {wait!r}" in err[0], err


def test_no_store_error_shows_a_secret(tmp_path, monkeypatch, capsys):
    """A store path is shown; a key in the environment is not (an error that names a URL)."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-SECRETSECRET")
    store = tmp_path / "runs.sqlite3"
    store.write_text("this is not a database" * 100)
    code, err = _run(["export", "1", str(tmp_path / "o.csv"), "--store", str(store)], capsys)
    assert code == 2 and len(err) == 1 and str(store) in err[0], err
    assert "SECRETSECRET" not in err[0]
    assert os.environ["OPENAI_API_KEY"]  # untouched
