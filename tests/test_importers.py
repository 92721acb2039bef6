"""Importing what users already have: Langfuse, LangSmith, Phoenix, MLflow, OpenAI chat logs and
Hugging Face datasets, read from the sample files in tests/data, detected from their content,
overridable, with one-line errors. The Phoenix, MLflow and OpenAI samples are made by the real
tools (tests/data/make_*_samples.py; every shape of them is checked against their truth in
test_tool_exports.py); Langfuse and LangSmith ones are written by hand from their documented
export shapes (no tool here can make them)."""

from __future__ import annotations

import json
import shutil

import pandas as pd
import pytest

from relevancy import InputError, apply_mapping, read_table, read_table_bytes, write_results
from relevancy.cli import main
from relevancy.dashboard.views.datasets import read_upload, validate
from relevancy.io import iter_table
from relevancy.io.importers import ImportReport, detect, text_of
from relevancy.paths import default_store_path
from relevancy.runs import RunStore

from helpers import ROOT, app, cli_backends, ok, visit

DATA = ROOT / "tests" / "data"

# file, detected format, the one-line description, first question, extra columns kept
SAMPLES = [
    (
        "langfuse_traces.json",
        "langfuse",
        "Langfuse traces: 4 question/answer pairs found, 2 traces without an answer skipped, "
        "1 trace without a question skipped",
        "How do I rotate an API key without downtime?",
        {
            "trace_id",
            "name",
            "timestamp",
            "release",
            "session_id",
            "user_id",
            "tags",
            "metadata.prompt_version",
        },
    ),
    (
        "langfuse_observations.json",
        "langfuse",
        "Langfuse observations: 3 question/answer pairs found, 3 observations other than "
        "generations skipped, 1 generation that failed skipped, 1 generation without an answer "
        "skipped (generations only)",
        "How do I invite a teammate to my workspace?",
        {"observation_id", "trace_id", "model", "prompt_name", "prompt_version", "start_time"},
    ),
    (
        "langsmith_runs.jsonl",
        "langsmith",
        "LangSmith runs: 3 question/answer pairs found, 4 child runs skipped, 1 run that failed "
        "skipped (each trace read from its root run)",
        "How do I reset two-factor authentication for a user?",
        {
            "run_id",
            "trace_id",
            "run_type",
            "start_time",
            "tags",
            "metadata.prompt_version",
            "example_id",
        },
    ),
    (
        "phoenix/spans.parquet",
        "phoenix",
        "Phoenix spans: 20 question/answer pairs found, 2 spans without an answer skipped, "
        "2 spans that failed skipped, 10 child spans skipped (each trace read from its root span)",
        "How do I reset the router to factory settings?",
        {"span_id", "trace_id", "span_kind", "start_time", "model", "tokens", "metadata.case"},
    ),
    (
        "mlflow/search_traces.jsonl",
        "mlflow",
        "MLflow traces: 20 question/answer pairs found, 2 traces without an answer skipped, "
        "2 traces that failed skipped",
        "How do I reset the router to factory settings?",
        {"trace_id", "state", "request_time", "execution_ms", "model", "tags.case"},
    ),
    (
        "openai/chat.jsonl",
        "openai-chat",
        "OpenAI chat messages: 15 question/answer pairs found, 2 conversations without an "
        "assistant reply skipped",
        "How do I reset the router to factory settings?",
        {"system_prompt", "turns", "metadata.case"},
    ),
    (
        "hf_qa",
        "table",
        "Hugging Face dataset (splits train, test, in the column 'split'): 8 rows, columns "
        "matched by name",
        "How long should pasta rest after draining?",
        {"model", "source", "split"},
    ),
    (
        "hf_qa/train",
        "table",
        "Hugging Face dataset: 6 rows, columns matched by name",
        "How long should pasta rest after draining?",
        {"model", "source"},
    ),
    (
        "hf_qa/test/data-00000-of-00001.arrow",
        "table",
        "Hugging Face dataset: 2 rows, columns matched by name",
        "Is it safe to wash raw chicken?",
        {"model", "source"},
    ),
    (
        "hf_qa_train.parquet",
        "table",
        "Hugging Face dataset: 6 rows, columns matched by name",
        "How long should pasta rest after draining?",
        {"model", "source"},
    ),
]


