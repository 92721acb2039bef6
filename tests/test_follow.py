"""``relevancy score --from ... --follow`` / ``--once`` against the real tools: a real Phoenix
server that receives new OpenInference spans while the follower runs (made by the real OpenAI
SDK, instrumented, talking to the toy server), a real MLflow store receiving new traces; the
follower SIGKILLed and restarted, the source killed and restarted, spans the source stores late,
alerts posted to a webhook received by a local HTTP server."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import warnings
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from types import SimpleNamespace

import openai
import pandas as pd
import pytest

from relevancy.cli import main
from relevancy.errors import InputError
from relevancy.io.importers.live import open_live_source, parse_mlflow_url
from relevancy.runs import RunStore
from relevancy.testing.openai_server import OpenAICompatServer
from relevancy.testing.tool_servers import PhoenixServer, phoenix_executable

from helpers import cli_backends, skip_or_fail

PROJECT = "live-support"
QUESTIONS = [
    "What is the capital of France?",
    "How tall is Mount Everest?",
    "Who wrote Hamlet?",
    "When did the Berlin Wall fall?",
    "What is the boiling point of water?",
    "How many legs does a spider have?",
    "What is the largest ocean?",
    "Who painted the Mona Lisa?",
    "What is the speed of light?",
    "Which planet is the red one?",
    "What language is spoken in Brazil?",
    "How long is a marathon?",
]


# --- the app that makes the spans -------------------------------------------------------------
def emit_spans(
    collector: str,
    app: OpenAICompatServer,
    questions,
    *,
    late_s: float = 0.0,
    project: str = PROJECT,
):
    """The OpenAI SDK, instrumented by OpenInference, asks the toy app ``questions``; each call
    is a root span sent to Phoenix. With ``late_s``, one more root span that started that many
    seconds ago is sent now (as a long request, or a span the collector passed on late)."""
    from openinference.instrumentation.openai import OpenAIInstrumentor
    from phoenix.otel import register

    provider = register(
        endpoint=collector,
        project_name=project,
        batch=False,
        set_global_tracer_provider=False,
        verbose=False,
    )
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        client = openai.OpenAI(base_url=app.base_url, api_key="sk-toy", max_retries=0)
        for q in questions:
            client.chat.completions.create(
                model="toy-chat", messages=[{"role": "user", "content": q}]
            )
        if late_s:
            span = provider.get_tracer(__name__).start_span(
                "slow answer",
                start_time=time.time_ns() - int(late_s * 1e9),
                attributes={
                    "openinference.span.kind": "CHAIN",
                    "input.value": "Where is the Eiffel Tower?",
                    "output.value": "The Eiffel Tower is in Paris, on the Champ de Mars.",
                },
            )
            span.end()
        provider.force_flush()
    finally:
        instrumentor.uninstrument()
        provider.shutdown()


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory):
    try:
        from phoenix.client import Client
    except ImportError as exc:
        skip_or_fail(f"Phoenix's client is not installed ({exc}): bash scripts/setup.sh dev")
    if phoenix_executable() is None:
        skip_or_fail("no Phoenix server (.venv-phoenix): bash scripts/setup.sh dev")
    with (
        OpenAICompatServer(text_mode="lines") as app,
        PhoenixServer(tmp_path_factory.mktemp("phoenix")) as server,
    ):
        yield SimpleNamespace(server=server, app=app, client=Client(base_url=server.base_url))


def follower(args, env):
    return subprocess.Popen(
        [sys.executable, "-m", "relevancy.cli", "score", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


class Lines:
    """A process's output read in a thread, so the test can wait for a line."""

    def __init__(self, proc: subprocess.Popen) -> None:
        self.lines: list[str] = []
        self.thread = threading.Thread(target=self._read, args=(proc,), daemon=True)
        self.thread.start()

    def _read(self, proc) -> None:
        for line in proc.stdout:
            self.lines.append(line.rstrip("\n"))

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


def ended(proc: subprocess.Popen, out: Lines) -> None:
    """The process gone (killed if it still runs), its output read to the end and closed."""
    if proc.poll() is None:
        proc.kill()
    proc.wait(30)
    out.thread.join(10)
    proc.stdout.close()


