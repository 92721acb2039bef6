"""Tests for the fault-injecting OpenAI-compatible server, driven by the real ``openai`` SDK."""

from __future__ import annotations

import contextlib
import http.client
import json
import math
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest

from relevancy.testing.openai_server import (
    CHAT_MODEL,
    EMBEDDING_MODEL,
    FAULT_KINDS,
    FaultPlan,
    OpenAICompatServer,
    embed_text,
)

from helpers import with_sigint_ignored

REPO_ROOT = Path(__file__).resolve().parents[1]
ANSWER = "The Eiffel Tower is in Paris and was finished in 1889 for the World Fair."
MESSAGES = [
    {"role": "system", "content": "Write the question this response answers."},
    {"role": "user", "content": "Response: Water boils at 100 degrees Celsius."},
    {"role": "assistant", "content": '{"question": "At what temperature does water boil?"}'},
    {"role": "user", "content": f"Response: {ANSWER}"},
]
SCHEMA_FORMAT = {
    "type": "json_schema",
    "json_schema": {
        "name": "question_output",
        "schema": {
            "type": "object",
            "properties": {"question": {"type": "string"}, "noncommittal": {"type": "integer"}},
            "required": ["question", "noncommittal"],
        },
    },
}


@pytest.fixture
def server() -> Iterator[OpenAICompatServer]:
    with OpenAICompatServer(retry_after=0.1, slow_seconds=2.0) as srv:
        yield srv


def make_client(
    srv: OpenAICompatServer, *, api_key: str = "sk-test", retries: int = 0, timeout: float = 5.0
) -> openai.OpenAI:
    return openai.OpenAI(
        base_url=srv.base_url, api_key=api_key, max_retries=retries, timeout=timeout
    )


def chat(client: openai.OpenAI, **kwargs: Any) -> Any:
    kwargs.setdefault("messages", MESSAGES)
    kwargs.setdefault("model", CHAT_MODEL)
    return client.chat.completions.create(**kwargs)


def post(srv: OpenAICompatServer, path: str, body: bytes, headers: dict[str, str] | None = None):
    """POST raw bytes; return (status, headers, body bytes) without raising on 4xx/5xx."""
    conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=5)
    try:
        conn.request(
            "POST", path, body=body, headers={"Content-Type": "application/json", **(headers or {})}
        )
        response = conn.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        conn.close()


def post_json(srv: OpenAICompatServer, path: str, payload: Any, **kwargs: Any):
    return post(srv, path, json.dumps(payload).encode(), **kwargs)


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


# ----------------------------------------------------------------------------- normal serving


def test_models_list(server: OpenAICompatServer) -> None:
    ids = [model.id for model in make_client(server).models.list()]
    assert ids == [CHAT_MODEL, EMBEDDING_MODEL]
    assert server.base_url == f"http://127.0.0.1:{server.port}/v1"


@pytest.mark.parametrize("response_format", [None, SCHEMA_FORMAT, {"type": "json_object"}])
def test_chat_n3_gives_three_distinct_json_questions(
    server: OpenAICompatServer, response_format: dict[str, Any] | None
) -> None:
    kwargs: dict[str, Any] = {"n": 3}
    if response_format is not None:
        kwargs["response_format"] = response_format
    completion = chat(make_client(server), model="any-model-name", **kwargs)

    assert completion.model == "any-model-name"
    assert [c.index for c in completion.choices] == [0, 1, 2]
    assert all(c.finish_reason == "stop" for c in completion.choices)
    outputs = [json.loads(c.message.content) for c in completion.choices]
    assert all(set(o) == {"question", "noncommittal"} for o in outputs)
    questions = [o["question"] for o in outputs]
    assert len(set(questions)) == 3
    assert all(q.endswith("?") and "Eiffel" in q for q in questions)
    assert "Water" not in questions[0]  # only the last user message's response is read
    assert all(o["noncommittal"] == 0 for o in outputs)
    usage = completion.usage
    assert usage.prompt_tokens > 20
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens


def test_noncommittal_flag_and_marker_is_case_insensitive(server: OpenAICompatServer) -> None:
    messages = [{"role": "user", "content": "RESPONSE: Honestly, I don't know; it depends."}]
    completion = chat(make_client(server), messages=messages)
    assert json.loads(completion.choices[0].message.content)["noncommittal"] == 1


def test_n_ignored_when_not_honoured_and_capped_by_max_n() -> None:
    with OpenAICompatServer(honour_n=False) as srv:
        assert len(chat(make_client(srv), n=4).choices) == 1
    with OpenAICompatServer(max_n=2) as srv:
        assert len(chat(make_client(srv), n=4).choices) == 2