def _read(name: str, **kw) -> tuple[pd.DataFrame, ImportReport]:
    report = ImportReport()
    return read_table(DATA / name, normalize=False, report=report, **kw), report


@pytest.mark.parametrize(("name", "kind", "line", "first", "extras"), SAMPLES)
def test_every_sample_is_detected_and_imported(name, kind, line, first, extras):
    frame, report = _read(name)
    assert (report.format, report.detected) == (kind, True)
    assert report.describe() == line
    assert len(frame) == report.found
    question = "question" if kind == "table" else "user_input"
    answer = "answer" if kind == "table" else "response"
    assert frame[question].iloc[0] == first
    assert frame[answer].map(lambda a: isinstance(a, str) and a.strip() != "").all()
    assert extras <= set(frame.columns), extras - set(frame.columns)
    # mapped by name like any table: the pairs are scoreable as they are
    mapped = read_table(DATA / name)
    assert mapped["user_input"].tolist() == frame[question].tolist()
    assert mapped["response"].tolist() == frame[answer].tolist()


@pytest.mark.parametrize("name", [s[0] for s in SAMPLES if (DATA / s[0]).is_file()])
def test_an_upload_reads_like_the_file(name):
    report, again = ImportReport(), ImportReport()
    from_file = read_table(DATA / name, normalize=False, report=report)
    uploaded = read_table_bytes((DATA / name).read_bytes(), name, normalize=False, report=again)
    pd.testing.assert_frame_equal(from_file, uploaded)
    assert again.describe() == report.describe()


def test_what_each_pair_holds():
    traces, _ = _read("langfuse_traces.json")
    row = traces.iloc[1]  # {"args": [...], "kwargs": {}} from the @observe decorator
    assert row["user_input"] == "Which file formats can I import on the Data page?"
    assert (row["tags"], row["metadata.prompt_version"]) == ("support", "a")
    billing = traces.iloc[2]  # OpenAI messages in, one assistant message out
    assert billing["user_input"] == "Why was I charged twice this month?"
    assert billing["response"].startswith("The second charge is the annual support plan")
    runs, _ = _read("langsmith_runs.jsonl")
    graph = runs.iloc[1]  # LangGraph: the last AI message with text, after the tool call
    assert graph["response"] == "The search API allows 60 requests per minute for each API key."
    assert runs["example_id"].iloc[2] == "5e6f7a8b-1c2d-4e3f-9a0b-c1d2e3f4a5b6"
    spans, _ = _read("phoenix/spans.parquet")
    index = pd.read_parquet(DATA / "phoenix/spans.parquet").index  # the span ids, index and column
    assert spans["span_id"].iloc[0] in set(index)
    assert spans["start_time"].iloc[0].startswith("20") and "T" in spans["start_time"].iloc[0]
    chats, _ = _read("openai/chat.jsonl")
    multi = chats[chats["metadata.case"] == "multi-turn"].iloc[0]
    assert multi["user_input"] == "Where do I change it again if I forget it?"  # last user turn
    assert multi["system_prompt"].startswith("You answer questions about the Aurora X2")
    assert multi["turns"] == 2
    tool = chats[chats["metadata.case"] == "tool-result"].iloc[0]  # the reply after the tool
    assert tool["user_input"] == "How do I update the firmware by hand?"


def test_a_chat_answer_is_the_last_assistant_reply_after_the_last_user_turn(tmp_path):
    conversations = [
        {
            "messages": [
                {"role": "user", "content": "Old question?"},
                {"role": "assistant", "content": "Old answer."},
                {"role": "user", "content": "How do I reset it?"},
                {"role": "assistant", "content": "Let me look that up."},
                {"role": "assistant", "content": "Hold the button for ten seconds."},
            ]
        },
        {
            "messages": [
                {"role": "user", "content": "Which port?"},
                {"role": "assistant", "content": ""},
                {"role": "tool", "content": '{"port": 8080}'},
                {"role": "assistant", "content": "Port 8080."},
            ]
        },
    ]
    path = tmp_path / "chat.jsonl"
    path.write_text("".join(json.dumps(c) + "\n" for c in conversations))
    report = ImportReport()
    frame = read_table(path, normalize=False, report=report)
    assert report.format == "openai-chat"
    assert frame["user_input"].tolist() == ["How do I reset it?", "Which port?"]
    # independently: the last non-empty assistant message of each conversation
    last = [
        [m["content"] for m in c["messages"] if m["role"] == "assistant" and m["content"]][-1]
        for c in conversations
    ]
    assert frame["response"].tolist() == last == ["Hold the button for ten seconds.", "Port 8080."]


