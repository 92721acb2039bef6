"""The OpenAI-compatible backend over real HTTP against our test server on 127.0.0.1."""

import asyncio
import math
import time

import numpy as np
import pytest

from relevancy import AnswerRelevancy, ConfigError, EmbeddingError, make_embedder, make_generator
from relevancy.testing.openai_server import OpenAICompatServer

from helpers import toy_metric

KEY = "sk-test-RECOGNISABLE-0123456789"


def build(srv, **llm):
    """The metric on the toy server, no cache; ``llm`` goes to the generator."""
    return toy_metric(srv, api_key=KEY, llm=llm, cache=False)


def embed(emb, texts):
    async def go():
        try:
            return await emb.aembed(texts)
        finally:
            await emb.aclose()

    return asyncio.run(go())


def chat_requests(srv):
    return [r for r in srv.requests if r["path"].endswith("/chat/completions")]


def test_scores_with_n_in_one_request_and_json_schema():
    with OpenAICompatServer(api_key=KEY) as srv:
        r = build(srv).score(
            user_input="Where is France and what is its capital?",
            response="France is in western Europe and Paris is its capital.",
        )
        reqs = chat_requests(srv)
    assert r.ok and len(r.questions) == 3 and all(q.question for q in r.questions)
    assert len(reqs) == 1 and reqs[0]["body"]["n"] == 3
    assert reqs[0]["body"]["response_format"]["type"] == "json_schema"
    assert reqs[0]["body"]["temperature"] > 0
    assert r.noncommittal_method == "llm" and r.llm == "openai:toy-chat"
    assert r.usage["completion_tokens"] > 0
    assert all(req["authorization_ok"] for req in srv.requests)


def test_tops_up_when_server_ignores_n():
    with OpenAICompatServer(honour_n=False) as srv:
        r = build(srv).score(user_input="Where is Paris?", response="Paris is in France.")
        reqs = chat_requests(srv)
    assert len(r.questions) == 3 and r.ok
    assert len(reqs) == 3
    assert len({req["body"]["seed"] for req in reqs}) == 3  # a new seed per top-up request


def test_falls_back_from_json_schema_to_json_mode_then_text():
    with OpenAICompatServer(accept_json_schema=False, text_mode="prose") as srv:
        m = build(srv)
        assert m.score(user_input="Where is Paris?", response="Paris is in France.").ok
        formats = [
            (req["body"] or {}).get("response_format", {}).get("type") for req in chat_requests(srv)
        ]
    assert formats == ["json_schema", "json_object"]
    with OpenAICompatServer(
        accept_json_schema=False, accept_json_object=False, text_mode="prose"
    ) as srv:
        r = build(srv).score(user_input="Where is Paris?", response="Paris is in France.")
    assert r.ok and len(r.questions) == 3


def test_noncommittal_flag_from_the_llm_zeroes(toy_server):
    r = build(toy_server).score(user_input="Where is Paris?", response="I don't know, it depends.")
    assert r.noncommittal and r.value == 0.0


def test_retries_honour_retry_after_then_succeed():
    # A 429 announcing 1.5 s, then a 503 (no header: the SDK's own backoff for a second retry,
    # 0.75-1.0 s), then success: at least 2.25 s. Had the header been ignored, the two waits
    # would be the SDK's 0.375-0.5 s and 0.75-1.0 s: at most 1.5 s.
    with OpenAICompatServer(retry_after=1.5) as srv:
        m = build(srv, max_retries=3)
        srv.script(["429", "503"])
        started = time.perf_counter()
        r = m.score(user_input="Where is Paris?", response="Paris is in France.")
        elapsed = time.perf_counter() - started
        faults = [req["fault"] for req in chat_requests(srv)]
    assert r.ok
    assert faults[:3] == ["429", "503", None]
    assert 2.2 <= elapsed < 1.5 + 1.0 + 2.0, elapsed


def test_persistent_failure_is_a_nan_row_with_a_specific_reason(toy_server):
    m = build(toy_server, max_retries=1)
    toy_server.script(["500"] * 10)
    r = m.score(user_input="Where is Paris?", response="Paris is in France.")
    assert math.isnan(r.value)
    assert "HTTP 500" in r.error and KEY not in r.error


def test_empty_content_is_reported_per_question(toy_server):
    m = build(toy_server, max_retries=0)
    toy_server.script(["empty_content"] * 10)
    r = m.score(user_input="Where is Paris?", response="Paris is in France.")
    reqs = chat_requests(toy_server)
    assert math.isnan(r.value) and "empty content" in r.error
    assert len(r.questions) == 3
    assert all(q.similarity is None and "empty content" in q.error for q in r.questions)
    assert len(reqs) == 7  # bounded: 2 * N + 1 requests, then the row gives up


