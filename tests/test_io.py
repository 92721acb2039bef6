"""Reading tables in every format, column aliases, clear errors, writing results."""

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