def test_a_langsmith_runs_model_is_its_ls_model_name_first(tmp_path):
    def run(i: int, extra: dict) -> dict:
        return {
            "id": f"r{i}",
            "trace_id": f"t{i}",
            "name": "chain",
            "run_type": "chain",
            "parent_run_id": None,
            "inputs": {"question": f"Question {i}?"},
            "outputs": {"output": f"Answer {i}."},
            "extra": extra,
            "start_time": "2026-01-01T00:00:00",
        }

    runs = [
        run(
            0,
            {
                "metadata": {"ls_model_name": "gpt-4o-mini", "ls_provider": "openai"},
                "invocation_params": {"model": "gpt-4o", "model_name": "gpt-4o"},
            },
        ),
        run(1, {"invocation_params": {"model_name": "claude-x"}}),
        run(2, {"metadata": {"ls_model_name": "llama-3"}}),
    ]
    path = tmp_path / "runs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in runs))
    report = ImportReport()
    frame = read_table(path, normalize=False, report=report, source_format="langsmith")
    assert report.format == "langsmith"
    assert frame["model"].tolist() == ["gpt-4o-mini", "claude-x", "llama-3"]
    assert "metadata.ls_model_name" not in frame.columns


def test_extra_columns_are_usable_as_variant_and_kept_with_the_results():
    # Langfuse generations: the model is the variant by name (model -> variant)
    observations = read_table(DATA / "langfuse_observations.json")
    assert observations["variant"].tolist() == ["gpt-4o-mini", "gpt-4o", "gpt-4o-mini"]
    assert observations["prompt_version"].tolist() == [3, 4, 3]
    # Langfuse traces: the prompt version from the metadata, chosen as the variant
    traces, _ = _read("langfuse_traces.json")
    mapping = {
        "user_input": "user_input",
        "response": "response",
        "variant": "metadata.prompt_version",
        "id": "trace_id",
    }
    mapped = apply_mapping(traces, mapping)
    assert mapped["variant"].tolist() == ["b", "a", "b", "a"]
    assert mapped["id"].iloc[0] == "7f3c2b9e-1d4a-4c1e-9a51-0c8e2f6d1a01"
    issues = validate(traces, mapping)
    assert any(i.message == "2 variant(s): b (2), a (2)." for i in issues)
    # a Hugging Face dataset dict: the split is a column like any other
    hf = read_table(DATA / "hf_qa")
    assert hf.groupby("split").size().to_dict() == {"test": 2, "train": 6}
    assert set(hf["variant"]) == {"chef-small", "chef-large"}


def test_chunks_are_converted_like_the_whole_file():
    for name in ("langsmith_runs.jsonl", "phoenix/spans.parquet", "hf_qa"):
        report = ImportReport()
        chunks = list(iter_table(DATA / name, chunk_rows=2, normalize=False, report=report))
        whole, once = _read(name)
        together = pd.concat(chunks, ignore_index=True)
        assert together["user_input" if once.format != "table" else "question"].tolist() == (
            whole["user_input" if once.format != "table" else "question"].tolist()
        )
        assert report.describe() == once.describe()


def test_a_first_chunk_with_nothing_to_keep_does_not_set_the_columns(tmp_path):
    lines = (DATA / "langsmith_runs.jsonl").read_text().splitlines()
    failed_first = tmp_path / "runs.jsonl"  # the failed trace (root and child) comes first
    failed_first.write_text("\n".join(lines[5:7] + lines[:5] + lines[7:]) + "\n")
    chunks = list(iter_table(failed_first, chunk_rows=2))
    assert sum(map(len, chunks)) == 3
    assert len(chunks[0]) == 1 and {"run_id", "trace_id"} <= set(chunks[0].columns)


