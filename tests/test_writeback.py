"""Scores back where the team looks, round-tripped through the real tools: a real Phoenix server
(from .venv-phoenix, in a temporary working folder on free ports) and a real MLflow tracking
store (SQLite in a temporary folder). The app in ``sample_app.py`` is traced into each through
the real OpenAI SDK and the tools' own instrumentation; ``relevancy score`` reads the traces
(``--from phoenix://``, an MLflow export), scores them with the toy server's models, writes the
scores back (``--to-phoenix``, ``--to-mlflow``, ``--mlflow-run``, the Runs page's buttons), and
the annotations, feedback and run are read back through the tools' own clients.

One Phoenix server and one MLflow store serve the whole module (module-scoped fixtures)."""

from __future__ import annotations

import json
import math
import time
import warnings
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

from relevancy.cli import main
from relevancy.core.inert import WORD_JOINER
from relevancy.paths import default_store_path
from relevancy.runs import RunStore
from relevancy.testing.openai_server import OpenAICompatServer
from relevancy.testing.processes import free_port
from relevancy.testing.tool_servers import PhoenixServer, phoenix_executable

import sample_app
from helpers import ROOT, app, choose_toy_backend, cli_backends, ok, skip_or_fail, visit

DATA = ROOT / "tests" / "data"
PROJECT = "router-support"
#: root spans (traces) the app makes: one per chat call, the tool's result, the pipelines
TRACES = len(sample_app.CHATS) + 1 + len(sample_app.PIPELINES)


def answered(truth: dict) -> dict:
    return {case: t for case, t in truth.items() if t["answer"] is not None}


@pytest.fixture(scope="module")
def app_server():
    """The toy server the traced app talks to (its replies in lines, as text)."""
    with OpenAICompatServer(text_mode="lines") as srv:
        yield srv


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory, app_server):
    try:
        from phoenix.client import Client
    except ImportError as exc:
        skip_or_fail(f"Phoenix's client is not installed ({exc}): bash scripts/setup.sh dev")
    if phoenix_executable() is None:
        skip_or_fail("no Phoenix server (.venv-phoenix): bash scripts/setup.sh dev")
    with PhoenixServer(tmp_path_factory.mktemp("phoenix")) as server:
        truth = sample_app.trace_into_phoenix(server.collector, PROJECT, app_server)
        client = Client(base_url=server.base_url)
        # spans are written by the server as they come: wait for all of them (a bound on a hang,
        # long enough for a loaded machine), and say so if they do not come
        want, deadline = TRACES + 2 * len(sample_app.PIPELINES), time.monotonic() + 120
        while True:
            spans = client.spans.get_spans_dataframe(project_identifier=PROJECT, limit=1000)
            if len(spans) >= want:
                break
            assert time.monotonic() < deadline, f"Phoenix stored {len(spans)} spans of {want}"
            time.sleep(0.25)
        yield SimpleNamespace(server=server, client=client, truth=truth, spans=spans)


def annotations(phoenix, span_ids, name):
    found = phoenix.client.spans.get_span_annotations(
        span_ids=list(span_ids), project_identifier=PROJECT, include_annotation_names=[name]
    )
    return {a["span_id"]: a for a in found}


def check_annotations(found, scores, threshold=0.5):
    assert set(found) == set(scores["span_id"])
    for _, row in scores.iterrows():
        a = found[row["span_id"]]
        assert a["annotator_kind"] == "LLM"
        assert a["result"]["score"] == pytest.approx(row["score"])
        assert a["result"]["label"] == ("relevant" if row["score"] >= threshold else "irrelevant")
        explanation = a["result"]["explanation"]
        assert all(q in explanation for q in json.loads(row["generated_questions"]))
        assert a["metadata"]["reason"] == row["reason"]


