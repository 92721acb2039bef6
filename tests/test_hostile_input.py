"""Hostile and broken inputs (issue 25): deep JSON, a seeded fuzz over the readers, lines that
cannot be read skipped and listed, cells of the wrong type, messages that name the fix, the
preflight's second try, links from URLs."""

from __future__ import annotations

import json
import random

import pandas as pd
import pytest

from relevancy import AnswerRelevancy, ConfigError, InputError, read_table, read_table_bytes
from relevancy.cli import main
from relevancy.dashboard.views.links import parse_link
from relevancy.io.importers import ImportReport
from relevancy.scoring.config import build_metric, preflight
from relevancy.testing.fakes import FakeEmbedder, FakeGenerator

from helpers import cli_backends

DEEP = 100_000


@pytest.fixture
def fake_backends(monkeypatch):
    """The CLI scores with the fake generator and embedder (logic only: fast, offline)."""
    monkeypatch.setattr(
        "relevancy.cli.options.build_metric",
        lambda **settings: AnswerRelevancy(
            llm=FakeGenerator(), embeddings=FakeEmbedder(), cache=False
        ),
    )


def _error_line(err: str) -> str:
    """The CLI's error: exactly one line starting ``error:``, and no traceback."""
    assert "Traceback" not in err
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, err
    return errors[0]


# --- deep nesting ------------------------------------------------------------------------------
@pytest.mark.parametrize("suffix", [".json", ".jsonl"])
def test_deeply_nested_json_is_one_line_and_exit_2(tmp_path, capsys, fake_backends, suffix):
    path = tmp_path / f"deep{suffix}"
    path.write_text("[" * DEEP + "]" * DEEP + "\n")
    with pytest.raises(InputError) as err:
        read_table(path)
    assert "nests values too deeply" in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(InputError):
        read_table_bytes(path.read_bytes(), path.name)
    assert main(["score", str(path), "-o", str(tmp_path / "o.csv"), "-q"]) == 2
    assert "deep" in _error_line(capsys.readouterr().err)


def test_deep_value_inside_a_record_skips_that_line(tmp_path, capsys, fake_backends):
    good = json.dumps({"question": "Where is Paris?", "answer": "In France."})
    deep = '{"question": "q", "answer": ' + "[" * DEEP + "]" * DEEP + "}"
    path = tmp_path / "mixed.jsonl"
    path.write_text(f"{good}\n{deep}\n{good.replace('Paris', 'Rome')}\n")
    out = tmp_path / "o.csv"
    assert main(["score", str(path), "-o", str(out), "-q"]) == 0
    assert "note: line 2 skipped: nests values too deeply to read" in capsys.readouterr().err
    assert len(pd.read_csv(out)) == 2


# --- the fuzz ----------------------------------------------------------------------------------
_GOOD = [
    {"question": f"What is the capital of country {i}?", "answer": f"City {i}."} for i in range(4)
]
_NASTY = [
    "",
    "\0",
    "\ud800",
    "\\ud800",
    '"',
    "\\",
    "{",
    "[",
    "]}",
    "\r\n",
    "\u202e",
    "=1+2",
    "１２",
    "null",
    "NaN",
    "1e999",
    "9" * 5000,
    "[" * 3000,
    "[" * 3000 + "]" * 3000,
    '{"a":' * 3000,
    "\ufeff",
    "ÿ",
    "🙂" * 3,
    ",",
    ",x,y",
    "\t",
]


def _mutate(rng: random.Random, text: str) -> str:
    """``text`` cut, spliced, with nasty pieces inserted or characters dropped."""
    for _ in range(rng.randint(1, 4)):
        at = rng.randint(0, len(text))
        kind = rng.randrange(5)
        values = [i + 2 for i in range(len(text)) if text.startswith(": ", i)]
        if kind == 4 and values:  # a value replaced: structure, not just text
            at = rng.choice(values)
            end = text.find('"', text.find('"', at) + 1) + 1
            text = text[:at] + rng.choice(_NASTY) + text[end:]
        elif kind == 0:
            text = text[:at] + rng.choice(_NASTY) + text[at:]
        elif kind == 1:
            text = text[:at]
        elif kind == 2:
            text = text[:at] + text[at + rng.randint(1, 5) :]
        else:
            text = text + "\n" + rng.choice(_NASTY)
    return text