def test_json_schema_rejected_when_unsupported() -> None:
    with OpenAICompatServer(accept_json_schema=False, accept_json_object=False) as srv:
        client = make_client(srv)
        with pytest.raises(openai.BadRequestError) as info:
            chat(client, response_format=SCHEMA_FORMAT)
        assert info.value.status_code == 400
        assert info.value.code == "unsupported_response_format"
        with pytest.raises(openai.BadRequestError):
            chat(client, response_format={"type": "json_object"})
        assert json.loads(chat(client).choices[0].message.content)["question"]


def test_prose_and_lines_text_modes() -> None:
    with OpenAICompatServer(text_mode="prose") as srv:
        content = chat(make_client(srv)).choices[0].message.content
        assert content.startswith("Sure! Here you go:\n```json\n")
        assert content.endswith("```\nHope this helps.")
        inner = content.split("```json\n", 1)[1].split("\n```", 1)[0]
        assert json.loads(inner)["noncommittal"] == 0
        # A structured response_format still gets bare JSON.
        structured = chat(make_client(srv), response_format=SCHEMA_FORMAT)
        assert json.loads(structured.choices[0].message.content)["question"]
    with OpenAICompatServer(text_mode="lines") as srv:
        content = chat(make_client(srv)).choices[0].message.content
        question_line, flag_line = content.split("\n")
        assert question_line.startswith("Question: ") and question_line.endswith("?")
        assert flag_line == "Noncommittal: 0"


def test_tools_get_a_tool_call_then_a_text_reply(server: OpenAICompatServer) -> None:
    tools = [
        {
            "type": "function",
            "function": {
                "name": "search_manual",
                "parameters": {"type": "object", "properties": {"query": {"type": "string"}}},
            },
        }
    ]
    asked = [{"role": "user", "content": "Response: How long does the battery last?"}]
    client = make_client(server)
    first = chat(client, messages=asked, tools=tools)
    (choice,) = first.choices
    assert choice.finish_reason == "tool_calls" and choice.message.content is None
    (call,) = choice.message.tool_calls
    assert call.function.name == "search_manual"
    assert json.loads(call.function.arguments) == {"query": "How long does the battery last?"}
    assert first.usage.completion_tokens > 0
    answered = [
        *asked,
        choice.message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": call.id, "content": "About ten hours."},
    ]
    second = chat(client, messages=answered, tools=tools)
    assert second.choices[0].finish_reason == "stop"
    assert "battery" in json.loads(second.choices[0].message.content)["question"]
    # tool_choice "none": text at once
    assert chat(client, messages=asked, tools=tools, tool_choice="none").choices[0].message.content
    with pytest.raises(openai.BadRequestError):
        chat(client, messages=asked, tools=[{"type": "function", "function": {}}])


def test_embeddings_shape_norm_and_determinism(server: OpenAICompatServer) -> None:
    client = make_client(server)
    texts = ["Where is the Eiffel Tower?", "", "How do bees make honey?"]
    result = client.embeddings.create(model=EMBEDDING_MODEL, input=texts)  # base64 by default
    assert result.model == EMBEDDING_MODEL
    assert [d.index for d in result.data] == [0, 1, 2]
    vectors = [d.embedding for d in result.data]
    assert all(len(v) == 64 for v in vectors)
    assert all(math.isclose(math.fsum(x * x for x in v), 1.0, rel_tol=1e-5) for v in vectors)
    assert result.usage.prompt_tokens == result.usage.total_tokens == 10

    floats = client.embeddings.create(model=EMBEDDING_MODEL, input=texts, encoding_format="float")
    for decoded, exact, text in zip(vectors, floats.data, texts, strict=True):
        assert exact.embedding == embed_text(text, 64)
        assert decoded == pytest.approx(exact.embedding, abs=1e-6)

    with OpenAICompatServer() as other:  # same seed, same vectors; another seed differs
        again = make_client(other).embeddings.create(
            model=EMBEDDING_MODEL, input=texts[0], encoding_format="float"
        )
        assert again.data[0].embedding == floats.data[0].embedding
    assert embed_text(texts[0], 64, seed=1) != embed_text(texts[0], 64, seed=0)

    small = client.embeddings.create(model=EMBEDDING_MODEL, input="hello", dimensions=8)
    assert len(small.data[0].embedding) == 8


