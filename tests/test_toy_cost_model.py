"""The toy server's remote-API cost model: usage billed as OpenAI bills it, slots, the usage log,
and Ragas-style prompts read right. Only what the server does is checked, never how fast."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path

import openai
import pytest

from relevancy.core.prompt import chat_messages
from relevancy.testing._toy_model import answer_text, approx_tokens, make_question
from relevancy.testing.openai_server import CHAT_MODEL, EMBEDDING_MODEL, OpenAICompatServer

ANSWER = "The Eiffel Tower is in Paris and was finished in 1889 for the World Fair."


_CLIENTS: list[openai.OpenAI] = []


@pytest.fixture(autouse=True)
def _close_clients() -> Iterator[None]:
    yield
    while _CLIENTS:
        _CLIENTS.pop().close()


def client(srv: OpenAICompatServer) -> openai.OpenAI:
    made = openai.OpenAI(base_url=srv.base_url, api_key="x", max_retries=0)
    _CLIENTS.append(made)  # closed after the test (open sockets would warn)
    return made


def test_usage_bills_the_prompt_once_whatever_n_is(tmp_path: Path) -> None:
    log = tmp_path / "usage.jsonl"
    with OpenAICompatServer(tokenizer="approx", usage_log=str(log)) as srv:
        one = client(srv).chat.completions.create(
            model=CHAT_MODEL, messages=chat_messages(ANSWER), n=1
        )
        three = client(srv).chat.completions.create(
            model=CHAT_MODEL, messages=chat_messages(ANSWER), n=3
        )
        emb = client(srv).embeddings.create(model=EMBEDDING_MODEL, input=["a b c", "d"])
    assert one.usage.prompt_tokens == three.usage.prompt_tokens
    contents = [c.message.content for c in three.choices]
    assert three.usage.completion_tokens == sum(approx_tokens(c) for c in contents)
    assert three.usage.total_tokens == three.usage.prompt_tokens + three.usage.completion_tokens
    assert three.usage.prompt_tokens_details.cached_tokens == 0
    assert three.usage.completion_tokens_details.reasoning_tokens == 0
    # the chat format's overhead: 3 tokens per message and 3 to start the reply
    messages = chat_messages(ANSWER)
    text_tokens = sum(approx_tokens(m["content"]) for m in messages)
    assert one.usage.prompt_tokens == text_tokens + 3 * len(messages) + 3

    lines = [json.loads(x) for x in log.read_text().splitlines()]
    assert [x["path"] for x in lines] == ["/v1/chat/completions"] * 2 + ["/v1/embeddings"]
    assert [x["choices"] for x in lines[:2]] == [1, 3]
    assert lines[1]["prompt_tokens"] == three.usage.prompt_tokens
    assert lines[1]["completion_tokens"] == three.usage.completion_tokens
    assert lines[2]["prompt_tokens"] == emb.usage.prompt_tokens == approx_tokens("a b c d")
    assert all(x["status"] == 200 and x["served_s"] >= 0 for x in lines)


def test_words_stay_the_default_count() -> None:
    with OpenAICompatServer() as srv:
        out = client(srv).chat.completions.create(
            model=CHAT_MODEL, messages=[{"role": "user", "content": "Response: one two three"}]
        )
    assert out.usage.prompt_tokens == 4


def test_a_server_ignoring_n_bills_each_request(tmp_path: Path) -> None:
    with OpenAICompatServer(honour_n=False, tokenizer="approx") as srv:
        out = client(srv).chat.completions.create(
            model=CHAT_MODEL, messages=chat_messages(ANSWER), n=3
        )
        entry = srv.requests[-1]
    assert len(out.choices) == 1
    assert entry["choices"] == 1
    assert entry["decode_tokens"] == out.usage.completion_tokens


def test_decode_time_follows_the_longest_choice() -> None:
    with OpenAICompatServer(tokenizer="approx", token_latency=0.0001) as srv:
        out = client(srv).chat.completions.create(
            model=CHAT_MODEL, messages=chat_messages(ANSWER), n=4
        )
        entry = srv.requests[-1]
    lengths = [approx_tokens(c.message.content) for c in out.choices]
    assert entry["decode_tokens"] == max(lengths) < sum(lengths)


@pytest.mark.parametrize("slots", [1, 2])
def test_slots_bound_the_requests_served_at_once(slots: int) -> None:
    with OpenAICompatServer(slots=slots, latency=0.05) as srv:
        errors: list[BaseException] = []

        def call() -> None:
            try:
                client(srv).chat.completions.create(
                    model=CHAT_MODEL, messages=chat_messages(ANSWER)
                )
            except BaseException as exc:  # reported below
                errors.append(exc)

        threads = [threading.Thread(target=call) for _ in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        stats = srv.stats()
    assert not errors
    assert stats["by_status"] == {200: 6}
    assert stats["max_in_flight"] == slots


def test_unbounded_server_serves_many_at_once() -> None:
    with OpenAICompatServer(latency=0.2) as srv:
        threads = [
            threading.Thread(
                target=lambda: client(srv).chat.completions.create(
                    model=CHAT_MODEL, messages=chat_messages(ANSWER)
                )
            )
            for _ in range(8)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert srv.stats()["max_in_flight"] > 1


def test_ragas_style_json_input_is_read_as_the_response() -> None:
    prompt = (
        'Generate a question.\nExample\nInput: {\n    "response": "Albert Einstein was born in '
        'Germany."\n}\nOutput: {"question": "Where was Einstein born?"}\n\nNow perform the '
        'same with the following input\ninput: {\n    "response": "' + ANSWER + '"\n}\nOutput: '
    )
    assert answer_text(prompt) == ANSWER
    assert "Eiffel" in make_question(answer_text(prompt))
    # our own prompt still reads after its last "Response:" marker
    assert answer_text("Response: a\nResponse: " + ANSWER) == ANSWER


def test_cost_model_options_are_checked() -> None:
    with pytest.raises(ValueError):
        OpenAICompatServer(slots=0)
    with pytest.raises(ValueError):
        OpenAICompatServer(token_latency=-1)
    with pytest.raises(ValueError):
        OpenAICompatServer(tokenizer="tiktoken")