def _fuzz_file(rng: random.Random, tmp_path, i: int):
    suffix = rng.choice([".csv", ".tsv", ".json", ".jsonl", ".parquet", ".arrow"])
    frame = pd.DataFrame(_GOOD)
    if suffix == ".csv":
        text = frame.to_csv(index=False)
    elif suffix == ".tsv":
        text = frame.to_csv(index=False, sep="\t")
    elif suffix == ".json":
        text = json.dumps(_GOOD)
    else:
        text = "\n".join(json.dumps(r) for r in _GOOD)  # .jsonl, or text under a binary name
    path = tmp_path / f"fuzz{i}{suffix}"
    data = _mutate(rng, text).encode("utf-8", "surrogatepass")
    if rng.random() < 0.15:  # bytes that are not UTF-8
        data = data[: rng.randint(0, len(data))] + bytes([rng.randrange(128, 256)]) + data
    path.write_bytes(data)
    return path


def test_fuzzed_files_give_one_line_and_exit_2_or_a_scored_file(tmp_path, capsys, fake_backends):
    """A seeded fuzz over every reader: a traceback fails the test (main re-raises it)."""
    rng = random.Random(25)
    outcomes = {0: 0, 2: 0}
    for i in range(60):
        path = _fuzz_file(rng, tmp_path, i)
        out = tmp_path / f"out{i}.csv"
        code = main(["score", str(path), "-o", str(out), "-q"])
        err = capsys.readouterr().err
        assert code in (0, 2), (path.name, err)
        outcomes[code] += 1
        if code == 2:
            _error_line(err)
            assert not out.exists()
        else:
            assert "Traceback" not in err
            pd.read_csv(out)  # a whole file
    assert outcomes[0] and outcomes[2]  # the fuzz reaches both ends


def test_lone_surrogates_and_huge_numbers(tmp_path, capsys, fake_backends):
    path = tmp_path / "odd.jsonl"
    path.write_text(
        '{"question": "Where is \\ud800 Paris?", "answer": "In France \\udfff."}\n'
        '{"question": "q", "answer": ' + "9" * 5000 + "}\n"
        '{"question": "Where is Rome?", "answer": "In Italy."}\n'
    )
    out = tmp_path / "o.csv"
    assert main(["score", str(path), "-o", str(out), "-q"]) == 0
    assert "note: line 2 skipped: not readable JSON" in capsys.readouterr().err
    table = pd.read_csv(out)
    assert table["user_input"].tolist() == ["Where is \ufffd Paris?", "Where is Rome?"]


# --- lines skipped and listed; wrong types as row problems -------------------------------------
def test_bad_jsonl_lines_are_skipped_and_listed_while_valid_rows_are_scored(
    tmp_path, capsys, fake_backends
):
    lines = [json.dumps(r) for r in _GOOD]
    lines.insert(1, "{oops}")
    lines.insert(3, "[1, 2]")
    path = tmp_path / "some_bad.jsonl"
    path.write_text("\n".join(lines) + "\n")
    out = tmp_path / "o.csv"
    assert main(["score", str(path), "-o", str(out), "-q"]) == 0
    err = capsys.readouterr().err
    assert "note: line 2 skipped: not valid JSON (" in err
    assert "note: line 4 skipped: a JSON list, not an object" in err
    assert pd.read_csv(out)["user_input"].tolist() == [r["question"] for r in _GOOD]


