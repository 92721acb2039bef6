"""Every export the real tools wrote (tests/data/phoenix, mlflow, openai: made by the scripts
``tests/data/make_*_samples.py`` with a real Phoenix server, real MLflow tracing and the real
OpenAI SDK) is read with the question and the answer its truth file records, case by case."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from relevancy import InputError, inspect_rows, read_table, read_table_bytes
from relevancy.cli import main
from relevancy.io import iter_table
from relevancy.io.importers import ImportReport, text_of

from helpers import ROOT, cli_backends

DATA = ROOT / "tests" / "data"

#: sample, format detected, its label, the column naming each row's case (None: not kept)
SAMPLES = [
    ("phoenix/spans.parquet", "phoenix", "Phoenix spans", "metadata.case"),
    ("phoenix/spans.csv", "phoenix", "Phoenix spans", "metadata.case"),
    ("phoenix/spans.jsonl", "phoenix", "Phoenix spans", "metadata.case"),
    ("phoenix/rest_spans.json", "phoenix", "Phoenix spans", "metadata.case"),
    ("phoenix/otlp_spans.json", "phoenix", "Phoenix spans (OTLP)", "metadata.case"),
    ("phoenix/dataset_examples.json", "phoenix", "Phoenix dataset examples", "metadata.case"),
    ("phoenix/dataset.csv", "phoenix", "Phoenix dataset examples", "metadata.case"),
    ("phoenix/dataset_openai_ft.jsonl", "openai-chat", "OpenAI chat messages", None),
    ("phoenix/dataset_openai_evals.jsonl", "openai-chat", "OpenAI chat messages", None),
    ("phoenix/langchain_spans.jsonl", "phoenix", "Phoenix spans", "metadata.case"),
    ("mlflow/search_traces.json", "mlflow", "MLflow traces", "tags.case"),
    ("mlflow/search_traces.jsonl", "mlflow", "MLflow traces", "tags.case"),
    ("mlflow/search_traces.parquet", "mlflow", "MLflow traces", "tags.case"),
    ("mlflow/cli_traces.json", "mlflow", "MLflow traces", "tags.case"),
    ("mlflow/trace.json", "mlflow", "MLflow traces", "tags.case"),
    ("openai/chat.jsonl", "openai-chat", "OpenAI chat messages", "metadata.case"),
    ("openai/request_log.jsonl", "openai-log", "OpenAI requests", None),
    ("openai/batch", "openai-batch", "3 files, OpenAI batch requests", "custom_id"),
]


def truth(sample: str) -> dict[str, dict]:
    name = "langchain_truth.json" if "langchain" in sample else "truth.json"
    return json.loads((DATA / sample.split("/")[0] / name).read_text())["cases"]


def answered(cases: dict[str, dict]) -> dict[str, dict]:
    return {case: t for case, t in cases.items() if t["answer"] is not None}


def read(sample: str, **kw) -> tuple[pd.DataFrame, ImportReport]:
    report = ImportReport()
    return read_table(DATA / sample, normalize=False, report=report, **kw), report


@pytest.mark.parametrize(("sample", "kind", "label", "key"), SAMPLES)
def test_every_real_export_gives_the_recorded_questions_and_answers(sample, kind, label, key):
    frame, report = read(sample)
    assert (report.format, report.title) == (kind, label)
    cases = truth(sample)
    expected = {c: (t["question"], t["answer"]) for c, t in answered(cases).items()}
    if sample == "mlflow/trace.json":  # one trace
        expected = {c: v for c, v in expected.items() if c == "pipeline-json"}
    if key is None:  # the export keeps no case: the pairs, as a multiset
        pairs = sorted(zip(frame["user_input"], frame["response"]))
        assert pairs == sorted(expected.values())
    else:
        got = {row[key]: (row["user_input"], row["response"]) for _, row in frame.iterrows()}
        assert got == expected
    # what was skipped, and why, is what the truth says should be (a dataset holds only the
    # calls that answered)
    skipped = {why: n for (_, why), n in report.skipped.items() if why}
    if sample != "mlflow/trace.json" and not sample.startswith("phoenix/dataset"):
        skips = [t.get("skip") for t in cases.values()]
        if sample != "openai/chat.jsonl":  # a chat log keeps the calls that got a reply
            assert skipped.get("that failed", 0) == skips.count("failed")
        unanswered = skipped.get("without an answer", 0) + skipped.get(
            "without an assistant reply", 0
        )
        assert unanswered == skips.count("no answer")


@pytest.mark.parametrize(("sample", "kind"), [(s[0], s[1]) for s in SAMPLES])
def test_the_format_can_be_named_and_an_upload_reads_the_same(sample, kind):
    frame, report = read(sample)
    named, again = read(sample, source_format=kind)
    pd.testing.assert_frame_equal(frame, named)
    assert again.describe().endswith(report.describe().split(": ", 1)[1])
    if (DATA / sample).is_file():
        uploaded = read_table_bytes(
            (DATA / sample).read_bytes(), Path(sample).name, normalize=False
        )
        pd.testing.assert_frame_equal(frame, uploaded)


def test_phoenix_frames_keep_span_ids_and_times_in_every_shape():
    parquet, _ = read("phoenix/spans.parquet")
    index = pd.read_parquet(DATA / "phoenix/spans.parquet")
    assert index.index.name == "context.span_id" and "context.span_id" in index.columns
    by_shape = {
        name: read(f"phoenix/{name}")[0].set_index("span_id")
        for name in (
            "spans.parquet",
            "spans.csv",
            "spans.jsonl",
            "rest_spans.json",
            "otlp_spans.json",
        )
    }
    for name, frame in by_shape.items():
        assert set(frame.index) == set(parquet["span_id"]), name
        # epoch milliseconds (spans.jsonl), nanoseconds (OTLP), Timestamps: all ISO text
        reference = by_shape["spans.parquet"]["start_time"]
        for span_id, start in frame["start_time"].items():
            same = pd.Timestamp(start).floor("ms") == pd.Timestamp(reference[span_id]).floor("ms")
            assert same, (name, span_id)
        assert frame["trace_id"].notna().all()
    jsonl = [json.loads(line) for line in (DATA / "phoenix/spans.jsonl").read_text().splitlines()]
    assert isinstance(jsonl[0]["start_time"], int)  # what pandas wrote: epoch ms


def test_structured_replies_are_kept_as_their_json_text():
    expected = truth("phoenix/spans.parquet")["structured-output"]["answer"]
    assert json.loads(expected)["question"]  # the reply is JSON
    for sample, key in [
        ("phoenix/spans.parquet", "metadata.case"),
        ("phoenix/otlp_spans.json", "metadata.case"),
        ("mlflow/search_traces.parquet", "tags.case"),
        ("openai/chat.jsonl", "metadata.case"),
    ]:
        frame, _ = read(sample)
        row = frame[frame[key] == "structured-output"].iloc[0]
        assert row["response"] == truth(sample)["structured-output"]["answer"], sample
    # and inside a payload: the text, not the object; envelopes and errors are not replies
    reply = '{"question": "Q?", "noncommittal": 0}'
    message = {"role": "assistant", "content": reply}
    assert text_of({"choices": [{"message": message}]}, "a") == reply
    assert text_of(reply, "a") == reply
    assert text_of({"question": "Q?", "noncommittal": 0}, "a") == reply
    assert text_of('{"answer": "A.", "sources": []}', "a") == "A."
    assert text_of('{"error": "timeout"}', "a") == ""
    assert text_of('{"choices": [{"message": {"role": "assistant", "content": null}}]}', "a") == ""


def test_python_reprs_in_a_csv_are_read_or_flagged(tmp_path):
    csv_rows = pd.read_csv(DATA / "phoenix/spans.csv", dtype=str, keep_default_na=False)
    reprs = csv_rows["attributes.llm.output_messages"]
    assert reprs.str.startswith("[{'message.").any()  # what pandas wrote
    frame, _ = read("phoenix/spans.csv")
    assert not frame["response"].str.startswith("[{").any()
    assert frame["metadata.case"].notna().all()  # {'case': ...} read back as a dict
    # a repr that cannot be read back (numpy's, with no commas) is flagged, not scored quietly
    table = pd.DataFrame(
        {
            "user_input": ["What is the WAN port?"],
            "response": ["[{'message.role': 'assistant'} {'message.content': 'The blue one.'}]"],
        }
    )
    (problem,) = inspect_rows(table)
    assert problem.problem.startswith("response looks like a Python list or dict")
    assert problem.problem.endswith("export the table as JSON or Parquet")


def test_a_batch_is_joined_on_custom_id_in_any_order_and_across_chunks(tmp_path):
    batch = DATA / "openai/batch"
    whole, report = read("openai/batch")
    lines = [
        line
        for name in ("output.jsonl", "errors.jsonl", "input.jsonl")
        for line in (batch / name).read_text().splitlines()
    ]
    one = tmp_path / "batch.jsonl"  # `cat output.jsonl errors.jsonl input.jsonl > batch.jsonl`
    one.write_text("\n".join(lines) + "\n")
    chunks = list(iter_table(one, chunk_rows=4, normalize=False, report=(again := ImportReport())))
    joined = pd.concat(chunks, ignore_index=True)
    assert sorted(joined["custom_id"]) == sorted(whole["custom_id"])
    assert (again.found, again.skipped) == (report.found, report.skipped)
    # only the input file: said in one line
    with pytest.raises(InputError) as err:
        read_table(batch / "input.jsonl")
    assert str(err.value) == (
        "'input.jsonl' has no question/answer pair to score (OpenAI batch requests: 0 "
        "question/answer pairs found, 18 requests without a response (give the output file "
        "too) skipped): give the batch's input file and its output file (one folder, or one file)"
    )
    # a folder of files of different types
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    (mixed / "a.jsonl").write_text((batch / "input.jsonl").read_text())
    (mixed / "b.csv").write_text("question,answer\nQ?,A.\n")
    with pytest.raises(InputError, match=r"nor a folder of files of one type \(files of 2 types"):
        read_table(mixed)


def test_the_cli_scores_a_batch_folder_and_names_a_wrong_format(tmp_path, capsys, toy_server):
    out = tmp_path / "batch.csv"
    args = ["score", str(DATA / "openai/batch"), "-o", str(out), "-q", *cli_backends(toy_server)]
    assert main(args) == 0
    err = capsys.readouterr().err
    assert "input           3 files, OpenAI batch requests: 15 question/answer pairs found" in err
    scored = pd.read_csv(out)
    assert len(scored) == 15 and scored["score"].notna().all()
    # the requests' model field, the variant inside, is written under its own name
    assert {"custom_id", "request_id", "model", "tokens"} <= set(scored.columns)
    assert "variant" not in scored.columns and set(scored["model"]) == {"toy-chat"}
    args = [
        "score",
        str(DATA / "phoenix/spans.parquet"),
        "-o",
        str(tmp_path / "x.csv"),
        "--format",
        "mlflow",
        *cli_backends(toy_server),
    ]
    assert main(args) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines == [
        "error: 'spans.parquet' cannot be read as 'mlflow' (none of its first records has a "
        "request or a response): set the format to auto, or to the tool that wrote it"
    ]


def test_epoch_times_in_any_unit_are_read_as_times(tmp_path):
    from relevancy.io.importers._payloads import as_time

    iso = "2023-11-14T22:13:20+00:00"
    assert [
        as_time(v)
        for v in (
            1_700_000_000,
            1_700_000_000_000,
            1_700_000_000_000_000,
            1_700_000_000_000_000_000,
            "1700000000000",
        )
    ] == [iso] * 5
    assert (as_time(42), as_time("2025-01-01"), as_time(None)) == (42, "2025-01-01", None)
    traces = json.loads((DATA / "langfuse_traces.json").read_text())["data"]
    for trace in traces:  # what a JSON export without date formatting holds
        trace["timestamp"] = int(pd.Timestamp(trace["timestamp"]).timestamp() * 1000)
    (tmp_path / "traces.json").write_text(json.dumps(traces))
    frame = read_table(tmp_path / "traces.json")
    assert frame["timestamp"].str.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d").all()


def test_an_mlflow_export_without_spans_is_read_from_its_previews():
    # search_traces(include_spans=False): no spans, only each trace's previews (the last user
    # turn's text and the reply's, cut at 1,000 characters) and its metadata's copies (cut at 250)
    frame, report = read("mlflow/search_traces_no_spans.json")
    cases = answered(truth("mlflow/search_traces_no_spans.json"))
    got = {row["tags.case"]: (row["user_input"], row["response"]) for _, row in frame.iterrows()}
    assert set(got) == set(cases)  # the tool call and the empty reply have no answer
    for case, (question, answer) in got.items():
        assert answer == cases[case]["answer"], case
        if case == "content-parts":  # MLflow's preview keeps the first text part only
            assert cases[case]["question"].startswith(question + "\n")
        else:
            assert question == cases[case]["question"], case
    skipped = {why: n for (_, why), n in report.skipped.items()}
    assert skipped == {"without an answer": 2, "that failed": 2}


def test_a_cut_preview_is_skipped_not_scored(tmp_path):
    from relevancy.io.importers.mlflow import PREVIEW_LENGTHS, is_cut

    rows = json.loads((DATA / "mlflow/search_traces_no_spans.json").read_text())
    trace = json.loads(rows[0]["trace"])
    long_answer = "Hold RESET for ten seconds. " * 60
    cut = long_answer[: PREVIEW_LENGTHS[1] - 3] + "..."
    assert is_cut(cut) and not is_cut(long_answer) and is_cut('{"id": "chatcmpl-1", "cho')
    trace["info"]["response_preview"] = cut
    trace["info"]["trace_metadata"]["mlflow.traceOutputs"] = json.dumps(long_answer)[:247] + "..."
    trace["info"]["state"] = "OK"
    path = tmp_path / "cut.json"
    path.write_text(json.dumps([dict(rows[0], trace=json.dumps(trace))] + rows[1:3]))
    report = ImportReport()
    frame = read_table(path, normalize=False, report=report)
    assert len(frame) == 2 and cut not in set(frame["response"])
    assert (
        "whose question or answer is cut short in the export (export with include_spans=True)"
    ) in report.describe()


def test_redacted_spans_are_not_scored_and_say_why():
    report = ImportReport()
    with pytest.raises(InputError) as caught:
        read_table(DATA / "phoenix/spans_redacted.jsonl", normalize=False, report=report)
    answered_cases = len(answered(truth("phoenix/spans.parquet")))
    message = str(caught.value)
    assert (
        f"0 question/answer pairs found, {answered_cases} spans with the question redacted "
        "by the tracing (__REDACTED__) skipped"
    ) in message
    assert message.endswith(
        "the tracing hid them (OPENINFERENCE_HIDE_INPUTS, ..._HIDE_OUTPUTS): "
        "score spans traced without it"
    )
