"""Our OpenAI-compatible backend against llama-cpp-python's own server on 127.0.0.1."""

import importlib
import sys

import pytest

from relevancy import AnswerRelevancy, make_embedder, make_generator
from relevancy.backends import smollm_model_path
from relevancy.testing.processes import ServerProcess, free_port

from helpers import skip_or_fail

pytestmark = pytest.mark.models


def require_llama_cpp_server() -> None:
    try:
        importlib.import_module("llama_cpp.server")
    except ImportError as exc:
        skip_or_fail(
            f"llama-cpp-python's server cannot be imported ({exc}): install the dev extra, "
            "`pip install -e '.[dev]'` (llama-cpp-python[server])"
        )


@pytest.fixture(scope="module")
def llama_server():
    require_llama_cpp_server()
    port = free_port()
    url = f"http://127.0.0.1:{port}/v1"
    server = ServerProcess(
        [
            sys.executable,
            "-m",
            "relevancy.testing.llama_cpp_server",
            "--model",
            str(smollm_model_path()),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--n_threads",
            "2",
            "--n_ctx",
            "4096",
        ],
        url_to_poll=url + "/models",
        timeout=120,
        stop_timeout=30,
    )
    try:
        server.start()
    except RuntimeError as exc:
        pytest.fail(f"llama-cpp-python's server did not start: {exc}")
    try:
        yield url
    finally:
        server.stop()


def test_scores_through_llama_cpp_server(llama_server):
    m = AnswerRelevancy(
        llm=make_generator("openai:smollm2", base_url=llama_server, timeout=120),
        embeddings=make_embedder("local"),
        cache=False,
    )
    results = m.score_many(
        [
            ("When was the first super bowl?", "The first superbowl was held on Jan 15, 1967"),
            ("Where is France and what is it's capital?", "France is in western Europe."),
        ],
        concurrency=1,
    )
    for r in results:
        assert r.ok, r.error
        assert len(r.questions) == 3 and all(q.question for q in r.questions)


def test_rows_scored_at_once_fall_back_from_json_schema_once(llama_server):
    # Regression: this server answers response_format json_schema with HTTP 500; rows scored at
    # once each got that refusal and each pushed the backend's mode one step further, so every
    # row failed with "generation failed: tuple index out of range".
    from relevancy.backends._openai import _MODES

    gen = make_generator("openai:smollm2", base_url=llama_server, timeout=120)
    m = AnswerRelevancy(
        llm=gen, embeddings=make_embedder("local"), cache=False, strictness=1, concurrency=3
    )
    results = m.score_many(
        [
            ("When was the first super bowl?", "The first superbowl was held on Jan 15, 1967"),
            ("Where is France?", "France is in western Europe."),
            ("What is the boiling point of water?", "Water boils at 100 degrees Celsius."),
        ]
    )
    assert all(r.ok for r in results), [r.error for r in results]
    assert _MODES[gen._mode_index] == "json_object"  # the schema still constrains decoding


@pytest.mark.parametrize(
    ("ci", "outcome"),
    [("1", pytest.fail.Exception), ("true", pytest.fail.Exception), ("", pytest.skip.Exception)],
)
def test_a_missing_server_extra_fails_in_ci_and_skips_elsewhere(monkeypatch, ci, outcome):
    monkeypatch.setitem(sys.modules, "llama_cpp.server", None)  # as if it were not installed
    monkeypatch.setenv("CI", ci)
    with pytest.raises(outcome, match="llama-cpp-python's server cannot be imported"):
        require_llama_cpp_server()