def test_ragged_csv_rows_are_skipped_and_listed(tmp_path, capsys, fake_backends):
    path = tmp_path / "ragged.csv"
    path.write_text(
        "question,answer\nWhere is Paris?,In France.\nWhere is Rome?,In Italy, of course.\n"
        "Where is Oslo?,In Norway.\n"
    )
    out = tmp_path / "o.csv"
    assert main(["score", str(path), "-o", str(out), "-q"]) == 0
    err = capsys.readouterr().err
    assert "note: line 3 skipped: 3 cells where the header has 2 (a cell holding a comma " in err
    assert pd.read_csv(out)["user_input"].tolist() == ["Where is Paris?", "Where is Oslo?"]
    only = tmp_path / "all_ragged.csv"
    only.write_text("question,answer\nq,a,b\nq2,a,b\n")
    assert main(["score", str(only), "-o", str(out), "-q"]) == 2
    line = _error_line(capsys.readouterr().err)
    assert "line 2 has 3 cells where the header has 2" in line and "needs quotes" in line


def test_wrong_type_cells_are_listed_as_row_problems(tmp_path, capsys, fake_backends):
    path = tmp_path / "types.jsonl"
    rows = [
        _GOOD[0],
        {"question": 12345, "answer": "A number."},
        {"question": "Which numbers?", "answer": [1, 2, 3]},
        _GOOD[1],
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    out = tmp_path / "o.csv"
    assert main(["score", str(path), "-o", str(out), "-q"]) == 0
    err = capsys.readouterr().err
    assert "note: row 2: user_input is a number (12345), not text: not scored" in err
    assert "note: row 3: response is a list ([1, 2, 3]), not text: not scored" in err
    table = pd.read_csv(out)
    assert table["score"].notna().tolist() == [True, False, False, True]


# --- messages that name the fix ----------------------------------------------------------------
def test_csv_renamed_parquet_names_the_fix(tmp_path):
    path = tmp_path / "data.parquet"
    pd.DataFrame(_GOOD).to_csv(path, index=False)
    with pytest.raises(
        InputError,
        match=r"'data.parquet' is CSV text, not Parquet: rename it "
        r"'data.csv'",
    ):
        read_table(path)
    path.write_text("\n".join(json.dumps(r) for r in _GOOD))
    with pytest.raises(InputError, match="is JSON Lines text, not Parquet: rename it 'data.jsonl'"):
        read_table(path)


def test_trace_records_read_as_a_table_hint_at_format(tmp_path):
    path = tmp_path / "mixed.jsonl"
    records = [{"input": {"question": "q"}, "output": {"answer": "a"}}] * 3
    path.write_text("\n".join(json.dumps(r) for r in records))
    with pytest.raises(InputError) as err:
        read_table(path)
    assert "holds dict values" in str(err.value) and "--format" in str(err.value)


def test_preflight_tries_twice_before_saying_the_server_cannot_be_reached(toy_server):
    metric = build_metric(
        llm="openai:toy-chat",
        embeddings="openai:toy-embed",
        base_url=toy_server.base_url,
        cache=False,
    )
    toy_server.script(["drop"])  # one dropped connection: the second try gets through
    preflight(metric)
    toy_server.script(["drop", "drop"])
    with pytest.raises(ConfigError, match=r"cannot reach .*\(2 tries\): check --base-url"):
        preflight(metric)
    for fault in ("invalid_json", "missing_fields"):  # a malformed body: the server is there
        toy_server.script([fault])
        preflight(metric)


def test_cli_preflight_survives_one_dropped_request(toy_server, tmp_path, capsys):
    path = tmp_path / "in.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in _GOOD[:1]))
    toy_server.script(["drop"])  # the preflight's first request (the models list)
    code = main(
        ["score", str(path), "-o", str(tmp_path / "o.csv"), "-q", *cli_backends(toy_server)]
    )
    assert code == 0, capsys.readouterr().err


# --- links -------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "params",
    [
        {"run": 3},
        {"run": None},
        {"row": ["1", 2]},
        {"run": b"3"},
        {"run": []},
        None,
        5,
        {"run": object()},
        {3: "x"},
    ],
)
def test_parse_link_never_raises(params):
    link = parse_link(params)
    assert link.run in (None, 3)