def test_embeddings_similar_sentences_are_closer(server: OpenAICompatServer) -> None:
    texts = [
        "What is the capital city of France?",
        "Which city is the capital of France?",
        "How do honey bees make honey?",
    ]
    data = make_client(server).embeddings.create(model=EMBEDDING_MODEL, input=texts).data
    capital, capital2, bees = (d.embedding for d in data)
    assert cosine(capital, capital2) > cosine(capital, bees) + 0.3
    assert cosine(capital, capital2) > cosine(capital2, bees) + 0.3
    # Character trigrams put related word forms near each other.
    variants = cosine(embed_text("embedding", 64), embed_text("embeddings", 64))
    assert variants > 0.3
    assert variants > abs(cosine(embed_text("embedding", 64), embed_text("honey", 64))) + 0.2


def test_embeddings_accept_token_ids(server: OpenAICompatServer) -> None:
    status, _, body = post_json(
        server, "/v1/embeddings", {"model": "m", "input": [[1, 2, 3], [4, 5]]}
    )
    assert status == 200
    data = json.loads(body)["data"]
    assert len(data) == 2 and all(len(item["embedding"]) == 64 for item in data)
    status, _, body = post_json(server, "/v1/embeddings", {"model": "m", "input": [7, 8, 9]})
    assert status == 200 and len(json.loads(body)["data"]) == 1


# ----------------------------------------------------------------------------- errors


def test_unknown_path_is_404_with_openai_error(server: OpenAICompatServer) -> None:
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(f"{server.base_url}/nothing-here", timeout=5)
    assert info.value.code == 404
    error = json.loads(info.value.read())["error"]
    assert set(error) >= {"message", "type", "code"}
    assert server.requests[-1]["status"] == 404


@pytest.mark.parametrize(
    "path, body",
    [
        ("/v1/chat/completions", b"{not json"),
        ("/v1/chat/completions", b"[1, 2]"),
        ("/v1/chat/completions", json.dumps({"model": "m", "messages": []}).encode()),
        ("/v1/chat/completions", json.dumps({"model": "m", "messages": MESSAGES, "n": 0}).encode()),
        ("/v1/embeddings", json.dumps({"model": "m", "input": 42}).encode()),
        ("/v1/embeddings", b""),
    ],
)
def test_malformed_body_is_400(server: OpenAICompatServer, path: str, body: bytes) -> None:
    status, _, payload = post(server, path, body)
    assert status == 400
    assert json.loads(payload)["error"]["type"] == "invalid_request_error"


def test_wrong_api_key_is_401_without_echoing_the_key() -> None:
    wrong = "sk-wrong-secret-1234567890"
    with OpenAICompatServer(api_key="sk-right") as srv:
        with pytest.raises(openai.AuthenticationError) as info:
            chat(make_client(srv, api_key=wrong))
        assert info.value.status_code == 401
        assert wrong not in str(info.value) and wrong not in info.value.response.text
        assert "sk-wrong" not in info.value.response.text

        status, _, body = post_json(srv, "/v1/embeddings", {"model": "m", "input": "x"})
        assert status == 401  # no Authorization header at all

        assert chat(make_client(srv, api_key="sk-right")).choices
        records = srv.requests
        assert [r["authorization_ok"] for r in records] == [False, False, True]
        assert "sk-right" not in repr(records) and wrong not in repr(records)


# ----------------------------------------------------------------------------- faults


def test_fault_429_has_retry_after_and_the_sdk_honours_it() -> None:
    # Without the header the SDK's first retry waits 0.375-0.5 s (0.5 s less up to 25% jitter);
    # the server announces 1.2 s, so a client that ignored it would be done well before 1.15 s.
    with OpenAICompatServer(retry_after=1.2) as srv:
        srv.script(["429"])
        with pytest.raises(openai.RateLimitError) as info:
            chat(make_client(srv))
        headers = info.value.response.headers
        assert headers["retry-after"] == "1.2" and headers["retry-after-ms"] == "1200"
        assert info.value.code == "rate_limit_exceeded"

        srv.script(["429", None])
        start = time.perf_counter()
        assert chat(make_client(srv, retries=1)).choices  # the SDK retries 429 by itself
        elapsed = time.perf_counter() - start
        # at least what was asked; the upper bound leaves room for a loaded machine
        assert 1.15 <= elapsed < 1.2 + 3.0, elapsed
        assert [r["fault"] for r in srv.requests] == ["429", "429", None]


@pytest.mark.parametrize("kind", ["500", "503"])
def test_fault_server_errors(server: OpenAICompatServer, kind: str) -> None:
    server.script([kind, kind])
    with pytest.raises(openai.InternalServerError) as info:
        chat(make_client(server))
    assert info.value.status_code == int(kind)
    status, _, body = post_json(server, "/v1/embeddings", {"model": "m", "input": "x"})
    assert status == int(kind) and "error" in json.loads(body)


