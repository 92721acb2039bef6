"""Write-back does no harm in the team's own Phoenix: an unknown or deleted span costs only
itself, a person's annotation (and another tool's) is never replaced, a rerun replaces only
ours; and what Phoenix holds is read whatever it holds (streamed calls, redacted text).

A real Phoenix server (from ``.venv-phoenix``) receives spans made by the real OpenTelemetry
SDK with OpenInference's conventions and by OpenInference's OpenAI instrumentation around the
real OpenAI SDK (against the toy server); what is in Phoenix afterwards is read through
Phoenix's own client, never through relevancy's code."""

from __future__ import annotations

import time
from types import SimpleNamespace

import pandas as pd
import pytest

from relevancy.cli import main
from relevancy.testing.openai_server import OpenAICompatServer
from relevancy.testing.tool_servers import PhoenixServer, phoenix_executable

from helpers import cli_backends, skip_or_fail

NAME = "answer_relevancy"
pytestmark = pytest.mark.phoenix_server


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory):
    try:
        from phoenix.client import Client
    except ImportError as exc:
        skip_or_fail(f"Phoenix's client is not installed ({exc}): bash scripts/setup.sh dev")
    if phoenix_executable() is None:
        skip_or_fail("no Phoenix server (.venv-phoenix): bash scripts/setup.sh dev")
    with PhoenixServer(tmp_path_factory.mktemp("phoenix")) as server:
        yield SimpleNamespace(server=server, client=Client(base_url=server.base_url))


def trace_pairs(phoenix, project: str, pairs: list[tuple[str, str]]) -> None:
    """One root span per pair, its input and output set as OpenInference writes them."""
    from phoenix.otel import register

    provider = register(
        endpoint=phoenix.server.collector,
        project_name=project,
        batch=True,
        set_global_tracer_provider=False,
        verbose=False,
    )
    tracer = provider.get_tracer(__name__)
    try:
        for question, answer in pairs:
            with tracer.start_as_current_span("answer", openinference_span_kind="chain") as span:
                span.set_input(question)
                span.set_output(answer)
        provider.force_flush()
    finally:
        provider.shutdown()


def trace_chats(phoenix, project: str, server, calls: list[dict], **config) -> list[str]:
    """Chat calls made with the real OpenAI SDK, traced by OpenInference's instrumentation
    (``config``: its privacy settings, as ``OPENINFERENCE_HIDE_*`` set them); the answers."""
    import openai
    from openinference.instrumentation import TraceConfig
    from openinference.instrumentation.openai import OpenAIInstrumentor
    from phoenix.otel import register

    provider = register(
        endpoint=phoenix.server.collector,
        project_name=project,
        batch=False,
        set_global_tracer_provider=False,
        verbose=False,
    )
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=provider, config=TraceConfig(**config))
    answers = []
    try:
        client = openai.OpenAI(base_url=server.base_url, api_key="sk-toy", max_retries=0)
        for kwargs in calls:
            reply = client.chat.completions.create(model="toy-chat", **kwargs)
            if kwargs.get("stream"):
                answers.append(
                    "".join(c.choices[0].delta.content or "" for c in reply if c.choices)
                )
            else:
                answers.append(reply.choices[0].message.content)
        provider.force_flush()
    finally:
        instrumentor.uninstrument()
        provider.shutdown()
    return answers


def spans_of(phoenix, project: str, n: int) -> pd.DataFrame:
    """The project's spans once the server has written ``n`` (ingestion is asynchronous)."""
    for _ in range(240):
        frame = phoenix.client.spans.get_spans_dataframe(project_identifier=project, limit=5000)
        if len(frame) >= n:
            return frame
        time.sleep(0.25)
    raise AssertionError(f"{project}: {len(frame)} spans, expected {n}")


def annotations(phoenix, project: str, span_ids) -> dict[str, list[dict]]:
    found = phoenix.client.spans.get_span_annotations(
        span_ids=list(span_ids), project_identifier=project, include_annotation_names=[NAME]
    )
    by_span: dict[str, list[dict]] = {}
    for a in found:
        by_span.setdefault(a["span_id"], []).append(a)
    return by_span