def test_parse_link_takes_ascii_digits_only():
    assert parse_link({"run": "3"}).run == 3
    assert parse_link({"run": "\u0663"}).run is None  # Arabic-Indic three
    assert parse_link({"run": "\u0663"}).bad_run == "\u0663"
    assert parse_link({"run": "\uff13", "row": "\u0662"}).bad_row == "\u0662"  # full-width 3


def test_report_lists_bad_lines():
    report = ImportReport()
    for line in range(1, 30):
        report.bad_line(line, "why")
    lines = report.describe_bad_lines()
    assert lines[0] == "line 1 skipped: why" and lines[-1] == "... and 9 more lines skipped"


# --- what is sent for one answer (issue 25 item 2) ---------------------------------------------
def test_api_generator_sends_at_most_the_cap_and_says_so(toy_server, tmp_path, capsys):
    answer = "Paris is the capital of France. " * 32_000  # about 1 MB
    path = tmp_path / "long.jsonl"
    path.write_text(json.dumps({"question": "What is the capital of France?", "answer": answer}))
    out = tmp_path / "o.csv"
    code = main(
        [
            "score",
            str(path),
            "-o",
            str(out),
            "-q",
            "--max-response-chars",
            "5000",
            *cli_backends(toy_server),
        ]
    )
    assert code == 0
    err = capsys.readouterr().err
    assert (
        f"response has {len(answer):,} characters: the question generator is sent the "
        "first 5,000 only (about 1,250 tokens" in err
    )
    # the estimate's prompt tokens follow the cap, not the megabyte
    estimate = next(line for line in err.splitlines() if line.strip().startswith("tokens"))
    shown = estimate.split("about ")[1].split(" in")[0].replace(",", "")  # "1k", "262k"
    scale = {"k": 1e3, "M": 1e6}.get(shown[-1], 1)
    assert float(shown.rstrip("kM")) * scale < 5_000, estimate
    chats = [r for r in toy_server.requests if r["path"].endswith("/chat/completions")]
    assert chats
    for request in chats:
        last = request["body"]["messages"][-1]["content"]
        assert len(last) <= 5000 + len("Response: ")
        assert request["usage"]["prompt_tokens"] < 2_000  # words: about 900 for the answer
    note = pd.read_csv(out)["notes"].iloc[0]
    assert "truncated to its first 5,000 of" in note and "(about 1,250 of" in note


def test_api_generator_cap_defaults_to_20000_characters(toy_server):
    metric = build_metric(
        llm="openai:toy-chat",
        embeddings="openai:toy-embed",
        base_url=toy_server.base_url,
        cache=False,
    )
    assert metric.llm.max_response_chars == 20_000
    result = metric.score(
        user_input="What is the capital of France?",
        response="Paris is the capital of France. " * 5_000,
    )
    assert result.notes and "first 20,000 of 160,000 characters" in result.notes[0]
    chat = [r for r in toy_server.requests if r["path"].endswith("/chat/completions")][-1]
    assert len(chat["body"]["messages"][-1]["content"]) == 20_000 + len("Response: ")
    with pytest.raises(InputError, match="--max-response-chars must be 1 or more"):
        build_metric(llm="openai:toy-chat", max_response_chars=0)


def test_a_corrupt_parquet_file_is_one_line(tmp_path):
    """pyarrow's messages hold line breaks of their own; ours stay one line."""
    good = tmp_path / "good.parquet"
    pd.DataFrame(_GOOD * 10).to_parquet(good)
    data = good.read_bytes()
    rng = random.Random(5)
    messages = []
    for i in range(40):
        cut = rng.randrange(len(data) // 4, len(data) - 8)
        other = rng.randrange(0, len(data) - 8)
        path = tmp_path / f"splice_{i}.parquet"
        path.write_bytes(data[:cut] + data[other:])  # a splice, as a broken copy makes
        try:
            read_table(path)
        except InputError as exc:
            messages.append(str(exc))
    assert messages and all("\n" not in m for m in messages), [m for m in messages if "\n" in m]