def test_fewer_choices_than_n_are_topped_up(toy_server):
    m = build(toy_server, max_retries=0)
    toy_server.script(["fewer_choices"])  # the n=3 request gets 2 choices back
    r = m.score(user_input="Where is Paris?", response="Paris is in France.")
    reqs = chat_requests(toy_server)
    assert r.ok and len(r.questions) == 3 and all(q.question for q in r.questions)
    assert [req["fault"] for req in reqs] == ["fewer_choices", None]
    assert reqs[0]["body"]["n"] == 3 and reqs[1]["body"].get("n", 1) == 1  # only the missing one
    assert reqs[1]["body"]["seed"] != reqs[0]["body"]["seed"]


def test_server_capping_n_is_topped_up_on_every_row():
    with OpenAICompatServer(max_n=2) as srv:
        m = build(srv)
        results = [
            m.score(user_input="Where is Paris?", response="Paris is in France."),
            m.score(user_input="Where is Rome?", response="Rome is in Italy."),
        ]
        reqs = chat_requests(srv)
    assert all(r.ok and len(r.questions) == 3 for r in results)
    assert [req["body"].get("n", 1) for req in reqs] == [3, 1, 3, 1]


def test_fewer_choices_every_time_leaves_a_reason_on_the_missing_question(toy_server):
    m = build(toy_server, max_retries=0)
    toy_server.script(["fewer_choices"] * 10)  # n=3 gives 2 choices, each n=1 top-up gives none
    r = m.score(user_input="Where is Paris?", response="Paris is in France.")
    reqs = chat_requests(toy_server)
    assert r.ok and len(r.questions) == 3
    usable = [q for q in r.questions if q.similarity is not None]
    assert len(usable) == 2
    missing = [q for q in r.questions if q.similarity is None]
    assert len(missing) == 1 and "returned no choices" in missing[0].error
    assert r.value == pytest.approx(sum(q.similarity for q in usable) / 2)
    assert len(reqs) == 7  # the top-ups are bounded (2 * N + 1 requests)


def test_wrong_embedding_count_is_an_error_not_a_crash(toy_server):
    emb = make_embedder(
        "openai:toy-embed", base_url=toy_server.base_url, api_key=KEY, max_retries=0
    )
    toy_server.script(["embed_wrong_count"])
    with pytest.raises(EmbeddingError, match="embeddings for 2 texts"):
        embed(emb, ["a", "b"])
    toy_server.script(["embed_wrong_dim"])
    with pytest.raises(EmbeddingError, match="dimension"):
        embed(emb, ["a", "b"])
    ok = embed(emb, ["a", "b"])
    assert ok.shape == (2, 64) and np.allclose(np.linalg.norm(ok, axis=1), 1, atol=1e-5)


def test_embeddings_requested_in_batches(toy_server):
    emb = make_embedder(
        "openai:toy-embed", base_url=toy_server.base_url, api_key=KEY, batch_size=10
    )
    v = embed(emb, [f"text {i}" for i in range(25)])
    sizes = [len(req["body"]["input"]) for req in toy_server.requests]
    assert v.shape[0] == 25 and sizes == [10, 10, 5]


def test_wrong_key_is_a_clear_error_without_the_key():
    with OpenAICompatServer(api_key="sk-the-right-one-123456") as srv:
        r = build(srv, max_retries=0).score(user_input="q?", response="a")
        assert "HTTP 401" in r.error and KEY not in r.error and "check the API key" in r.error


