"""Reading tables in every format, column aliases, clear errors, writing results."""

import csv
import json

import pandas as pd
import pytest

from relevancy import (
    InputError,
    QuestionScore,
    RelevancyResult,
    read_table,
    results_to_frame,
    write_results,
)
from relevancy.cli import main
from relevancy.runs import RunStore

from helpers import cli_backends

RECORDS = [
    {"question": "Where is France?", "answer": "In Europe.", "variant": "A", "id": "q1"},
    {"question": "What is 2+2?", "answer": "4", "variant": "B", "id": "q2"},
]


@pytest.mark.parametrize("suffix", [".csv", ".json", ".jsonl", ".parquet", ".tsv"])
def test_read_every_format(tmp_path, suffix):
    df = pd.DataFrame(RECORDS)
    path = tmp_path / f"in{suffix}"
    if suffix == ".csv":
        df.to_csv(path, index=False)
    elif suffix == ".tsv":
        df.to_csv(path, index=False, sep="\t")
    elif suffix == ".json":
        path.write_text(json.dumps(RECORDS))
    elif suffix == ".jsonl":
        df.to_json(path, orient="records", lines=True)
    else:
        df.to_parquet(path)
    out = read_table(path)
    assert list(out.columns[:4]) == ["user_input", "response", "variant", "id"]
    assert out["user_input"].tolist() == ["Where is France?", "What is 2+2?"]


def test_ragas_dataset_layout(tmp_path):
    path = tmp_path / "ragas.json"
    path.write_text(
        json.dumps(
            {
                "user_input": ["Where is France?"],
                "response": ["In Europe."],
                "retrieved_contexts": [["France is a country in Europe."]],
            }
        )
    )
    out = read_table(path)
    assert out.loc[0, "response"] == "In Europe."
    assert "retrieved_contexts" in out.columns