@pytest.mark.phoenix_server
def test_spans_read_from_phoenix_are_scored_and_annotated_there(
    phoenix, tmp_path, capsys, toy_server
):
    url = f"phoenix://127.0.0.1:{phoenix.server.port}/{PROJECT}"
    out = tmp_path / "scores.csv"
    args = [
        "score",
        "--from",
        url,
        "--since",
        "1h",
        "-o",
        str(out),
        "--to-phoenix",
        "--save-run",
        "from phoenix",
        "-q",
        *cli_backends(toy_server),
    ]
    assert main(args) == 0
    printed = capsys.readouterr()
    assert f"phoenix         {TRACES} root spans read from {url}" in printed.err
    expected = answered(phoenix.truth)
    assert f"Phoenix spans: {len(expected)} question/answer pairs found" in printed.err
    scores = pd.read_csv(out)
    # each trace's question and answer, as the app asked and the model replied
    assert {
        row["metadata.case"]: (row["user_input"], row["response"]) for _, row in scores.iterrows()
    } == {c: (t["question"], t["answer"]) for c, t in expected.items()}
    line = (
        f"phoenix         {len(expected)} span annotations 'answer_relevancy' written to "
        f"{phoenix.server.base_url}"
    )
    assert line in printed.out
    check_annotations(annotations(phoenix, scores["span_id"], "answer_relevancy"), scores)
    # the run remembers where its rows came from (the Runs page's button uses it)
    (run,) = RunStore(default_store_path()).list_runs()
    assert run.source == url
    assert run.settings["origin"] == {
        "format": "phoenix",
        "tool": "phoenix",
        "url": phoenix.server.base_url,
        "project": PROJECT,
    }


@pytest.mark.phoenix_server
def test_an_exported_span_file_goes_back_with_a_name_and_threshold_of_its_own(
    phoenix, tmp_path, capsys, toy_server
):
    exported = tmp_path / "spans.parquet"
    phoenix.spans.to_parquet(exported)  # get_spans_dataframe, saved as a user does
    out = tmp_path / "scores.jsonl"
    args = [
        "score",
        str(exported),
        "-o",
        str(out),
        "--to-phoenix",
        phoenix.server.base_url,
        "--annotation-name",
        "relevancy_v2",
        "--threshold",
        "0.9",
        "-q",
        *cli_backends(toy_server),
    ]
    assert main(args) == 0
    assert "span annotations 'relevancy_v2' written" in capsys.readouterr().out
    scores = pd.read_json(out, lines=True)
    scores["generated_questions"] = scores["generated_questions"].map(
        lambda q: q if isinstance(q, str) else json.dumps(q)
    )
    check_annotations(annotations(phoenix, scores["span_id"], "relevancy_v2"), scores, 0.9)


@pytest.mark.phoenix_server
def test_phoenix_errors_are_one_line_and_keep_the_scores(phoenix, tmp_path, capsys, toy_server):
    url = f"phoenix://127.0.0.1:{phoenix.server.port}/{PROJECT}"
    args = [
        "score",
        "--from",
        url,
        "--until",
        "2000-01-01",
        "-o",
        str(tmp_path / "x.csv"),
        *cli_backends(toy_server),
    ]
    assert main(args) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        f"error: {url} has no spans in that time window: check the project's name"
    ]
    assert main(["score", "--from", "http://localhost:6006", *cli_backends(toy_server)]) == 2
    assert "is not a Phoenix project: write phoenix://HOST:PORT/PROJECT" in capsys.readouterr().err
    # the server is gone: the scores are kept, the command says how to retry
    out = tmp_path / "kept.csv"
    nobody = f"http://127.0.0.1:{free_port()}"
    exported = tmp_path / "spans.parquet"
    phoenix.spans.to_parquet(exported)
    args = [
        "score",
        str(exported),
        "-o",
        str(out),
        "--to-phoenix",
        nobody,
        "-q",
        *cli_backends(toy_server),
    ]
    assert main(args) == 1
    *_, why, last = capsys.readouterr().err.strip().splitlines()
    n = len(answered(phoenix.truth))
    assert why.startswith(f"FAIL: phoenix: {nobody} did not answer (ConnectError")
    assert why.endswith(f"0 span annotations written before it stopped, {n} scores not tried")
    assert last.startswith(f"FAIL: {n} of {n} scores not written to {nobody}; ")
    assert f"the scores are in {out} " in last
    assert pd.read_csv(out)["score"].notna().all()