def wait_for(test, what: str, timeout: float = 90.0, output: Lines | None = None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = test()
        if found:
            return found
        time.sleep(0.2)
    raise AssertionError(
        f"waited {timeout:g} s for {what}" + (f":\n{output.text}" if output else "")
    )


def spans_in(phoenix, project: str, since: float | None = None) -> int:
    """The spans Phoenix has stored in ``project`` (started from ``since``, epoch seconds, if
    given). It stores what its collector receives asynchronously: a test waits on this, not on a
    pause, before a command reads them."""
    from datetime import datetime, timezone

    start = None if since is None else datetime.fromtimestamp(since, tz=timezone.utc)
    try:
        frame = phoenix.client.spans.get_spans_dataframe(
            project_identifier=project, start_time=start, limit=1000
        )
    except Exception:  # noqa: BLE001 - no such project yet: nothing stored
        return 0
    return len(frame)


def progress(store_path: Path):
    """(rows, scored, sent to phoenix) of the one followed run, read as the dashboard would."""
    store = RunStore(store_path)
    runs = store.list_runs()
    if not runs:
        return 0, 0, 0
    run = runs[0]
    sent = store.sent_counts(run.id).get("phoenix", {}).get("ok", 0)
    return run.n_rows, run.n_scored, sent


def annotations(phoenix, span_ids):
    found = phoenix.client.spans.get_span_annotations(
        span_ids=list(span_ids),
        project_identifier=PROJECT,
        include_annotation_names=["answer_relevancy"],
    )
    return found


@pytest.mark.phoenix_server
@pytest.mark.slow
def test_followed_spans_are_scored_and_annotated_once_through_kills_and_an_outage(
    phoenix, tmp_path
):
    store_path = tmp_path / "runs.sqlite3"
    url = f"phoenix://127.0.0.1:{phoenix.server.port}/{PROJECT}"
    env = {**os.environ, "RELEVANCY_CACHE_DIR": str(tmp_path / "cache")}
    # the judge answers slowly, so that a kill lands in the middle of scoring
    with OpenAICompatServer(latency=0.4) as judge:
        args = [
            "--from",
            url,
            "--follow",
            "--poll",
            "0.5",
            "--late",
            "5m",
            "--to-phoenix",
            "--store",
            str(store_path),
            "--save-run",
            "live",
            *cli_backends(judge, "-q", "--concurrency", "2"),
        ]
        first = follower(args, env)
        out = Lines(first)
        try:
            wait_for(lambda: "following" in out.text, "the follower to start", output=out)
            emit_spans(phoenix.server.collector, phoenix.app, QUESTIONS[:3])
            wait_for(lambda: progress(store_path)[2] == 3, "3 annotations", output=out)
            # six more arrive; the follower is killed while it scores them
            emit_spans(phoenix.server.collector, phoenix.app, QUESTIONS[3:9])
            wait_for(lambda: progress(store_path)[1] >= 4, "a 4th row scored", output=out)
            first.send_signal(signal.SIGKILL)
            first.wait(30)
        finally:
            ended(first, out)
        rows, scored, _ = progress(store_path)
        assert scored < 9, "the kill came after every row was scored: slow the judge down"
        # started again: it goes on; a span that started 2 minutes ago arrives now (late)
        again = follower(args, env)
        out = Lines(again)
        try:
            wait_for(lambda: "goes on" in out.text, "the follower to go on", output=out)
            emit_spans(phoenix.server.collector, phoenix.app, [], late_s=120)
            wait_for(lambda: progress(store_path)[2] == 10, "10 annotations", output=out)
            # found by the look back, and told apart: said when the step ends, after the
            # annotations are stored, so wait for the line itself
            wait_for(lambda: "(1 late)" in out.text, "the late span to be said", output=out)
            # the source goes away; the follower waits, says so once, and goes on when it is back
            phoenix.server.process.stop()
            wait_for(lambda: "did not answer" in out.text, "the outage to be said", output=out)
            time.sleep(3)
            phoenix.server.process.start()
            emit_spans(phoenix.server.collector, phoenix.app, QUESTIONS[9:12])
            wait_for(lambda: progress(store_path)[2] == 13, "13 annotations", output=out)
            wait_for(lambda: "answers again" in out.text, "the source to be back", output=out)
            again.send_signal(signal.SIGTERM)  # systemd's stop: the step ends, then the process
            assert again.wait(60) == 0
        finally:
            ended(again, out)
    text = out.text
    assert text.count("did not answer") == 1, text  # said once, however long it lasted
    assert "followed" in text and "the same command goes on from here" in text
    # exactly once: one row per span, one annotation per span, each the stored score
    store = RunStore(store_path)
    (run,) = store.list_runs()
    frame = store.export_frame(run.id)
    assert len(frame) == run.n_rows == run.n_scored == 13
    assert frame["span_id"].is_unique
    assert run.settings["follow"]["source"] == url
    found = annotations(phoenix, frame["span_id"])
    ours = [a for a in found if a["identifier"] == "relevancy"]
    assert len(ours) == 13 and {a["span_id"] for a in ours} == set(frame["span_id"])
    by_span = frame.set_index("span_id")["score"]
    for a in ours:
        assert a["result"]["score"] == pytest.approx(by_span[a["span_id"]])
    assert "The Eiffel Tower is in Paris" in " ".join(frame["response"])


# --- --once: cron and CI, alerts and the webhook -----------------------------------------------
class Hook(BaseHTTPRequestHandler):
    received: list = []

    def do_POST(self):  # noqa: N802 - http.server's name
        body = self.rfile.read(int(self.headers["Content-Length"]))
        Hook.received.append(json.loads(body))
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args):
        pass