def test_missing_column_names_it_and_lists_found(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("question,text\nq,a\n")
    with pytest.raises(InputError) as err:
        read_table(path)
    assert "missing column 'response'" in str(err.value)
    assert "'question', 'text'" in str(err.value)


def test_csv_with_bom_and_semicolons(tmp_path):
    path = tmp_path / "semi.csv"
    path.write_bytes("\ufeffquestion;answer\nWo ist Paris?;In Frankreich.\n".encode())
    assert read_table(path).loc[0, "user_input"] == "Wo ist Paris?"


def test_json_object_is_rejected_with_fix(tmp_path):
    path = tmp_path / "obj.json"
    path.write_text('{"question": "q", "answer": "a"}')
    with pytest.raises(InputError, match="list of records"):
        read_table(path)


def test_unknown_extension_and_missing_file(tmp_path):
    (tmp_path / "x.xlsx").write_text("x")
    with pytest.raises(InputError, match="unsupported file type '.xlsx'"):
        read_table(tmp_path / "x.xlsx")
    with pytest.raises(InputError, match="file not found"):
        read_table(tmp_path / "nope.csv")


def _result(value=0.5):
    return RelevancyResult(
        user_input="q",
        response='=HYPERLINK("http://x")',
        value=value,
        questions=[QuestionScore("What?", 0.5, False)],
        llm="fake",
        embeddings="fake",
    )


@pytest.mark.parametrize("suffix", [".csv", ".json", ".jsonl", ".parquet"])
def test_write_results_round_trip(tmp_path, suffix):
    source = pd.DataFrame({"user_input": ["q", "q"], "response": ["a", "b"], "variant": ["A", "B"]})
    frame = results_to_frame([_result(), _result(float("nan"))], source)
    path = write_results(frame, tmp_path / f"out{suffix}")
    back = read_table(path)
    assert back["variant"].tolist() == ["A", "B"]
    assert json.loads(back.loc[0, "generated_questions"]) == ["What?"]
    assert float(back.loc[0, "score"]) == 0.5


def test_csv_export_neutralises_formulas(tmp_path):
    frame = results_to_frame([_result()])
    path = write_results(frame, tmp_path / "out.csv")
    text = path.read_text()
    assert "'=HYPERLINK" in text
    assert ",=HYPERLINK" not in text and '"=HYPERLINK' not in text


# Every start a spreadsheet would run as a formula (or, for tab and carriage return, that some
# use to smuggle one past a check); the export prefixes each with a quote.
FORMULAS = ["=1+2", "+1+2", "-1+2", "@SUM(A1:A2)", "\t=1+2", "\r=1+2"]


def _read_csv_cells(path):
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


@pytest.mark.parametrize("formula", FORMULAS, ids=["equals", "plus", "minus", "at", "tab", "cr"])
def test_csv_export_neutralises_every_formula_start(tmp_path, formula):
    results = [
        RelevancyResult(
            user_input=formula,
            response=formula,
            value=-0.25,
            questions=[QuestionScore(formula, -0.25, False)],
            llm="fake",
            embeddings="fake",
        )
    ]
    source = pd.DataFrame(
        {"user_input": [formula], "response": [formula], "note": [formula], "offset": [-3]}
    )
    path = write_results(results_to_frame(results, source), tmp_path / "out.csv")
    (row,) = _read_csv_cells(path)
    for column in ("user_input", "response", "note"):
        assert row[column] == "'" + formula, column
    # numbers stay numbers, negative ones included
    assert row["score"] == "-0.25" and row["offset"] == "-3"
    assert json.loads(row["similarities"]) == [-0.25]
    # text that only contains the characters later on is left alone
    assert json.loads(row["generated_questions"]) == [formula]


def test_csv_export_leaves_ordinary_text_and_numbers_alone(tmp_path):
    source = pd.DataFrame(
        {
            "user_input": ["What is 1+1?", "a=b?"],
            "response": ["2 (not -2).", "Yes @home."],
            "count": [-7, 12],
            "ratio": [-0.5, 1e-9],
        }
    )
    results = [
        RelevancyResult(user_input=u, response=r, value=v, llm="fake", embeddings="fake")
        for u, r, v in zip(source["user_input"], source["response"], [-0.125, float("nan")])
    ]
    path = write_results(results_to_frame(results, source), tmp_path / "out.csv")
    rows = _read_csv_cells(path)
    assert [r["user_input"] for r in rows] == ["What is 1+1?", "a=b?"]
    assert [r["response"] for r in rows] == ["2 (not -2).", "Yes @home."]
    assert [r["count"] for r in rows] == ["-7", "12"]
    back = pd.read_csv(path)
    assert back["ratio"].tolist() == [-0.5, 1e-9]
    assert back["score"].iloc[0] == -0.125 and pd.isna(back["score"].iloc[1])


def test_csv_written_in_chunks_is_neutralised_in_every_chunk(tmp_path):
    from relevancy.io import TableWriter

    frames = [pd.DataFrame({"text": [f], "n": [-i]}) for i, f in enumerate(FORMULAS)]
    with TableWriter(tmp_path / "chunks.csv") as writer:
        for frame in frames:
            writer.write(frame)
    rows = _read_csv_cells(tmp_path / "chunks.csv")
    assert [r["text"] for r in rows] == ["'" + f for f in FORMULAS]
    assert [r["n"] for r in rows] == ["0", "-1", "-2", "-3", "-4", "-5"]


@pytest.mark.parametrize("suffix", [".json", ".jsonl"])
def test_json_is_written_a_slice_at_a_time_with_the_same_rows(tmp_path, monkeypatch, suffix):
    # a chunk's JSON text is made a few rows at a time (memory); the file holds every row
    # once, in order, across slices and chunks, as one valid document or one line a row
    import relevancy.io.writer
    from relevancy.io import TableWriter

    monkeypatch.setattr(relevancy.io.writer, "JSON_SLICE_ROWS", 2)
    chunks = [pd.DataFrame({"text": [f"row {i}\nline", "é"], "n": [i, -i]}) for i in range(3)]
    chunks.append(pd.DataFrame({"text": ["last"], "n": [9]}))
    path = tmp_path / f"out{suffix}"
    with TableWriter(path) as writer:
        for frame in chunks:
            writer.write(frame)
    text = path.read_text(encoding="utf-8")
    if suffix == ".json":
        got = json.loads(text)
    else:
        assert text.endswith("\n") and "\n\n" not in text
        got = [json.loads(line) for line in text.splitlines()]
    assert got == pd.concat(chunks, ignore_index=True).to_dict(orient="records")
    assert writer.rows == 7


# --- formulas hidden after whitespace, in full-width forms, and in header cells (issue 25) ---
HIDDEN_FORMULAS = [
    " =1+2",
    "\n=1+2",
    "\r\n+1+2",
    "  \n @SUM(A1)",
    "\u3000-1+2",
    "\uff1d1+2",
    "\uff0b1+2",
    "\uff0d1+2",
    "\uff20SUM(A1)",
    " \uff1d1+2",
    "\u200b=1+2",
]


@pytest.mark.parametrize("formula", HIDDEN_FORMULAS)
def test_csv_export_neutralises_formulas_after_whitespace_and_full_width(tmp_path, formula):
    source = pd.DataFrame({"user_input": ["q"], "response": ["a"], "note": [formula]})
    results = [RelevancyResult(user_input="q", response="a", value=0.5, llm="f", embeddings="f")]
    path = write_results(results_to_frame(results, source), tmp_path / "out.csv")
    (row,) = _read_csv_cells(path)
    assert row["note"] == "'" + formula


HEADER = '=HYPERLINK("http://evil","hdr")'


def _assert_header_defused(path):
    with open(path, newline="", encoding="utf-8") as fh:
        header = next(csv.reader(fh))
    assert HEADER not in header and "'" + HEADER in header
    assert "'\uff1dcmd" in header and "\uff1dcmd" not in header
    assert "user_input" in header and "score" in header  # ordinary names untouched


def test_cli_and_store_exports_neutralise_header_cells(tmp_path, toy_server):
    data = tmp_path / "in.csv"
    pd.DataFrame(
        {
            "question": ["What is the capital of France?"],
            "answer": ["Paris is the capital."],
            HEADER: ["x"],
            "\uff1dcmd": ["y"],
        }
    ).to_csv(data, index=False)
    out = tmp_path / "x.csv"
    code = main(
        ["score", str(data), "-o", str(out), "-q", "--save-run", "hdr", *cli_backends(toy_server)]
    )
    assert code == 0
    _assert_header_defused(out)
    store = RunStore()
    (run,) = store.list_runs()
    _assert_header_defused(store.export(run.id, tmp_path / "export.csv"))