@pytest.mark.phoenix_server
def test_the_runs_page_annotates_a_run_that_came_from_phoenix(phoenix, tmp_path, toy_server):
    exported = tmp_path / "spans.parquet"
    phoenix.spans.to_parquet(exported)
    args = [
        "score",
        str(exported),
        "-o",
        str(tmp_path / "s.csv"),
        "--save-run",
        "spans",
        "-q",
        *cli_backends(toy_server),
    ]
    assert main(args) == 0
    store = RunStore(default_store_path())
    run = next(r for r in store.list_runs() if r.name == "spans")
    assert run.settings["origin"] == {"format": "phoenix", "tool": "phoenix"}  # no server known
    at = app()
    at.session_state["active_run"] = run.id
    visit(at, "5_Runs.py")
    assert at.text_input(key=f"runs_wb_phoenix_{run.id}").value == "http://localhost:6006"
    at.text_input(key=f"runs_wb_phoenix_{run.id}").input(phoenix.server.base_url)
    at.text_input(key=f"runs_wb_name_{run.id}").input("relevancy_dashboard")
    ok(at.button(key="runs_to_phoenix").click().run())
    assert [e.value for e in at.error] == []
    # as read: the escapes and the word joiners that keep the address from becoming a link
    done = [s.value.replace("\\", "").replace(WORD_JOINER, "") for s in at.success]
    line = f"span annotations 'relevancy_dashboard' written to {phoenix.server.base_url}"
    assert any(line in d for d in done), done
    scores = store.export_frame(run.id)
    check_annotations(annotations(phoenix, scores["span_id"], "relevancy_dashboard"), scores)


# --- MLflow -----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def mlflow_store(tmp_path_factory, app_server):
    try:
        import mlflow
    except ImportError as exc:
        skip_or_fail(f"MLflow is not installed ({exc}): bash scripts/setup.sh dev")
    folder = tmp_path_factory.mktemp("mlflow")
    uri = f"sqlite:///{folder}/mlflow.db"
    before = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri(uri)
    try:
        experiment_id = mlflow.create_experiment(PROJECT, artifact_location=str(folder / "art"))
        with warnings.catch_warnings():  # MLflow's own, about the type hints of its spans
            warnings.filterwarnings("ignore", ".*type hint is inferred as AnyType", UserWarning)
            truth = sample_app.trace_into_mlflow(experiment_id, app_server)
        traces = mlflow.search_traces(locations=[experiment_id])
    finally:
        mlflow.set_tracking_uri(before)
    exported = folder / "traces.json"  # what a user writes: search_traces(...).to_json(...)
    traces.to_json(exported, orient="records")
    yield SimpleNamespace(
        uri=uri, experiment_id=experiment_id, truth=truth, exported=exported, folder=folder
    )


def feedback(uri, trace_ids, name="answer_relevancy"):
    """Each trace's valid feedback ``name``, read through MLflow's own client."""
    import mlflow

    client = mlflow.MlflowClient(tracking_uri=uri)
    found = {}
    for trace_id in trace_ids:
        trace = client.get_trace(trace_id)
        valid = [a for a in trace.info.assessments if a.name == name and a.valid is not False]
        found[trace_id] = valid
    return found


@pytest.mark.mlflow_store
def test_mlflow_traces_get_feedback_and_a_run(mlflow_store, tmp_path, capsys, toy_server):
    import mlflow

    out = tmp_path / "scores.csv"
    args = [
        "score",
        str(mlflow_store.exported),
        "-o",
        str(out),
        "--to-mlflow",
        mlflow_store.uri,
        "--mlflow-run",
        "--save-run",
        "mlflow traces",
        "-q",
        *cli_backends(toy_server),
    ]
    assert main(args) == 0
    printed = capsys.readouterr()
    expected = answered(mlflow_store.truth)
    assert f"MLflow traces: {len(expected)} question/answer pairs found" in printed.err
    scores = pd.read_csv(out)
    assert {
        row["tags.case"]: (row["user_input"], row["response"]) for _, row in scores.iterrows()
    } == {c: (t["question"], t["answer"]) for c, t in expected.items()}
    assert (
        f"mlflow          {len(expected)} feedback 'answer_relevancy' written to {mlflow_store.uri}"
    ) in printed.out
    run_line = next(line for line in printed.out.splitlines() if line.startswith("mlflow run"))
    run_id = run_line.split(" as run ")[1].split()[0]
    # every trace's feedback: the score, the label, the rationale, and the run it belongs to
    found = feedback(mlflow_store.uri, scores["trace_id"])
    for _, row in scores.iterrows():
        (f,) = found[row["trace_id"]]
        assert f.value == pytest.approx(row["score"])
        assert f.source.source_type == "LLM_JUDGE" and f.source.source_id == row["llm"]
        assert f.metadata["label"] == ("relevant" if row["score"] >= 0.5 else "irrelevant")
        assert f.metadata["mlflow_run_id"] == run_id
        assert all(q in f.rationale for q in json.loads(row["generated_questions"]))
    # the run, in the traces' own experiment: parameters, metrics, the table and the report
    client = mlflow.MlflowClient(tracking_uri=mlflow_store.uri)
    run = client.get_run(run_id)
    assert run.info.experiment_id == mlflow_store.experiment_id
    assert run.data.params["llm"] == cli_backends(toy_server)[1]
    assert run.data.params["origin_tool"] == "mlflow"
    metrics = run.data.metrics
    assert metrics["answer_relevancy_mean"] == pytest.approx(scores["score"].mean())
    assert metrics["answer_relevancy_ci_low"] <= metrics["answer_relevancy_mean"]
    assert (metrics["rows"], metrics["nan"]) == (len(scores), 0)
    artifacts = sorted(a.path for a in client.list_artifacts(run_id))
    assert artifacts == ["scores.csv", "scores.report.html"]
    report = client.download_artifacts(run_id, "scores.report.html", str(tmp_path))
    assert "<html" in Path(report).read_text(encoding="utf-8")[:200].lower()