@pytest.fixture
def webhook():
    Hook.received = []
    server = HTTPServer(("127.0.0.1", 0), Hook)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield SimpleNamespace(
        url=f"http://127.0.0.1:{server.server_port}/services/T0/B0/SECRETPATH",
        received=Hook.received,
    )
    server.shutdown()
    server.server_close()


@pytest.mark.phoenix_server
def test_once_alerts_on_a_low_window_posts_it_and_exits_1_then_stays_quiet(
    phoenix, tmp_path, capsys, webhook, toy_server
):
    store_path = tmp_path / "runs.sqlite3"
    url = f"phoenix://127.0.0.1:{phoenix.server.port}/{PROJECT}"
    # a fresh 20-second window, with eight spans in it
    while time.time() % 20 > 4:
        time.sleep(0.2)
    start = time.time()
    emit_spans(phoenix.server.collector, phoenix.app, QUESTIONS[:8])
    assert time.time() - start < 14, "the spans took too long to send to share a window"
    wait_for(lambda: spans_in(phoenix, PROJECT, since=start - 1) >= 8, "Phoenix to store 8 spans")
    time.sleep(20 - time.time() % 20 + 0.5)  # the window is over
    args = [
        "score",
        "--from",
        url,
        "--once",
        "--since",
        f"{time.time() - start + 2:.0f}s",
        "--store",
        str(store_path),
        "--alert-below",
        "0.95",
        "--window",
        "20s",
        "--min-rows",
        "5",
        "--alert-webhook",
        webhook.url,
        *cli_backends(toy_server, "-q"),
    ]
    assert main(args) == 1
    printed = capsys.readouterr()
    assert "ALERT: relevancy" in printed.out and "is below 0.95" in printed.out
    assert "SECRETPATH" not in printed.out + printed.err  # a webhook's path is its secret
    assert f"posted to http://127.0.0.1:{webhook.url.split(':')[2].split('/')[0]}" in printed.err
    (posted,) = webhook.received
    assert posted["text"].startswith("relevancy") and "below 0.95" in posted["text"]
    assert posted["relevancy"]["status"] == "alert" and posted["relevancy"]["n"] == 8
    # run again: nothing new, the window was checked: no second alert
    assert main(args) == 0
    assert len(webhook.received) == 1
    store = RunStore(store_path)
    (run,) = store.list_runs()
    assert run.n_scored == 8
    windows = store.windows(run.id)
    assert windows["status"].tolist() == ["alert"]