def test_a_csv_export_reads_like_the_json_one(tmp_path):
    traces = pd.DataFrame(json.loads((DATA / "langfuse_traces.json").read_text())["data"])
    for column in ("input", "output", "metadata", "tags", "observations", "scores"):
        traces[column] = traces[column].map(json.dumps)  # JSON text, null as "null"
    traces.to_csv(tmp_path / "traces.csv", index=False)
    report = ImportReport()
    frame = read_table(tmp_path / "traces.csv", report=report)
    assert report.describe() == SAMPLES[0][2]
    assert frame["user_input"].tolist() == read_table(DATA / SAMPLES[0][0])["user_input"].tolist()


def test_columns_of_mixed_types_are_written_as_text(tmp_path):
    chats = [
        {
            "messages": [
                {"role": "user", "content": f"Q{i}?"},
                {"role": "assistant", "content": f"A{i}."},
            ],
            "metadata": {"prompt": version},
        }
        for i, version in enumerate([3, "v4"])
    ]
    path = tmp_path / "chats.jsonl"
    path.write_text("\n".join(json.dumps(c) for c in chats))
    frame = read_table(path)
    assert frame["metadata.prompt"].tolist() == ["3", "v4"]
    write_results(frame, tmp_path / "out.parquet")  # Parquet takes one type per column
    assert pd.read_parquet(tmp_path / "out.parquet")["metadata.prompt"].tolist() == ["3", "v4"]


def test_chat_messages_in_a_parquet_file_or_a_hugging_face_file(tmp_path):
    chats = [json.loads(line) for line in (DATA / "openai/chat.jsonl").read_text().splitlines()]
    frame = pd.DataFrame({"messages": [json.dumps(c["messages"]) for c in chats]})
    frame.to_parquet(tmp_path / "chats.parquet")
    report = ImportReport()
    table = read_table(tmp_path / "chats.parquet", report=report)
    assert report.format == "openai-chat" and len(table) == 15
    # told it is a Hugging Face dataset: only the table or the chat layout is looked for
    report = ImportReport()
    read_table(tmp_path / "chats.parquet", source_format="hf", report=report)
    assert report.describe().startswith("Hugging Face dataset, OpenAI chat messages: 15 ")


def test_the_format_can_be_given():
    # a LangSmith export read as a plain table: its own columns, mapped by name
    frame, report = _read("langsmith_runs.jsonl", source_format="table")
    assert (report.format, report.detected, len(frame)) == ("table", False, 8)
    assert {"inputs", "outputs", "run_type"} <= set(frame.columns)
    # a JSON object holding one trace is one record
    single = json.loads((DATA / "langfuse_traces.json").read_text())["data"][0]
    one = read_table_bytes(json.dumps(single).encode(), "trace.json")
    assert one["user_input"].tolist() == ["How do I rotate an API key without downtime?"]
    with pytest.raises(InputError) as err:
        read_table(DATA / "langfuse_traces.json", source_format="langsmith")
    assert str(err.value) == (
        "'langfuse_traces.json' cannot be read as 'langsmith' (none of its first records has "
        "inputs or outputs): set the format to auto, or to the tool that wrote it"
    )
    with pytest.raises(InputError, match="the hf format reads a save_to_disk folder"):
        read_table(DATA / "openai/chat.jsonl", source_format="hf")
    with pytest.raises(InputError, match="unknown format 'csv'"):
        read_table(DATA / "openai/chat.jsonl", source_format="csv")
    # read as a table, chat records have no question column: the usual missing-column line
    with pytest.raises(InputError, match="^missing column 'user_input'"):
        read_table(DATA / "openai/chat.jsonl", source_format="table")


def _one_line(exc: pytest.ExceptionInfo) -> str:
    text = str(exc.value)
    assert "\n" not in text and len(text) < 400
    return text