@pytest.mark.mlflow_store
def test_scoring_again_overrides_the_feedback_and_the_runs_page_sends_it(
    mlflow_store, tmp_path, capsys, toy_server
):
    # first at a threshold of 0.99 (every label irrelevant), then from the Runs page at 0.5
    args = [
        "score",
        str(mlflow_store.exported),
        "-o",
        str(tmp_path / "s.csv"),
        "--save-run",
        "again",
        "--to-mlflow",
        mlflow_store.uri,
        "--threshold",
        "0.99",
        "-q",
        *cli_backends(toy_server),
    ]
    assert main(args) == 0
    store = RunStore(default_store_path())
    run = next(r for r in store.list_runs() if r.name == "again")
    assert run.settings["origin"] == {"format": "mlflow", "tool": "mlflow"}
    scores = store.export_frame(run.id)
    at = app()
    at.session_state["active_run"] = run.id
    visit(at, "5_Runs.py")
    at.text_input(key=f"runs_wb_mlflow_{run.id}").input(mlflow_store.uri)
    ok(at.button(key="runs_to_mlflow").click().run())
    assert [e.value for e in at.error] == []
    (message,) = [s.value.replace("\\", "") for s in at.success if "feedback" in s.value]
    # the rows whose label changed (score at or above 0.5) are overridden, the rest left as
    # they were ("already there")
    changed = int((scores["score"] >= 0.5).sum())
    assert changed > 0
    assert message.startswith(f"{changed} feedback 'answer_relevancy' written to ")
    if changed < len(scores):
        assert f"({len(scores) - changed} already there)" in message
    # sent again as it is: nothing is written twice
    ok(at.button(key="runs_to_mlflow").click().run())
    (again,) = [s.value.replace("\\", "") for s in at.success if "feedback" in s.value]
    assert again.startswith("0 feedback 'answer_relevancy' written to ")
    assert f"({len(scores)} already there)" in again
    found = feedback(mlflow_store.uri, scores["trace_id"])
    assert all(len(v) == 1 for v in found.values())  # overridden, not doubled
    assert {t: v[0].value for t, v in found.items()} == pytest.approx(
        dict(zip(scores["trace_id"], scores["score"]))
    )
    labels = {t: v[0].metadata["label"] for t, v in found.items()}
    assert labels == {
        t: "relevant" if v >= 0.5 else "irrelevant"
        for t, v in zip(scores["trace_id"], scores["score"])
    }
    run_id = message.rsplit(" · run ", 1)[1]
    import mlflow

    logged = mlflow.MlflowClient(tracking_uri=mlflow_store.uri).get_run(run_id)
    assert logged.info.run_name == "again"
    assert not math.isnan(logged.data.metrics["answer_relevancy_mean"])


# --- without a server ---------------------------------------------------------------------------
def test_the_options_are_checked_before_anything_is_scored(tmp_path, capsys, toy_server):
    data = str(DATA / "phoenix/spans.parquet")
    cases = [
        (
            ["--since", "1h", data],
            "error: --since and --until go with --from phoenix://HOST:PORT/PROJECT",
        ),
        (["--from", "phoenix://localhost:6006/p", data], "error: give INPUT or --from, not both"),
        ([], "error: give a file to score, or --from phoenix://HOST:PORT/PROJECT"),
        (
            ["--from", "phoenix://localhost:6006/p", "--since", "yesterday"],
            "relevancy score: error: argument --since: 'yesterday' is not a time: give an ISO",
        ),
        (
            ["--engine", "ray", data, "--to-phoenix"],
            "error: --estimate, --save-run, --store, "
            "--repeats, --label-column, --from, --batch-api and the write-back options work with "
            "--engine local only",
        ),
    ]
    for extra, line in cases:
        assert (
            main(["score", *extra, "-o", str(tmp_path / "x.csv"), *cli_backends(toy_server)]) == 2
        ), extra
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith(line), (extra, err)