# --- MLflow -----------------------------------------------------------------------------------
def trace_into(uri: str, experiment_id: str, app: OpenAICompatServer, questions) -> None:
    """The OpenAI SDK with MLflow's autologging: one trace per question."""
    import mlflow

    before = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri(uri)
    mlflow.set_experiment(experiment_id=experiment_id)
    mlflow.openai.autolog()
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", ".*type hint is inferred as AnyType", UserWarning)
            client = openai.OpenAI(base_url=app.base_url, api_key="sk-toy", max_retries=0)
            for q in questions:
                client.chat.completions.create(
                    model="toy-chat", messages=[{"role": "user", "content": q}]
                )
    finally:
        mlflow.openai.autolog(disable=True)
        mlflow.flush_trace_async_logging()
        mlflow.set_tracking_uri(before)


@pytest.mark.mlflow_store
def test_an_mlflow_experiment_is_followed_and_each_trace_gets_feedback_once(
    tmp_path, capsys, toy_server
):
    try:
        import mlflow
    except ImportError as exc:
        skip_or_fail(f"MLflow is not installed ({exc}): bash scripts/setup.sh dev")
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    client = mlflow.MlflowClient(tracking_uri=uri)
    experiment_id = client.create_experiment("support-bot", artifact_location=str(tmp_path / "a"))
    store_path = tmp_path / "runs.sqlite3"
    with OpenAICompatServer(text_mode="lines") as app:
        trace_into(uri, experiment_id, app, QUESTIONS[:3])
        args = [
            "score",
            "--from",
            f"mlflow+{uri}#support-bot",
            "--once",
            "--since",
            "1h",
            "--to-mlflow",
            "--store",
            str(store_path),
            *cli_backends(toy_server, "-q"),
        ]
        assert main(args) == 0
        printed = capsys.readouterr()
        assert "3 new · 3 scored" in printed.out and "3 sent to mlflow" in printed.out
        trace_into(uri, experiment_id, app, QUESTIONS[3:5])
        assert main(args) == 0
        printed = capsys.readouterr()
        assert "2 new · 2 scored" in printed.out and "2 sent to mlflow" in printed.out
    traces = client.search_traces(locations=[experiment_id], max_results=100)
    assert len(traces) == 5
    store = RunStore(store_path)
    (run,) = store.list_runs()
    scores = store.export_frame(run.id).set_index("trace_id")["score"]
    for trace in traces:
        ours = [a for a in trace.info.assessments if a.name == "answer_relevancy"]
        assert len(ours) == 1  # once, though the source was read twice
        assert ours[0].value == pytest.approx(scores[trace.info.trace_id])
    assert run.settings["origin"]["tool"] == "mlflow"