def test_missing_key_and_unreachable_server_are_one_line_errors(capsys):
    from relevancy.cli import main

    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        make_generator("openai:gpt-4o-mini")
    code = main(
        [
            "score-one",
            "q?",
            "a",
            "--llm",
            "openai:x",
            "--embeddings",
            "openai:y",
            "--base-url",
            "http://127.0.0.1:9/v1",
        ]
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "cannot reach http://127.0.0.1:9/v1" in err[0]


def test_falls_back_when_server_refuses_json_schema_with_500():
    # llama-cpp-python's server answers an unknown response_format type with HTTP 500.
    with OpenAICompatServer(accept_json_schema=False) as srv:
        srv.reject_status = 500
        m = build(srv, max_retries=0)
        r = m.score(user_input="Where is Paris?", response="Paris is in France.")
        formats = [(req["body"] or {}).get("response_format", {}) for req in chat_requests(srv)]
    assert r.ok
    assert [f.get("type") for f in formats[:2]] == ["json_schema", "json_object"]
    assert formats[1]["schema"]["required"] == ["question", "noncommittal"]


def test_concurrent_rows_refused_json_schema_fall_back_one_step_only():
    # Regression: rows scored at once all send json_schema before the first refusal comes back;
    # each refusal used to push the shared mode index one step further, so 2 rows fell through
    # to plain text and 3 or more failed with "tuple index out of range".
    with OpenAICompatServer(accept_json_schema=False, honour_n=False) as srv:
        srv.reject_status = 500
        m = build(srv, max_retries=0)
        results = m.score_many(
            [(f"Where is city {i}?", f"City {i} is in country {i}.") for i in range(6)],
            concurrency=6,
        )
        formats = [
            (req["body"] or {}).get("response_format", {}).get("type") for req in chat_requests(srv)
        ]
    assert all(r.ok for r in results), [r.error for r in results if not r.ok]
    assert formats.count("json_schema") >= 2  # the race really happened
    assert set(formats) == {"json_schema", "json_object"}  # never plain text
    assert formats[-1] == "json_object"


def test_server_ignoring_n_gets_a_rows_missing_requests_at_once():
    # A one-request-at-a-time server (llama.cpp's) then serves a row's requests back to back,
    # with identical prompts, so all but the first reuse the whole prompt from its cache.
    import threading

    with OpenAICompatServer(honour_n=False, latency=0.3) as srv:
        in_flight = []
        done = threading.Event()

        def watch():
            while not done.is_set():
                in_flight.append(sum(1 for r in chat_requests(srv) if r["status"] is None))
                done.wait(0.02)

        watcher = threading.Thread(target=watch)
        watcher.start()
        try:
            m = build(srv)
            first = m.score(user_input="Where is Paris?", response="Paris is in France.")
            second = m.score(user_input="Where is Rome?", response="Rome is in Italy.")
        finally:
            done.set()
            watcher.join()
        reqs = chat_requests(srv)
    assert first.ok and second.ok and len(second.questions) == 3
    assert len(reqs) == 6
    # first row: n=3 answered with one choice, then the two missing ones together
    assert reqs[0]["body"]["n"] == 3
    assert sorted(r["body"].get("n") or 1 for r in reqs[1:3]) == [1, 2]
    # later rows: all three at once; the first still asks for n=3 (a server that honours n
    # would clear the hint), each request keeps its own seed
    assert sorted(r["body"].get("n") or 1 for r in reqs[3:]) == [1, 1, 3]
    assert sorted(r["body"]["seed"] for r in reqs[3:]) == [0, 1, 2]
    assert max(in_flight) == 3


def test_hint_that_n_is_ignored_clears_itself_on_a_server_that_honours_n(toy_server):
    m = build(toy_server)
    expected = m.score(user_input="Where is Paris?", response="Paris is in France.")
    m.llm._ignores_n = True  # as if a fault had made one n=3 request come back with one
    again = m.score(user_input="Where is Paris?", response="Paris is in France.")
    after = m.score(user_input="Where is Rome?", response="Rome is in Italy.")
    reqs = chat_requests(toy_server)
    assert [q.question for q in again.questions] == [q.question for q in expected.questions]
    assert not m.llm._ignores_n
    assert len(reqs) == 1 + 3 + 1 and after.ok


# ----------------------------------------------------------------------------- Azure and Ollama

AZURE_KEY = "5c0e9b1f7a3d48e2b6f1c9a07d2e4b38"  # Azure's shape: 32 hex characters, no prefix


@pytest.fixture
def no_azure_env(monkeypatch):
    for var in ("AZURE_OPENAI_API_KEY", "AZURE_OPENAI_ENDPOINT", "OPENAI_API_VERSION"):
        monkeypatch.delenv(var, raising=False)
    return monkeypatch


def test_azure_spec_without_key_or_endpoint_is_one_line(no_azure_env, capsys):
    from relevancy.cli import main

    for make in (make_generator, make_embedder):
        with pytest.raises(ConfigError, match="AZURE_OPENAI_API_KEY and AZURE_OPENAI_ENDPOINT"):
            make("azure:my-deployment")
    no_azure_env.setenv("AZURE_OPENAI_API_KEY", AZURE_KEY)  # the endpoint is still missing
    with pytest.raises(ConfigError, match="AZURE_OPENAI_ENDPOINT") as info:
        make_generator("azure:my-deployment")
    assert "\n" not in str(info.value) and AZURE_KEY not in str(info.value)
    no_azure_env.delenv("AZURE_OPENAI_API_KEY")
    code = main(["score-one", "q?", "a", "--llm", "azure:chat", "--embeddings", "azure:embed"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "AZURE_OPENAI_ENDPOINT" in err[0]


def test_azure_and_ollama_specs_need_a_model_name(no_azure_env):
    no_azure_env.setenv("AZURE_OPENAI_API_KEY", AZURE_KEY)
    no_azure_env.setenv("AZURE_OPENAI_ENDPOINT", "https://example.openai.azure.com")
    for spec in ("azure:", "azure", "ollama:", "ollama"):
        with pytest.raises(ConfigError, match="needs a model name"):
            make_generator(spec)
        with pytest.raises(ConfigError, match="needs an embedding model name"):
            make_embedder(spec)


def test_azure_spec_builds_an_azure_client_that_calls_the_deployment(no_azure_env, toy_server):
    import openai

    # The toy server has no Azure routes: it answers 404, but logs where the requests went.
    endpoint = toy_server.base_url.removesuffix("/v1")
    no_azure_env.setenv("AZURE_OPENAI_API_KEY", AZURE_KEY)
    no_azure_env.setenv("AZURE_OPENAI_ENDPOINT", endpoint)
    gen = make_generator("azure:my-chat", max_retries=0)
    emb = make_embedder("azure:my-embed", max_retries=0)
    assert isinstance(gen._client, openai.AsyncAzureOpenAI)
    assert gen._client.api_key == AZURE_KEY and gen._client._api_version == "2024-10-21"
    assert gen.name == "azure:my-chat" and emb.name == "azure:my-embed"
    assert gen.base_url == f"{endpoint}/openai"
    r = AnswerRelevancy(llm=gen, embeddings=emb, cache=False).score(
        user_input="Where is Paris?", response="Paris is in France."
    )
    with pytest.raises(EmbeddingError, match="HTTP 404"):
        embed(emb, ["Paris"])
    paths = [req["path"] for req in toy_server.requests]
    assert paths == [
        "/openai/deployments/my-chat/chat/completions",
        "/openai/deployments/my-embed/embeddings",
    ]
    assert math.isnan(r.value) and "HTTP 404" in r.error and AZURE_KEY not in r.error


def test_ollama_spec_defaults_to_the_local_ollama_server_without_a_key():
    gen = make_generator("ollama:llama3.2")
    emb = make_embedder("ollama:nomic-embed-text")
    assert gen.base_url == emb.base_url == "http://localhost:11434/v1"
    assert gen.model == "llama3.2" and emb.model == "nomic-embed-text"
    assert gen._client.api_key == "no-key-needed"  # Ollama accepts any key; none is asked for


def test_ollama_spec_with_a_base_url_scores_through_that_server(toy_server):
    m = AnswerRelevancy(
        llm=make_generator("ollama:toy-chat", base_url=toy_server.base_url),
        embeddings=make_embedder("ollama:toy-embed", base_url=toy_server.base_url),
        cache=False,
    )
    r = m.score(user_input="Where is Paris?", response="Paris is in France.")
    bodies = [(req["path"], req["body"]["model"]) for req in toy_server.requests]
    assert r.ok and len(r.questions) == 3
    assert ("/v1/chat/completions", "toy-chat") in bodies
    assert ("/v1/embeddings", "toy-embed") in bodies


def test_chat_replies_are_read_without_the_sdks_models_and_keep_their_headers():
    """The generator posts with the SDK's public client.post and reads the JSON itself: the
    reply's fields, its usage and the rate-limit headers all still arrive."""
    import httpx2

    from relevancy.backends._openai_client import http_response_class, read_json_reply
    from relevancy.testing.openai_server import CHAT_MODEL

    assert http_response_class() is httpx2.Response
    reply = read_json_reply(
        httpx2.Response(200, json={"choices": [{"message": {"content": "x"}}], "usage": None})
    )
    assert reply.choices[0].message.content == "x" and reply.usage is None
    with pytest.raises(ValueError):
        read_json_reply(httpx2.Response(200, content=b"<html>busy</html>"))
    with OpenAICompatServer(rpm=50) as srv:
        gen = make_generator(f"openai:{CHAT_MODEL}", base_url=srv.base_url, api_key="sk-test")

        async def go():
            try:
                return await gen.agenerate("Paris is the capital of France.", 3)
            finally:
                await gen.aclose()

        out = asyncio.run(go())
        assert out.requests == 1 and out.usage["prompt_tokens"] > 0
        assert all(g.usable for g in out.generations)
        # the controller saw the server's x-ratelimit-* headers: it knows the limit
        assert gen.rate.snapshot()["limits"].get("requests") == 50