def test_fault_slow_times_the_client_out(server: OpenAICompatServer) -> None:
    server.script(["slow"])
    client = make_client(server, timeout=0.3)
    start = time.perf_counter()
    with pytest.raises(openai.APITimeoutError):
        chat(client)
    assert time.perf_counter() - start < 3.0  # the client's 0.3 s, not the server's 5 s
    assert server.requests[0]["fault"] == "slow"


def test_fault_slow_still_answers_a_patient_client() -> None:
    with OpenAICompatServer(slow_seconds=0.2) as srv:
        srv.script(["slow"])
        start = time.perf_counter()
        assert len(chat(make_client(srv), n=2).choices) == 2
        assert time.perf_counter() - start >= 0.2


def test_fault_drop(server: OpenAICompatServer) -> None:
    server.script(["drop", "drop"])
    with pytest.raises(openai.APIConnectionError):
        chat(make_client(server))
    with pytest.raises(http.client.RemoteDisconnected):
        post_json(server, "/v1/embeddings", {"model": "m", "input": "x"})
    assert [r["status"] for r in server.requests] == [None, None]


def test_fault_invalid_json(server: OpenAICompatServer) -> None:
    server.script(["invalid_json", "invalid_json"])
    # The SDK lets the decoder's own error escape: not an openai.OpenAIError.
    with pytest.raises(json.JSONDecodeError):
        chat(make_client(server))
    status, headers, body = post_json(server, "/v1/embeddings", {"model": "m", "input": "x"})
    assert status == 200 and headers["Content-Type"] == "application/json"
    with pytest.raises(json.JSONDecodeError):
        json.loads(body)


def test_fault_missing_fields(server: OpenAICompatServer) -> None:
    server.script(["missing_fields"] * 3)
    client = make_client(server)
    assert chat(client).choices is None  # the SDK does not validate; the field is just None
    with pytest.raises(ValueError, match="No embedding data"):  # the SDK's base64 decoder
        client.embeddings.create(model=EMBEDDING_MODEL, input="x")
    status, _, body = post_json(server, "/v1/embeddings", {"model": "m", "input": "x"})
    assert status == 200 and "data" not in json.loads(body)


def test_fault_fewer_choices(server: OpenAICompatServer) -> None:
    server.script(["fewer_choices", "fewer_choices"])
    client = make_client(server)
    assert len(chat(client, n=3).choices) == 2
    assert chat(client, n=1).choices == []


def test_fault_empty_content(server: OpenAICompatServer) -> None:
    server.script(["empty_content"])
    choices = chat(make_client(server), n=2).choices
    assert [c.message.content for c in choices] == ["", ""]


def test_fault_embed_wrong_count(server: OpenAICompatServer) -> None:
    server.script(["embed_wrong_count", "embed_wrong_count"])
    client = make_client(server)
    assert len(client.embeddings.create(model=EMBEDDING_MODEL, input=["a", "b", "c"]).data) == 2
    assert len(client.embeddings.create(model=EMBEDDING_MODEL, input="a").data) == 2


def test_fault_embed_wrong_dim(server: OpenAICompatServer) -> None:
    server.script(["embed_wrong_dim"])
    data = make_client(server).embeddings.create(model=EMBEDDING_MODEL, input=["a", "b"]).data
    assert [len(d.embedding) for d in data] == [64, 67]


def test_fault_that_does_not_fit_the_endpoint_is_not_applied(server: OpenAICompatServer) -> None:
    server.script(["fewer_choices", "embed_wrong_dim"])
    client = make_client(server)
    assert len(client.embeddings.create(model=EMBEDDING_MODEL, input=["a", "b"]).data) == 2
    assert len(chat(client, n=2).choices) == 2
    records = server.requests
    assert [r["fault"] for r in records] == [None, None]
    assert [r["fault_ignored"] for r in records] == ["fewer_choices", "embed_wrong_dim"]


def test_script_takes_priority_over_plan_and_stats_count() -> None:
    with OpenAICompatServer(faults=FaultPlan(rate=1.0, kinds=("500",))) as srv:
        srv.script([None])
        client = make_client(srv)
        assert chat(client).choices
        with pytest.raises(openai.InternalServerError):
            chat(client)
        srv.set_faults(None)
        assert make_client(srv).embeddings.create(model=EMBEDDING_MODEL, input="x").data
        stats = srv.stats()
        assert stats["total"] == 3
        assert stats["by_path"] == {"/v1/chat/completions": 2, "/v1/embeddings": 1}
        assert stats["by_fault"] == {"500": 1}
        assert stats["by_status"] == {200: 2, 500: 1}