# --- what is checked before anything runs -----------------------------------------------------
@pytest.mark.parametrize(
    "args, says",
    [
        (["--follow"], "--follow and --once read a live source: add --from phoenix://"),
        (["--from", "data.csv", "--once"], "--follow and --once read a live source"),
        (
            ["--from", "phoenix://h:1/p", "--follow", "-o", "x.csv"],
            "-o/--output cannot be used with --follow or --once",
        ),
        (["--from", "phoenix://h:1/p", "--follow", "--once"], "give --follow or --once, not both"),
        (
            ["--from", "phoenix://h:1/p", "--once", "--late", "soon"],
            "--late: 'soon' is not a window",
        ),
        (["--from", "mlflow+sqlite:///x.db#exp"], "an MLflow experiment is read as it grows"),
    ],
)
def test_follow_options_are_checked_in_one_line(args, says, capsys):
    assert main(["score", *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and says in err[0], err


def test_mlflow_addresses_are_read_or_refused_in_one_line():
    assert parse_mlflow_url("mlflow+http://127.0.0.1:5000#support-bot") == (
        "http://127.0.0.1:5000",
        "support-bot",
    )
    assert parse_mlflow_url("mlflow+sqlite:////srv/m.db#7") == ("sqlite:////srv/m.db", "7")
    for bad in ("mlflow+http://h:1", "mlflow+#exp", "mlflow://exp"):
        with pytest.raises(InputError, match="mlflow\\+TRACKING_URI#EXPERIMENT"):
            open_live_source(bad)
    source = open_live_source("mlflow+http://user:hunter2@127.0.0.1:5000#exp")
    assert "hunter2" not in source.url + json.dumps(source.where)


def test_a_followed_run_adds_each_key_once_in_one_transaction(tmp_path):
    from datetime import datetime, timezone

    store = RunStore(tmp_path / "runs.sqlite3")
    run = store.create_followed_run("live", {"api_key": "sk-secret"}, "phoenix://h:1/p")
    assert store.followed_run("phoenix://h:1/p", "live") == run
    frame = pd.DataFrame(
        {
            "user_input": ["q1", "q2", "q2"],
            "response": ["a1", "a2", "a2"],
            "span_id": ["s1", "s2", "s2"],
        }
    )
    t = datetime(2026, 12, 6, 9, tzinfo=timezone.utc)
    assert store.add_followed(run, frame, ["s1", "s2", "s2"], [1.0, 2.0, 2.0], read_to=t) == [0, 1]
    more = pd.DataFrame({"user_input": ["q2", "q3"], "response": ["a2", "a3"], "model": ["m", "m"]})
    assert store.add_followed(run, more, ["s2", "s3"], [2.0, None], read_to=t) == [2]
    info = store.get_run(run)
    assert info.n_rows == 3 and "model" in info.columns and "api_key" not in info.settings
    assert store.inputs(run)["user_input"].tolist() == ["q1", "q2", "q3"]
    assert store.follow_cursor(run).read_to == t
    # rows that do not match their keys add nothing and leave the cursor where it was
    with pytest.raises(ValueError):
        store.add_followed(run, more, ["s9"], [1.0], read_to=datetime.now(timezone.utc))
    assert store.get_run(run).n_rows == 3 and store.follow_cursor(run).read_to == t
    store.delete(run)
    assert store.followed_run("phoenix://h:1/p", "live") is None


# --- docs/monitoring.md: the unit and the cron line run as written ---------------------------
MONITORING = Path(__file__).resolve().parents[1] / "docs" / "monitoring.md"
DOC_SOURCE = "phoenix://127.0.0.1:6006/support-bot"
DOC_PROGRAM = "/opt/relevancy/bin/relevancy"


def _block(kind: str) -> str:
    import re

    text = MONITORING.read_text(encoding="utf-8")
    return re.search(rf"```{kind}\n(.*?)```", text, re.S).group(1)


def _as_here(command: str, phoenix, toy_server, tmp_path: Path) -> str:
    """The documented command on this machine: our `relevancy`, the test's Phoenix (project
    support-bot), the toy server's models instead of OpenAI's, files under tmp_path."""
    program = str(Path(sys.executable).parent / "relevancy")
    here = f"phoenix://127.0.0.1:{phoenix.server.port}/support-bot"
    command = command.replace(DOC_PROGRAM, program).replace(DOC_SOURCE, here)
    command = command.replace("openai:gpt-4o-mini", "openai:toy-chat")
    command = command.replace("openai:text-embedding-3-small", "openai:toy-embed")
    return _paths(command, tmp_path) + f" --base-url {toy_server.base_url}"


def _paths(text: str, tmp_path: Path) -> str:
    """The page's system paths under tmp_path (systemd's StateDirectory and CacheDirectory)."""
    for path, here in (
        ("/etc/relevancy/env", "env"),
        ("/var/lib/relevancy", "lib"),
        ("/var/cache/relevancy", "cache"),
        ("/var/log/relevancy-follow.log", "follow.log"),
    ):
        text = text.replace(path, str(tmp_path / here))
    return text


@pytest.mark.phoenix_server
@pytest.mark.slow
def test_the_monitoring_page_s_unit_and_cron_line_run_as_written(
    phoenix, tmp_path, toy_server, webhook
):
    import shlex
    import shutil

    unit = _block("ini")
    # systemd reads the unit (with our program where the page installs it)
    program = str(Path(sys.executable).parent / "relevancy")
    if shutil.which("systemd-analyze"):
        path = tmp_path / "relevancy-follow.service"
        path.write_text(unit.replace(DOC_PROGRAM, program), encoding="utf-8")
        checked = subprocess.run(
            ["systemd-analyze", "verify", str(path)], capture_output=True, text=True
        )
        assert checked.returncode == 0, checked.stderr
    # the service's command, in the service's environment, follows until systemd stops it
    env = {**os.environ, "RELEVANCY_ALERT_WEBHOOK": webhook.url, "OPENAI_API_KEY": "sk-toy"}
    for line in unit.splitlines():
        if line.startswith("Environment="):
            key, value = line[len("Environment=") :].split("=", 1)
            env[key] = _paths(value, tmp_path)
    exec_start = next(x for x in unit.splitlines() if x.startswith("ExecStart="))
    command = _as_here(exec_start[len("ExecStart=") :], phoenix, toy_server, tmp_path)
    proc = subprocess.Popen(
        [*shlex.split(command), "--poll", "0.5"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    out = Lines(proc)
    try:
        wait_for(lambda: "following" in out.text, "the service to start", output=out)
        emit_spans(phoenix.server.collector, phoenix.app, QUESTIONS[:2], project="support-bot")
        wait_for(lambda: "2 sent to phoenix" in out.text, "2 scores sent", output=out)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0, out.text
    finally:
        ended(proc, out)
    assert "posted to http://127.0.0.1" in out.text and "SECRETPATH" not in out.text
    # the cron line: a valid schedule; its command, run by sh as cron would, goes on with the
    # same run and exits 0 (nothing low enough to alert)
    cron = _block("crontab").strip()
    fields = cron.split(None, 5)
    assert len(fields) == 6 and fields[:5] == ["7", "*", "*", "*", "*"]
    (tmp_path / "env").write_text(f"OPENAI_API_KEY=sk-toy\nRELEVANCY_ALERT_WEBHOOK={webhook.url}\n")
    emit_spans(phoenix.server.collector, phoenix.app, QUESTIONS[2:3], project="support-bot")
    wait_for(lambda: spans_in(phoenix, "support-bot") >= 3, "Phoenix to store the third span")
    command = _as_here(fields[5].split(" >> ")[0], phoenix, toy_server, tmp_path)
    log = tmp_path / "follow.log"
    done = subprocess.run(["sh", "-c", f"{command} >> {log} 2>&1"], env=os.environ, timeout=300)
    text = log.read_text(encoding="utf-8")
    assert done.returncode == 0, text
    assert "goes on: 2 rows" in text and "1 new · 1 scored" in text, text
    assert RunStore(tmp_path / "lib" / "runs.sqlite3").list_runs()[0].n_scored == 3


def test_the_monitoring_page_s_webhook_body_is_the_one_sent():
    from relevancy.analysis.alerts import check_windows, parse_window
    from relevancy.io.webhook import alert_body

    documented = json.loads(_block("json"))
    t0 = pd.Timestamp("2026-12-06 09:00", tz="UTC")
    times = [t0 + pd.Timedelta(minutes=i) for i in range(20)]
    (check,) = check_windows(times, [0.4] * 19 + [0.5], below=0.6, window=parse_window("1h"))
    sent = alert_body(check, run="#3 support-bot")
    assert set(sent) == set(documented)
    assert set(sent["relevancy"]) == set(documented["relevancy"])
    assert sent["text"].endswith("is below 0.60 (run #3 support-bot)")


# --- the follower's logic, on a source and a target made here ---------------------------------
class Scripted:
    """A live source whose answers are scripted: rows (question, key, epoch time) or 'down'."""

    url, kind, key_column, where = "test://source", "phoenix", "span_id", {}

    def __init__(self, script):
        self.script = list(script)
        self.asked = []

    def read(self, start, end):
        from relevancy.io.importers.live import LiveRows, SourceDown

        self.asked.append((start, end))
        step = self.script.pop(0) if self.script else []
        if step == "down":
            raise SourceDown("test://source did not answer: ConnectError")
        frame = pd.DataFrame(
            {
                "user_input": [q for q, _, _ in step],
                "response": [f"About {q}" for q, _, _ in step],
                "span_id": [k for _, k, _ in step],
            }
        )
        return LiveRows(frame, [k for _, k, _ in step], [t for _, _, t in step])


def test_the_follower_says_an_outage_once_and_sends_each_score_once(tmp_path):
    from datetime import datetime, timedelta, timezone

    from relevancy import AnswerRelevancy
    from relevancy.io.exporters import WriteBack
    from relevancy.scoring.follow import Follower, FollowOptions, Target
    from relevancy.testing.fakes import FakeEmbedder, FakeGenerator

    t = datetime(2026, 12, 6, 9, tzinfo=timezone.utc).timestamp()
    source = Scripted(
        [
            [("q1", "a", t), ("q2", "b", t + 1)],
            "down",
            "down",
            [("q2", "b", t + 1), ("q3", "c", t + 2)],  # b again (the look back): added once
        ]
    )
    sent, calls = [], {"n": 0}

    def send(frames):
        calls["n"] += 1
        done = WriteBack("phoenix", "test")
        if calls["n"] == 2:  # the target is away once
            done.stopped = "test did not answer"
            return done
        for frame in frames:
            sent.extend(frame["span_id"])
            done.written += len(frame)
        return done

    store = RunStore(tmp_path / "runs.sqlite3")
    run = store.create_followed_run("live", {}, source.url)
    said = []
    clock = {"now": 0.0}
    metric = AnswerRelevancy(llm=FakeGenerator(), embeddings=FakeEmbedder(), cache=False)
    follower = Follower(
        metric,
        store,
        run,
        source,
        options=FollowOptions(interval=1.0, max_wait=4.0),
        targets=[Target("phoenix", "span_id", send)],
        say=said.append,
        now=lambda: datetime(2026, 12, 6, 9, tzinfo=timezone.utc) + timedelta(seconds=clock["now"]),
        clock=lambda: clock["now"],
    )
    for _ in range(8):
        follower.step()
        clock["now"] += 5.0
    assert sent == ["a", "b", "c"]  # each once, the one the target missed sent again later
    assert store.get_run(run).n_rows == 3 and store.get_run(run).n_scored == 3
    outage = [line for line in said if "did not answer" in line]
    assert len(outage) == 2  # the source once, the target once, however long each lasted
    assert any("test://source answers again" in line for line in said)
    assert any("phoenix answers again" in line for line in said)


def test_once_against_a_source_that_does_not_answer_fails_in_one_line(tmp_path, capsys, toy_server):
    from relevancy.testing.processes import free_port

    pytest.importorskip("phoenix.client")
    url = f"phoenix://127.0.0.1:{free_port()}/support"
    args = ["score", "--from", url, "--once", "--store", str(tmp_path / "runs.sqlite3")]
    assert main([*args, *cli_backends(toy_server, "-q")]) == 1
    out = capsys.readouterr().out
    assert f"FAIL: {url} did not answer" in out and "run again once it answers" in out
    assert "waiting" not in out and "Traceback" not in out


def test_rows_a_killed_follower_left_half_done_are_scored_and_sent_once(tmp_path):
    """A follower killed mid-chunk leaves rows scored out of order (0-9 but 3 and 8) and none
    sent; the next one, scoring a row at a time and sending after each, sends each row once, 3
    and 8 included (8 is scored after 9 was sent)."""
    from datetime import datetime, timezone

    from relevancy import AnswerRelevancy
    from relevancy.io.exporters import WriteBack
    from relevancy.scoring.follow import Follower, FollowOptions, Target
    from relevancy.testing.fakes import FakeEmbedder, FakeGenerator

    store = RunStore(tmp_path / "runs.sqlite3")
    run = store.create_followed_run("live", {}, Scripted.url)
    keys = [f"k{i}" for i in range(10)]
    frame = pd.DataFrame(
        {"user_input": [f"q{i}" for i in range(10)], "response": ["a"] * 10, "span_id": keys}
    )
    now = datetime.now(timezone.utc)
    rows = store.add_followed(run, frame, keys, [now.timestamp()] * 10, read_to=now)
    metric = AnswerRelevancy(llm=FakeGenerator(), embeddings=FakeEmbedder(), cache=False)
    results = metric.score_many(frame)
    store.append_results(run, [(r, x) for r, x in zip(rows, results) if r not in (3, 8)])
    sent = []

    def send(frames):
        done = WriteBack("phoenix", "test")
        for f in frames:
            sent.extend(f["span_id"])
            done.written += len(f)
        return done

    follower = Follower(
        metric,
        store,
        run,
        Scripted([]),
        options=FollowOptions(chunk=1),
        targets=[Target("phoenix", "span_id", send)],
        say=lambda line: None,
    )
    follower.step()
    follower.step()
    assert sorted(sent) == sorted(keys) and len(sent) == 10