def test_bad_and_partial_files_get_one_line(tmp_path):
    # cut in the middle of a line, as an interrupted download leaves it
    lines = (DATA / "langsmith_runs.jsonl").read_text().splitlines()
    cut = tmp_path / "runs.jsonl"
    cut.write_text("\n".join(lines[:5]) + "\n" + lines[5][:120] + "\n")
    report = ImportReport()
    frame = read_table(cut, report=report)  # the whole lines are read, the cut one listed
    assert len(frame) and report.n_bad_lines == 1
    assert report.describe_bad_lines()[0].startswith("line 6 skipped: not valid JSON (")
    only = tmp_path / "cut.jsonl"
    only.write_text(lines[5][:120] + "\n")
    with pytest.raises(InputError) as err:  # no whole line: nothing to read
        read_table(only)
    line = _one_line(err)
    assert line.startswith("'cut.jsonl' line 1 is not valid JSON (")
    assert line.endswith("give one JSON object per line (fix or remove that line)")
    # an export where nothing has an answer
    traces = json.loads((DATA / "langfuse_traces.json").read_text())
    for t in traces["data"]:
        t["output"] = None
    empty = tmp_path / "no_outputs.json"
    empty.write_text(json.dumps(traces))
    with pytest.raises(InputError) as err:
        read_table(empty)
    assert _one_line(err) == (
        "'no_outputs.json' has no question/answer pair to score (Langfuse traces: 0 "
        "question/answer pairs found, 6 traces without an answer skipped, 1 trace without a "
        "question skipped): export traces (or generations) that have both an input and an output"
    )
    with pytest.raises(InputError) as err:  # the dashboard reads the same way
        read_upload("no_outputs.json", empty.read_bytes())
    assert "has no question/answer pair to score" in _one_line(err)
    # Hugging Face folders: a data file missing, no state.json, a folder of something else
    folder = tmp_path / "hf_qa"
    shutil.copytree(DATA / "hf_qa", folder)
    (folder / "test" / "data-00000-of-00001.arrow").unlink()
    with pytest.raises(InputError) as err:
        read_table(folder)
    assert _one_line(err) == (
        "'hf_qa/test' is missing 'data-00000-of-00001.arrow' (listed in its state.json): copy "
        "the whole folder written by save_to_disk"
    )
    (folder / "train" / "state.json").unlink()
    with pytest.raises(InputError, match="'hf_qa/train' has no state.json"):
        read_table(folder)
    other = tmp_path / "photos"
    other.mkdir()
    with pytest.raises(InputError) as err:
        read_table(other)
    assert "is a folder but neither a Hugging Face dataset saved with save_to_disk" in _one_line(
        err
    )
    # an Arrow file cut short, and an Arrow file under another name
    data = (DATA / "hf_qa/train/data-00000-of-00001.arrow").read_bytes()
    with pytest.raises(InputError) as err:
        read_table_bytes(data[:300], "data.arrow")
    assert _one_line(err).startswith("'data.arrow' is not a readable Arrow file")
    with pytest.raises(InputError, match="is an Arrow file: give it a .arrow extension"):
        read_table_bytes(data, "data.csv")


def test_payload_shapes():
    lc_human = {
        "lc": 1,
        "type": "constructor",
        "id": ["langchain", "schema", "messages", "HumanMessage"],
        "kwargs": {"content": "Q?", "type": "human"},
    }
    assert text_of({"messages": [[lc_human]]}, "q") == "Q?"
    assert text_of({"generations": [[{"text": "A.", "type": "ChatGeneration"}]]}, "a") == "A."
    assert text_of([{"message.role": "user", "message.content": "Q?"}], "q") == "Q?"
    assert text_of([{"message": {"role": "assistant", "content": "A."}}], "a") == "A."
    assert text_of('"quoted"', "a") == "quoted"
    assert text_of("{not json", "a") == "{not json"
    assert text_of({"error": "timeout"}, "a") == ""
    assert text_of({"answer": None, "error": "timeout"}, "a") == ""
    assert text_of({"question": "Q?", "context": "long text"}, "q") == "Q?"
    conversation = [
        {"role": "user", "content": "Q1"},
        {"role": "assistant", "content": "A1"},
        {"role": "user", "content": "Q2"},
    ]
    assert (text_of(conversation, "q"), text_of(conversation, "a")) == ("Q2", "")
    assert detect([{"question": "q", "answer": "a"}]) == "table"
    assert detect([{"messages": conversation}, {"question": "x"}]) == "openai-chat"


