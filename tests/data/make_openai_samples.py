"""Write the OpenAI samples in tests/data/openai/ with the real OpenAI SDK.

The chat calls of ``sample_app.py`` (multi-turn, a tool call and the call that answers its
result, content parts, a ``developer`` role, German, French and Japanese, structured output, a
failed call, an empty reply) are made with the SDK against the toy server, and written the ways
an app keeps them:

``chat.jsonl``           each call's messages with the reply appended (the chat/fine-tuning
                         layout), the case in ``metadata``
``request_log.jsonl``    one record per call: ``request`` (the SDK's arguments), ``response``
                         (``completion.model_dump()``), ``request_id``, ``timestamp`` (epoch ms)
``batch/input.jsonl``    the Batch API input file: ``custom_id``, ``method``, ``url``, ``body``
``batch/output.jsonl``   the output file: each request's body sent with the SDK, its
                         ``ChatCompletion`` as ``response.body`` (the toy server has no Batch
                         API, so the envelope is written here as OpenAI documents it)
``batch/errors.jsonl``   the error file: the request that failed, with its status and error
``truth.json``           each case's question and answer

Made with the versions in ``truth.json``. To refresh::

    .venv/bin/python tests/data/make_openai_samples.py
"""

from __future__ import annotations

import importlib.metadata as md
import json
import sys
import time
from pathlib import Path
from typing import Any

import openai

from relevancy.testing.openai_server import OpenAICompatServer

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/
import sample_app  # noqa: E402

OUT = Path(__file__).resolve().parent / "openai"
URL = "/v1/chat/completions"


def write_jsonl(path: Path, records: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps(r, ensure_ascii=False) for r in records]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def main() -> None:
    chats, log, inputs, outputs, errors = [], [], [], [], []
    truth: dict[str, dict[str, Any]] = {}
    with OpenAICompatServer(text_mode="lines") as toy:
        client = openai.OpenAI(base_url=toy.base_url, api_key="sk-toy", max_retries=0)
        # a streamed call has no place in a batch or a request log of whole replies
        calls = [
            (case, {"model": sample_app.MODEL, "messages": messages, **kwargs}, fault)
            for case, (messages, kwargs, fault) in sample_app.CHATS.items()
            if not kwargs.get("stream")
        ]
        calls.append((sample_app.TOOL_RESULT, None, None))
        tool_call = None
        for number, (case, body, fault) in enumerate(calls, start=1):
            if body is None:  # send the tool's result back
                messages, reply = tool_call
                call = reply["tool_calls"][0]
                messages = [
                    *messages,
                    reply,
                    {
                        "role": "tool",
                        "tool_call_id": call["id"],
                        "content": sample_app.MANUAL["firmware"],
                    },
                ]
                body = {
                    "model": sample_app.MODEL,
                    "messages": messages,
                    "tools": [sample_app.SEARCH_TOOL],
                }
            question = sample_app.question_of(body["messages"])
            inputs.append({"custom_id": case, "method": "POST", "url": URL, "body": body})
            if fault:
                toy.script([fault])
            started = time.time()
            try:
                raw = client.chat.completions.with_raw_response.create(**body)
            except openai.APIStatusError as exc:
                error = exc.response.json()
                request_id = exc.response.headers.get("x-request-id")
                errors.append(
                    {
                        "id": f"batch_req_{number:04d}",
                        "custom_id": case,
                        "response": {
                            "status_code": exc.status_code,
                            "request_id": request_id,
                            "body": error,
                        },
                        "error": None,
                    }
                )
                log.append(
                    {
                        "timestamp": int(started * 1000),
                        "request": body,
                        "response": None,
                        "error": error["error"],
                        "request_id": request_id,
                    }
                )
                truth[case] = {"question": question, "answer": None, "skip": "failed"}
                continue
            completion = raw.parse()
            reply = completion.choices[0].message.model_dump(exclude_none=True)
            if case == "tool-call":
                tool_call = (body["messages"], reply)
            answer = completion.choices[0].message.content or ""
            truth[case] = {"question": question, "answer": answer or None}
            if not answer:
                truth[case]["skip"] = "no answer"
            request_id = raw.headers.get("x-request-id")
            dumped = completion.model_dump(mode="json")
            outputs.append(
                {
                    "id": f"batch_req_{number:04d}",
                    "custom_id": case,
                    "response": {"status_code": 200, "request_id": request_id, "body": dumped},
                    "error": None,
                }
            )
            log.append(
                {
                    "timestamp": int(started * 1000),
                    "request": body,
                    "response": dumped,
                    "request_id": request_id,
                    "duration_ms": round(1000 * (time.time() - started)),
                }
            )
            chats.append({"messages": [*body["messages"], reply], "metadata": {"case": case}})
    write_jsonl(OUT / "chat.jsonl", chats)
    write_jsonl(OUT / "request_log.jsonl", log)
    write_jsonl(OUT / "batch" / "input.jsonl", inputs)
    write_jsonl(OUT / "batch" / "output.jsonl", outputs)
    write_jsonl(OUT / "batch" / "errors.jsonl", errors)
    versions = {name: md.version(name) for name in ("openai",)}
    sample_app.write_truth(OUT / "truth.json", truth, versions)
    print(f"wrote {len(inputs)} calls to {OUT}")


if __name__ == "__main__":
    main()
