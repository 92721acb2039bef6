"""Bad files: each gives one clear line naming the problem and the fix; no traceback."""

import io
import json
import zipfile

import pandas as pd
import pytest

from relevancy import InputError, inspect_rows, read_table, read_table_bytes
from relevancy.cli import main


def _xlsx_bytes() -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("[Content_Types].xml", "<Types/>")
        z.writestr("xl/workbook.xml", "<workbook/>")
    return buf.getvalue()


CASES = [
    ("empty.csv", b"", "is empty"),
    ("blank.csv", b"\n\n  \n", "is empty"),
    ("one.csv", b"question:answer\nq:a\n", "delimiter looks wrong"),
    ("latin1.csv", "question,answer\nqu\u00e9?,r\u00e9ponse\n".encode("latin-1"), "not UTF-8"),
    ("sheet.csv", _xlsx_bytes(), "spreadsheet (Excel) file"),
    ("old.csv", b"\xd0\xcf\x11\xe0" + b"\0" * 100, "spreadsheet (Excel) file"),
    ("obj.json", b'{"question": "q", "answer": "a"}', "not a list of records"),
    ("scalar.json", b"[1, 2, 3]", "not a JSON list of records"),
    ("broken.json", b'[{"question": "q",', "not valid JSON (line 1"),
    ("bad.jsonl", b"\n{oops}\n[1]\n", "line 2 is not valid JSON"),  # no line is a record
    ("cols.csv", b"prompt_text,reply\nq,a\n", "missing column 'user_input'"),
    ("x.xlsx", b"data", "unsupported file type '.xlsx'"),
    ("ragged.csv", b'question,answer\n"unterminated,a\n', "is not well-formed CSV"),
]


@pytest.mark.parametrize("name, data, message", CASES, ids=[c[0] for c in CASES])
def test_bad_file_gives_one_clear_line(name, data, message):
    with pytest.raises(InputError) as err:
        read_table_bytes(data, name)
    text = str(err.value)
    assert message in text and "\n" not in text
    assert name in text or message.startswith("missing column")


# Odd files that are read, and what is read from them.
READABLE = [
    # the delimiter is sniffed
    ("pipes.csv", b"question|answer\nq|a\n", ["user_input", "response"], ["q", "a"]),
    # two columns with one name: the first is the question, the second is kept under pandas'
    # de-duplicated name
    (
        "dup.csv",
        b"question,question,answer\nfirst,second,a\n",
        ["user_input", "question.1", "response"],
        ["first", "second", "a"],
    ),
]


@pytest.mark.parametrize("name, data, columns, row", READABLE, ids=[c[0] for c in READABLE])
def test_odd_but_readable_files(name, data, columns, row):
    frame = read_table_bytes(data, name)
    assert list(frame.columns) == columns
    assert frame.values.tolist() == [row]


def test_bom_is_ignored():
    frame = read_table_bytes("\ufeffquestion,answer\nq?,a\n".encode(), "bom.csv")
    assert list(frame.columns) == ["user_input", "response"]


def test_parquet_with_non_text_columns(tmp_path):
    path = tmp_path / "nums.parquet"
    pd.DataFrame({"question": [1, 2], "answer": [3.5, None]}).to_parquet(path)
    frame = read_table(path)
    # numbers are not questions: emptied (not scored) and listed as the rows' problems
    assert frame["user_input"].tolist() == ["", ""] and frame["response"].tolist() == ["", ""]
    problems = [(p.row, p.problem) for p in inspect_rows(frame)]
    assert (1, "user_input is a number (1), not text: not scored") in problems
    assert (1, "response is a number (3.5), not text: not scored") in problems
    assert (2, "response is empty") in problems
    nested = tmp_path / "nested.parquet"
    pd.DataFrame({"question": ["q"], "answer": [["a", "b"]]}).to_parquet(nested)
    with pytest.raises(InputError, match="holds ndarray values|holds list values") as err:
        read_table(nested)
    assert "--format" in str(err.value)  # a tool's export read as a table: name the tool


def test_parquet_renamed_to_csv(tmp_path):
    path = tmp_path / "data.parquet"
    pd.DataFrame({"question": ["q"], "answer": ["a"]}).to_parquet(path)
    with pytest.raises(InputError, match="is a Parquet file"):
        read_table_bytes(path.read_bytes(), "data.csv")


def test_row_problems_are_listed():
    frame = pd.DataFrame(
        {
            "user_input": ["q1", "", "q3", "q1", "q5"],
            "response": ["a", "a", " ", "a", "x" * 100_000],
        }
    )
    problems = [(p.row, p.problem) for p in inspect_rows(frame)]
    assert (2, "user_input is empty") in problems
    assert (3, "response is empty") in problems
    assert (4, "duplicate of row 1") in problems
    assert any(row == 5 and "100,000 characters" in text for row, text in problems)


def test_cli_scores_valid_rows_and_lists_bad_ones(tmp_path, capsys, monkeypatch):
    from relevancy import AnswerRelevancy
    from relevancy.testing.fakes import FakeEmbedder, FakeGenerator

    monkeypatch.setattr(
        "relevancy.cli.options.build_metric",
        lambda **settings: AnswerRelevancy(
            llm=FakeGenerator(), embeddings=FakeEmbedder(), cache=False
        ),
    )
    src = tmp_path / "mixed.jsonl"
    rows = [
        {"question": "Where is Paris?", "answer": "In France."},
        {"question": "Where is Rome?", "answer": None},
        {"question": "", "answer": "Somewhere."},
        {"question": "Where is Oslo?", "answer": "In Norway."},
    ]
    src.write_text("\n".join(json.dumps(r) for r in rows))
    out = tmp_path / "out.jsonl"
    assert main(["score", str(src), "-o", str(out), "-q"]) == 0
    captured = capsys.readouterr()
    assert "note: row 2: response is empty" in captured.err
    assert "note: row 3: user_input is empty" in captured.err
    assert "Traceback" not in captured.err
    table = pd.read_json(out, lines=True)
    assert table["score"].notna().tolist() == [True, False, False, True]
    assert "response is empty" in table.loc[1, "error"]
    assert "failed (  1)" in captured.out
    assert not (tmp_path / "out.jsonl.partial.jsonl").exists()
