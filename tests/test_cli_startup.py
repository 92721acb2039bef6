"""The CLI answers its help and its one-line errors without loading the heavy packages: what
``relevancy --help`` and friends import is checked here, in a fresh interpreter (how long they
take is measured by ``python -m bench.cli_startup``, never asserted). ``import relevancy`` loads
its public names on first use, and every name of ``relevancy.__all__`` is still there.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

import pytest

from relevancy.cli import COMMANDS, make_parser

#: packages that each take a tenth of a second or more to import
HEAVY = (
    "pandas",
    "numpy",
    "pyarrow",
    "streamlit",
    "plotly",
    "sklearn",
    "onnxruntime",
    "llama_cpp",
    "openai",
)

PROBE = """
import contextlib, io, json, sys
out, err = io.StringIO(), io.StringIO()
with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
    try:
        from relevancy.cli import main
        code = main(sys.argv[1:])
    except SystemExit as stop:
        code = stop.code
heavy = [m for m in HEAVY if m in sys.modules]
print(json.dumps({"code": code, "heavy": heavy, "out": out.getvalue(), "err": err.getvalue()}))
"""


def run_cli(*argv: str) -> dict:
    """``relevancy ARGV`` in a fresh interpreter: its exit code, output and the heavy packages
    that were imported by the time it ended."""
    code = f"HEAVY = {HEAVY!r}\n{PROBE}"
    proc = subprocess.run(
        [sys.executable, "-c", code, *argv], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.parametrize(
    "argv",
    [
        ["--help"],
        [],  # no command: the usage and one line saying so
        ["--no-such-option"],
        ["no-such-command"],
        ["compare", "--help"],
        ["cache", "--help"],
        ["doctor", "--help"],
        ["dashboard", "--help"],
        ["compare", "only-one-file.csv"],  # a missing argument is one line too
    ],
    ids=" ".join,
)
def test_help_and_usage_errors_import_nothing_heavy(argv):
    found = run_cli(*argv)
    assert found["heavy"] == []
    assert found["code"] == (0 if "--help" in argv else 2)
    if argv[:1] == ["compare"] and "--help" not in argv:  # a command's usage error: one line
        assert found["err"].startswith("relevancy compare: error: the following arguments")
        assert len(found["err"].splitlines()) == 1
    else:
        assert (found["out"] if "--help" in argv else found["err"]).startswith("usage: relevancy")


def test_the_help_lists_every_command_with_its_line():
    found = run_cli("--help")
    text = " ".join(found["out"].split())
    for name, (_, line) in COMMANDS.items():
        assert f"{name} {' '.join(line.split())}" in text


def test_the_full_parser_gives_each_command_its_listed_line():
    """Built whole (every command's module imported), the parser says what the short one says."""
    parser = make_parser()
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    listed = {choice.dest: choice.help for choice in sub._choices_actions}
    assert listed == {name: line for name, (_, line) in COMMANDS.items()}
    assert list(sub.choices) == list(COMMANDS)


def test_a_command_still_gets_all_its_options():
    found = run_cli("score", "--help")
    assert found["code"] == 0
    for option in ("--format", "--llm", "--embeddings", "--to-phoenix", "--repeats", "--engine"):
        assert option in found["out"]
    found = run_cli("score", "--no-such-option")
    assert found["code"] == 2
    assert found["err"].splitlines()[-1] == (
        "relevancy: error: unrecognized arguments: --no-such-option"
    )


def test_import_relevancy_loads_its_names_on_first_use():
    probe = (
        "import sys, relevancy; "
        f"print([m for m in {HEAVY!r} if m in sys.modules]); "
        "from relevancy import AnswerRelevancy, build_metric; "
        "print('pandas' in sys.modules, AnswerRelevancy.__module__, build_metric.__module__)"
    )
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "[]",
        "True relevancy.scoring.metric relevancy.scoring.config",
    ]


def test_every_public_name_is_there():
    import relevancy.scoring.metric

    assert len(relevancy.__all__) == len(set(relevancy.__all__)) == 41
    for name in relevancy.__all__:
        assert getattr(relevancy, name) is not None, name
    assert relevancy.AnswerRelevancy is relevancy.scoring.metric.AnswerRelevancy
    assert set(relevancy.__all__) <= set(dir(relevancy))
    namespace: dict = {}
    exec("from relevancy import *", namespace)
    assert set(relevancy.__all__) <= set(namespace)
    with pytest.raises(AttributeError, match="no_such_name"):
        relevancy.no_such_name  # noqa: B018