def test_rows_without_ids_are_said_to_need_them(tmp_path, capsys, toy_server):
    # a Langfuse export has trace ids but no span ids: nothing to annotate in Phoenix
    out = tmp_path / "x.csv"
    args = [
        "score",
        str(DATA / "langfuse_traces.json"),
        "-o",
        str(out),
        "-q",
        "--to-phoenix",
        f"http://127.0.0.1:{free_port()}",
        *cli_backends(toy_server),
    ]
    assert main(args) == 1
    printed = capsys.readouterr()
    assert "0 span annotations 'answer_relevancy' written to" in printed.out
    *_, why, last = printed.err.strip().splitlines()
    assert why == "FAIL: phoenix: 4 scored rows without a span_id: row 1, row 2, row 3, row 4"
    assert last.startswith("FAIL: 4 of 4 scores not written to http://127.0.0.1:")
    assert pd.read_csv(out)["score"].notna().all()


def test_what_goes_back_explains_the_score():
    from relevancy.io.exporters import explanation, origin, origin_tool

    row = {
        "reason": "padded",
        "mode": "focus",
        "ragas_value": 0.61,
        "noncommittal": False,
        "generated_questions": json.dumps(["How long is the battery life?", "Is it fast?"]),
        "similarities": json.dumps([0.91, 0.42]),
    }
    assert explanation(row).splitlines() == [
        "Padded: some sentences have nothing to do with the question.",
        "Scored in focus mode; the Ragas value is 0.610.",
        "Questions rebuilt from the answer (cosine to the question):",
        "1. How long is the battery life? (0.91)",
        "2. Is it fast? (0.42)",
    ]
    # no verdict on fewer questions than asked: labelled incomplete, whichever side
    from relevancy.io.exporters import row_label, row_metadata

    partial = dict(row, score=0.8, questions_used=2, strictness=3)
    assert row_label(partial, 0.5) == "incomplete" and row_label(partial, 0.9) == "incomplete"
    assert row_label(partial, 0.5, min_questions=2) == "relevant"
    assert row_label(dict(partial, questions_used=3), 0.5) == "relevant"
    assert row_label(dict(partial, questions_used=3), 0.9) == "irrelevant"
    assert row_metadata(partial, 0.5)["label"] == "incomplete"
    assert "Not a verdict: scored from 2 of 3 generated questions." in explanation(partial, 0.5)
    assert origin("mlflow") == {"format": "mlflow", "tool": "mlflow"}
    assert origin("langfuse", url="") == {"format": "langfuse"}
    assert origin_tool({"origin": origin("phoenix")}, ["user_input", "span_id"]) == "phoenix"
    assert origin_tool({"origin": origin("phoenix")}, ["user_input"]) is None  # ids not kept
    assert origin_tool({"origin": origin("table")}) is None
    assert origin_tool({}) is None


def test_an_upload_from_phoenix_is_remembered_and_offered_on_the_runs_page():
    with OpenAICompatServer() as srv:
        at = visit(choose_toy_backend(app(), srv), "1_Dataset.py")
        data = (DATA / "phoenix/spans.parquet").read_bytes()
        at.file_uploader(key="ds_upload").upload("spans.parquet", data, "application/octet-stream")
        ok(at.run())
        ok(at.button(key="ds_score").click().run())
        run = RunStore(default_store_path()).list_runs()[0]
        assert run.settings["origin"] == {"format": "phoenix", "tool": "phoenix"}
        visit(at, "5_Runs.py")
        assert at.button(key="runs_to_phoenix").proto.label == "Annotate the spans in Phoenix"
        # the demo run (a table) offers nothing
        demo = next(r for r in RunStore(default_store_path()).list_runs() if r.id != run.id)
        at.session_state["active_run"] = demo.id
        ok(at.run())
        assert not [b for b in at.button if b.key in ("runs_to_phoenix", "runs_to_mlflow")]


def test_a_file_taken_as_an_options_value_is_said_so(tmp_path, capsys, toy_server):
    data = str(DATA / "phoenix/spans.parquet")
    assert main(["score", "--to-phoenix", data, *cli_backends(toy_server)]) == 2
    assert capsys.readouterr().err.strip() == (
        f"error: {data!r} reads as --to-phoenix's value: put the file to score before --to-phoenix"
    )