# --- the command line and the dashboard --------------------------------------------------------
def test_cli_scores_a_langfuse_export_and_a_hugging_face_folder(tmp_path, capsys, toy_server):
    backends = cli_backends(toy_server)
    out = tmp_path / "traces.csv"
    args = [
        "score",
        str(DATA / "langfuse_traces.json"),
        "-o",
        str(out),
        "-q",
        "--save-run",
        "from langfuse",
        *backends,
    ]
    assert main(args) == 0
    first = capsys.readouterr()
    hf_out = tmp_path / "hf.parquet"
    args = ["score", str(DATA / "hf_qa"), "-o", str(hf_out), "-q", "--chunk-rows", "3", *backends]
    assert main(args) == 0
    second = capsys.readouterr()
    assert (
        "input           Langfuse traces: 4 question/answer pairs found, 2 traces without an "
        "answer skipped, 1 trace without a question skipped"
    ) in first.err
    scored = pd.read_csv(out)
    assert len(scored) == 4 and scored["score"].notna().all()
    assert {"trace_id", "timestamp", "tags", "metadata.prompt_version"} <= set(scored.columns)
    (run,) = RunStore(default_store_path()).list_runs()
    assert run.n_rows == 4 and "trace_id" in run.columns
    assert "input           Hugging Face dataset (splits train, test" in second.err
    hf = pd.read_parquet(hf_out)
    assert len(hf) == 8 and hf["split"].tolist() == ["train"] * 6 + ["test"] * 2
    # the dataset's model column, the variant inside, is written under its own name
    assert set(hf["model"]) == {"chef-small", "chef-large"} and "variant" not in hf.columns


def test_cli_format_option(tmp_path, capsys, toy_server):
    backends = cli_backends(toy_server)
    out = tmp_path / "runs.jsonl"
    args = [
        "score",
        str(DATA / "langsmith_runs.jsonl"),
        "-o",
        str(out),
        "-q",
        "--format",
        "langsmith",
        *backends,
    ]
    assert main(args) == 0
    assert "input           LangSmith runs: 3 question/answer pairs" in capsys.readouterr().err
    assert len(pd.read_json(out, lines=True)) == 3
    args = [
        "score",
        str(DATA / "openai/chat.jsonl"),
        "-o",
        str(tmp_path / "x.csv"),
        "--format",
        "table",
        *backends,
    ]
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: missing column 'user_input'")


def test_dataset_page_shows_what_was_detected():
    at = visit(app(), "1_Dataset.py")
    data = (DATA / "langfuse_traces.json").read_bytes()
    at.file_uploader(key="ds_upload").upload("traces.json", data, "application/json").run()
    ok(at)
    infos = [i.value.replace("\\", "") for i in at.info]
    assert (
        "Langfuse traces: 4 question/answer pairs found, 2 traces without an answer skipped, "
        "1 trace without a question skipped"
    ) in infos
    fmt = at.selectbox(key="ds_format")
    assert fmt.value == "auto" and fmt.options[0] == "auto-detected: Langfuse traces"
    assert at.selectbox(key="ds_map_user_input").value == "user_input"
    assert not at.button(key="ds_score").disabled
    # an extra column as the variant
    at.selectbox(key="ds_map_variant").set_value("metadata.prompt_version").run()
    assert "2 variant(s): b (2), a (2)." in [i.value for i in at.info]
    # overridden: read as a LangSmith export, it says why it cannot be
    at.selectbox(key="ds_format").set_value("langsmith").run()
    ok(at)
    assert any("cannot be read as 'langsmith'" in e.value.replace("\\", "") for e in at.error)
    # another file: its format is detected again
    chats = (DATA / "openai/chat.jsonl").read_bytes()
    at.file_uploader(key="ds_upload").upload("chats.jsonl", chats, "application/json").run()
    ok(at)
    assert not any("Cannot read this file" in e.value for e in at.error)
    assert at.selectbox(key="ds_format").options[0] == "auto-detected: OpenAI chat messages"
