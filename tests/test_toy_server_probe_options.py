"""The toy server's options for the second fault probe, checked with the ``openai`` SDK over
HTTP: header overrides (limits on or off), faults in a repeating pattern, a 429 that names no
wait, every batch fault, and the command line that sets them."""

from __future__ import annotations

import json

import openai
import pytest

from relevancy.testing._batches import BATCH_FAULTS
from relevancy.testing._cli import parse_args, server_options
from relevancy.testing.openai_server import CHAT_MODEL, FaultPlan, OpenAICompatServer

MESSAGES = [{"role": "user", "content": "What is the capital of France?"}]


def sdk(srv: OpenAICompatServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=srv.base_url, api_key="sk-test", max_retries=0)


@pytest.mark.parametrize("rpm", [None, 100])
def test_header_overrides_are_on_every_answer(rpm) -> None:
    lying = {"x-ratelimit-remaining-requests": "nan", "x-ratelimit-reset-requests": "23h"}
    with OpenAICompatServer(headers=lying, rpm=rpm) as srv:
        raw = sdk(srv).chat.completions.with_raw_response.create(
            model=CHAT_MODEL, messages=MESSAGES
        )
    assert raw.headers["x-ratelimit-remaining-requests"] == "nan"
    assert raw.headers["x-ratelimit-reset-requests"] == "23h"
    if rpm:
        assert raw.headers["x-ratelimit-limit-requests"] == "100"  # the others still there


def test_a_fault_pattern_repeats_in_order_and_a_429_may_name_no_wait() -> None:
    plan = FaultPlan(pattern=(None, None, "429"))
    with OpenAICompatServer(faults=plan, retry_after=None) as srv:
        client = sdk(srv)
        statuses, headers = [], []
        for _ in range(6):
            try:
                client.chat.completions.create(model=CHAT_MODEL, messages=MESSAGES)
                statuses.append(200)
            except openai.RateLimitError as exc:
                statuses.append(429)
                headers.append(exc.response.headers)
    assert statuses == [200, 200, 429, 200, 200, 429]
    assert all("retry-after" not in h and "retry-after-ms" not in h for h in headers)
    with pytest.raises(ValueError, match="unknown fault kind"):
        FaultPlan(pattern=(None, "teapot"))


@pytest.mark.parametrize("fault", BATCH_FAULTS)
def test_every_batch_fault_ends_the_batch_badly(fault) -> None:
    line = {
        "custom_id": "k1",
        "method": "POST",
        "url": "/v1/chat/completions",
        "body": {"model": CHAT_MODEL, "messages": MESSAGES, "n": 3},
    }
    lines = [{**line, "custom_id": f"k{i}"} for i in range(4)]
    with OpenAICompatServer(batch_fault=fault) as srv:
        client = sdk(srv)
        content = "".join(json.dumps(x) + "\n" for x in lines).encode()
        uploaded = client.files.create(file=("in.jsonl", content), purpose="batch")
        batch = client.batches.create(
            input_file_id=uploaded.id, endpoint="/v1/chat/completions", completion_window="24h"
        )
        done = client.batches.retrieve(batch.id)
        output = client.files.content(done.output_file_id).text if done.output_file_id else ""
    if fault in ("failed", "expired"):
        assert done.status == fault and not done.output_file_id and done.errors.data
        return
    assert done.status == "completed"
    if fault == "truncated":
        with pytest.raises(json.JSONDecodeError):
            [json.loads(x) for x in output.splitlines() if x.strip()]
        return
    found = [json.loads(x) for x in output.splitlines() if x.strip()]
    ids = [x["custom_id"] for x in found]
    choices = [x["response"]["body"]["choices"] for x in found]
    if fault == "missing":
        assert ids == ["k0", "k2"]
    elif fault == "unknown_ids":
        assert ids == ["k0", "unknown-2", "k2", "unknown-4"]
    elif fault == "few_choices":
        assert [len(c) for c in choices] == [1] * 4
    else:  # unusable: not the JSON asked for
        assert all(not c["message"]["content"].startswith("{") for cs in choices for c in cs)


def test_the_command_line_sets_the_probe_options() -> None:
    options = server_options(
        parse_args(
            [
                "--header",
                "x-ratelimit-remaining-requests=inf",
                "--fault-pattern",
                "ok,ok,429",
                "--no-retry-after",
                "--batch-fault",
                "expired",
                "--seed",
                "7",
                "--seeded",
            ]
        )
    )
    assert options["headers"] == {"x-ratelimit-remaining-requests": "inf"}
    assert options["faults"].pattern == (None, None, "429")
    assert options["retry_after"] is None and options["batch_fault"] == "expired"
    assert options["seed"] == 7 and options["seeded"] is True
    assert server_options(parse_args(["--retry-after", "3600"]))["retry_after"] == 3600
    with pytest.raises(SystemExit):
        parse_args(["--header", "no-equals-sign"])
    with pytest.raises(ValueError, match="unknown batch fault"):
        OpenAICompatServer(batch_fault="on_fire")