def test_script_rejects_unknown_kinds(server: OpenAICompatServer) -> None:
    with pytest.raises(ValueError):
        server.script(["418"])
    with pytest.raises(ValueError):
        FaultPlan(kinds=("teapot",))


def _fault_sequence(plan: FaultPlan, count: int) -> list[str | None]:
    with OpenAICompatServer(faults=plan, slow_seconds=0.0, retry_after=0.0) as srv:
        for i in range(count):
            path = "/v1/chat/completions" if i % 2 else "/v1/embeddings"
            body = {"model": "m", "messages": MESSAGES, "input": "x"}
            with contextlib.suppress(http.client.HTTPException, OSError):  # "drop"
                post_json(srv, path, body)
        return [r["fault"] for r in srv.requests]


def test_random_fault_plan_is_reproducible() -> None:
    first = _fault_sequence(FaultPlan(rate=0.5, seed=7), 40)
    second = _fault_sequence(FaultPlan(rate=0.5, seed=7), 40)
    other = _fault_sequence(FaultPlan(rate=0.5, seed=8), 40)
    assert first == second
    assert first != other
    assert 8 <= sum(f is not None for f in first) <= 32
    assert set(first) - {None} <= set(FAULT_KINDS)
    # Only kinds that fit the endpoint are drawn: even requests went to /v1/embeddings.
    assert not {f for f in first[0::2]} & {"fewer_choices", "empty_content"}
    assert not {f for f in first[1::2]} & {"embed_wrong_count", "embed_wrong_dim"}


# ----------------------------------------------------------------------------- lifecycle


def test_stop_is_prompt_with_a_slow_request_in_flight() -> None:
    srv = OpenAICompatServer(slow_seconds=30.0).start()
    srv.script(["slow"])
    outcome: list[BaseException | None] = []

    def call() -> None:
        try:
            chat(make_client(srv, timeout=10.0))
            outcome.append(None)
        except BaseException as exc:  # noqa: BLE001 - recorded for the assertion below
            outcome.append(exc)

    caller = threading.Thread(target=call)
    caller.start()
    deadline = time.monotonic() + 60.0  # a bound on a hang: under load the thread starts late
    while not srv.requests and time.monotonic() < deadline:
        time.sleep(0.01)
    assert srv.requests, "the slow request never arrived"

    start = time.perf_counter()
    srv.stop()
    # prompt: far from the 30 s the request sleeps (on a loaded machine, well over 1 s)
    assert time.perf_counter() - start < 10.0
    caller.join(timeout=60.0)
    assert not caller.is_alive()
    # the connection was closed under it, not timed out after the client's 10 s
    assert isinstance(outcome[0], openai.APIConnectionError)
    assert not isinstance(outcome[0], openai.APITimeoutError)


def test_restart_and_idempotent_stop() -> None:
    srv = OpenAICompatServer()
    with pytest.raises(RuntimeError):
        _ = srv.port
    with srv:
        assert chat(make_client(srv)).choices
    srv.stop()
    with srv:
        assert chat(make_client(srv)).choices
    assert len(srv.requests) == 2


@pytest.mark.parametrize("sigint_ignored", [False, True], ids=["plain", "sigint-ignored"])
def test_command_line_runs_until_interrupted(sigint_ignored: bool) -> None:
    """Ctrl-C stops it, also when it was started with SIGINT ignored (a background job of a
    script inherits SIG_IGN, and Python keeps it: the server then never stopped)."""
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    argv = [sys.executable, "-m", "relevancy.testing.openai_server", "--port", "0", "--no-n"]
    process = subprocess.Popen(
        with_sigint_ignored(argv) if sigint_ignored else argv,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
        cwd=REPO_ROOT,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        base_url = line.strip().rsplit(" ", 1)[-1]
        assert base_url.startswith("http://127.0.0.1:") and base_url.endswith("/v1")
        client = openai.OpenAI(base_url=base_url, api_key="k", max_retries=0, timeout=30)
        assert len(client.chat.completions.create(model="m", messages=MESSAGES, n=3).choices) == 1
        process.send_signal(signal.SIGINT)
        # a bound on a hang, not a speed check: a busy 2-core machine took over 5 s to exit
        assert process.wait(timeout=60) == 0
        assert process.stdout.read().strip() == "Stopping."
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()