def test_an_unknown_span_costs_only_itself(phoenix, tmp_path, capsys, toy_server):
    project, n = "many", 1_200
    trace_pairs(
        phoenix,
        project,
        [
            (f"How do I reset router model {i}?", f"Hold RESET on model {i} for 10 s.")
            for i in range(n)
        ],
    )
    frame = spans_of(phoenix, project, n)
    exported = tmp_path / "spans.parquet"
    frame.to_parquet(exported)
    # two spans deleted since the export, three from another server: all in the first batch
    ids = list(frame["context.span_id"])
    for span_id in ids[3:5]:
        phoenix.client.spans.delete(span_identifier=span_id)
    strangers = frame.iloc[:3].copy()
    strangers["context.span_id"] = ["feedfacecafe0001", "feedfacecafe0002", "feedfacecafe0003"]
    strangers.index = strangers["context.span_id"]
    mixed = tmp_path / "mixed.parquet"
    pd.concat([strangers, frame]).to_parquet(mixed)
    out = tmp_path / "scores.csv"
    args = [
        "score",
        str(mixed),
        "-o",
        str(out),
        "--to-phoenix",
        phoenix.server.base_url,
        "-q",
        *cli_backends(toy_server),
    ]
    assert main(args) == 1
    printed = capsys.readouterr()
    known = [i for i in ids if i not in ids[3:5]]
    assert (
        f"phoenix         {len(known):,} span annotations '{NAME}' written to "
        f"{phoenix.server.base_url}\n"
    ) in printed.out
    err = printed.err.strip().splitlines()
    assert err[-2].startswith(
        "FAIL: phoenix: 5 spans the server does not know (deleted, or in another project): "
    )
    assert set(err[-2].split(": ")[-1].split(", ")) == {*strangers["context.span_id"], *ids[3:5]}
    assert err[-1].startswith(f"FAIL: 5 of {n + 3:,} scores not written to ")
    found = annotations(phoenix, project, known)
    assert set(found) == set(known)
    scores = pd.read_csv(out).drop_duplicates("span_id").set_index("span_id")
    for span_id in known[:50]:
        (a,) = found[span_id]
        assert a["result"]["score"] == pytest.approx(scores.loc[span_id, "score"])
    # the smallest case: three known spans and three unknown ones
    small = tmp_path / "small.parquet"
    pd.concat([strangers, frame.iloc[5:8]]).to_parquet(small)
    args[1] = str(small)
    assert main(args) == 1
    assert "3 span annotations" in capsys.readouterr().out


def test_a_persons_annotation_is_never_replaced(phoenix, tmp_path, capsys, toy_server):
    project = "people"
    # on-topic answers: "ok" at 0.5, below 0.99
    pairs = [
        ("How do I reset the router?", "Reset the router: hold its reset button."),
        ("What does a blinking orange light mean?", "A blinking orange light means no internet."),
        ("Where is the Wi-Fi password changed?", "The Wi-Fi password is changed at Wireless."),
        ("Is the guest network on by default?", "The guest network is off by default."),
    ]
    trace_pairs(phoenix, project, pairs)
    frame = spans_of(phoenix, project, 4)
    person, tool, odd, plain = list(frame["context.span_id"])
    client = phoenix.client.spans
    # a person's label in the UI (identifier ""), another judge's, and a person's under ours
    client.add_span_annotation(
        span_id=person,
        annotation_name=NAME,
        annotator_kind="HUMAN",
        label="irrelevant",
        score=0.0,
        explanation="Read it: wrong.",
        sync=True,
    )
    client.add_span_annotation(
        span_id=tool,
        annotation_name=NAME,
        annotator_kind="LLM",
        label="relevant",
        score=0.77,
        identifier="ragas-judge",
        sync=True,
    )
    client.add_span_annotation(
        span_id=odd,
        annotation_name=NAME,
        annotator_kind="HUMAN",
        label="relevant",
        score=1.0,
        identifier="relevancy",
        sync=True,
    )
    before = annotations(phoenix, project, [person, tool, odd])
    url = f"phoenix://127.0.0.1:{phoenix.server.port}/{project}"
    out = tmp_path / "scores.csv"
    args = ["score", "--from", url, "-o", str(out), "--to-phoenix", "-q", *cli_backends(toy_server)]
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert (
        f"3 span annotations '{NAME}' written to {phoenix.server.base_url} (1 kept: an "
        "annotation under identifier 'relevancy' that relevancy did not write)"
    ) in printed
    scores = pd.read_csv(out).set_index("span_id")
    after = annotations(phoenix, project, [person, tool, odd, plain])
    for span_id in (person, tool, odd):  # theirs, as they were
        for a in before[span_id]:
            assert a in after[span_id]
    for span_id in (person, tool, plain):  # ours beside them, under our own identifier
        (ours,) = [a for a in after[span_id] if a["identifier"] == "relevancy"]
        assert ours["annotator_kind"] == "LLM" and ours["result"]["label"] == "relevant"
        assert ours["result"]["explanation"].startswith("On topic: the questions rebuilt")
        assert isinstance(ours["metadata"]["ragas_value"], float)
        assert ours["result"]["score"] == pytest.approx(scores.loc[span_id, "score"])
        assert isinstance(ours["metadata"]["threshold"], float)
        assert ours["metadata"]["source"] == "relevancy"
    assert len(after[person]) == 2 and len(after[tool]) == 2 and len(after[odd]) == 1
    # again as it is: nothing sent; at another threshold: only ours replaced, and the label
    # and the explanation agree (one threshold everywhere)
    assert main(args) == 0
    assert (
        "0 span annotations" in (again := capsys.readouterr().out) and "(3 already there" in again
    )
    assert main([*args, "--threshold", "0.99"]) == 0
    assert f"3 span annotations '{NAME}' written" in capsys.readouterr().out
    last = annotations(phoenix, project, [person, tool, odd, plain])
    for span_id in (person, tool, odd):
        for a in before[span_id]:
            assert a in last[span_id]
    for span_id in (person, tool, plain):
        (ours,) = [a for a in last[span_id] if a["identifier"] == "relevancy"]
        assert ours["result"]["label"] == "irrelevant"
        assert ours["result"]["explanation"].startswith("Drifting: below the threshold")
        assert ours["metadata"]["reason"] == "drifting"


