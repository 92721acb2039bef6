"""``relevancy experiment`` against llama-cpp-python's OpenAI-compatible server on 127.0.0.1
serving the embedded SmolLM2 GGUF (tests/test_llama_server.py's fixture): two templates answered
by a real model over HTTP, scored offline by the embedded judge into one saved run; the same
command's estimate then finds every answer in the cache. Run it with OMP_WAIT_POLICY=PASSIVE
(llama.cpp's threads otherwise spin on a small machine)."""

from __future__ import annotations

import pandas as pd
import pytest
from test_llama_server import llama_server  # noqa: F401 - the fixture, reused

from relevancy.cli import main
from relevancy.runs import RunStore

pytestmark = [pytest.mark.models, pytest.mark.slow]


def test_an_experiment_answered_by_llama_cpp_server(llama_server, tmp_path, capsys, monkeypatch):  # noqa: F811
    monkeypatch.chdir(tmp_path)
    pd.DataFrame({"question": ["What is the capital of France?", "Who wrote Hamlet?"]}).to_csv(
        tmp_path / "q.csv", index=False
    )
    argv = ["experiment", "--prompt", "short=Answer in one short sentence: {user_input}"]
    argv += ["--prompt", "story=You tell stories.\n---\nTell a story about: {user_input}"]
    argv += ["--model", "smollm2", "--base-url", llama_server, "--questions", "q.csv"]
    argv += ["--max-tokens", "40", "--llm", "local", "--embeddings", "local", "--strictness", "1"]
    argv += ["--timeout", "120", "--save-run", "llama", "--store", str(tmp_path / "s.sqlite3")]
    argv += ["-o", "out.jsonl", "-q"]
    code = main(argv)
    out = capsys.readouterr()
    assert code == 0, out.err
    assert "short · smollm2" in out.out and "story · smollm2" in out.out
    answers = pd.read_json(tmp_path / "out.answers.jsonl", lines=True)
    assert len(answers) == 4 and answers["answer_error"].isna().all()
    assert answers["response"].str.strip().str.len().gt(0).all()
    assert (answers["answer_prompt_tokens"] > 0).all()  # the server's own usage
    assert (answers["answer_completion_tokens"] <= 40).all()
    store = RunStore(tmp_path / "s.sqlite3")
    run = store.list_runs()[0]
    assert (run.name, run.n_rows, run.n_scored) == ("llama", 4, 4)
    assert main([*argv, "--estimate"]) == 0
    assert "0 answers to request (4 in the cache)" in capsys.readouterr().err