def test_streamed_and_redacted_calls_are_read_as_phoenix_holds_them(
    phoenix, tmp_path, capsys, toy_server
):
    with OpenAICompatServer(text_mode="lines") as app:
        questions = ["How long does a factory reset take?", "Can I schedule firmware updates?"]
        calls = [
            {
                "messages": [{"role": "user", "content": q}],
                "stream": True,
                "stream_options": {"include_usage": True},
            }
            for q in questions
        ]
        answers = trace_chats(phoenix, "streamed", app, calls)
        hidden = [{"messages": [{"role": "user", "content": "What is my admin password?"}]}]
        trace_chats(phoenix, "private", app, hidden * 2, hide_inputs=True)
        trace_chats(phoenix, "private", app, calls[:1])
    frame = spans_of(phoenix, "streamed", 2)
    assert all(e[0]["name"] == "First Token Stream Event" for e in frame["events"])
    with pytest.raises(Exception, match="no child field"):  # why the fetch could not use it
        frame.to_parquet(tmp_path / "as-is.parquet")
    base = f"phoenix://127.0.0.1:{phoenix.server.port}"
    out = tmp_path / "streamed.csv"
    assert (
        main(
            ["score", "--from", f"{base}/streamed", "-o", str(out), "-q", *cli_backends(toy_server)]
        )
        == 0
    )
    assert "Phoenix spans: 2 question/answer pairs found" in capsys.readouterr().err
    scores = pd.read_csv(out)
    assert sorted(zip(scores["user_input"], scores["response"])) == sorted(zip(questions, answers))
    # the export docs/cli.md gives for such a frame
    exported = tmp_path / "spans.jsonl"
    frame.to_json(exported, orient="records", lines=True, date_format="iso")
    assert (
        main(
            ["score", str(exported), "-o", str(tmp_path / "x.csv"), "-q", *cli_backends(toy_server)]
        )
        == 0
    )
    assert "Phoenix spans: 2 question/answer pairs found" in capsys.readouterr().err
    # redacted questions are not questions: skipped, and said
    spans_of(phoenix, "private", 3)
    out = tmp_path / "private.csv"
    assert (
        main(
            ["score", "--from", f"{base}/private", "-o", str(out), "-q", *cli_backends(toy_server)]
        )
        == 0
    )
    err = capsys.readouterr().err
    assert (
        "Phoenix spans: 1 question/answer pair found, 2 spans with the question redacted by "
        "the tracing (__REDACTED__) skipped"
    ) in err
    assert list(pd.read_csv(out)["user_input"]) == questions[:1]


def test_the_docs_phoenix_example_runs_as_written(phoenix, tmp_path, capsys, toy_server):
    from test_writeback_safety import docs_command

    trace_pairs(phoenix, "my-app", [("How do I reset the router?", "Hold RESET for 10 s.")])
    frame = spans_of(phoenix, "my-app", 1)
    args = docs_command("phoenix")
    address = f"127.0.0.1:{phoenix.server.port}"
    args = [a.replace("localhost:6006", address) for a in args]
    out = tmp_path / "scores.csv"
    assert main([*args, "-o", str(out), "-q", *cli_backends(toy_server)]) == 0
    assert "1 span annotation 'answer_relevancy' written" in capsys.readouterr().out
    assert set(annotations(phoenix, "my-app", frame["context.span_id"])) == set(
        frame["context.span_id"]
    )
