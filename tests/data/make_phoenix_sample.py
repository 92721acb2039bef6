"""Write tests/data/phoenix_spans.parquet: spans shaped like Phoenix's ``get_spans_dataframe()``.

One row per span, indexed by ``context.span_id``, with the span's own columns (name, span_kind,
parent_id, start_time, end_time, status_code, status_message, events, context.trace_id) and its
OpenInference attributes flattened as ``attributes.*`` columns, saved with ``df.to_parquet``
as a user would. Needs only pandas and pyarrow::

    python tests/data/make_phoenix_sample.py
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parent
T0 = pd.Timestamp("2025-03-07 14:00:00", tz="UTC")


def span(span_id, trace_id, name, kind, parent, start_s, end_s, status="OK", **attrs):
    row = {
        "context.span_id": span_id,
        "name": name,
        "span_kind": kind,
        "parent_id": parent,
        "start_time": T0 + pd.Timedelta(seconds=start_s),
        "end_time": T0 + pd.Timedelta(seconds=end_s),
        "status_code": status,
        "status_message": "" if status != "ERROR" else "APITimeoutError: Request timed out.",
        "events": [],
        "context.trace_id": trace_id,
        "attributes.openinference.span.kind": kind,
    }
    row.update({f"attributes.{k}": v for k, v in attrs.items()})
    return row


def llm_io(question: str, answer: str | None) -> dict:
    messages = [
        {"message.role": "system", "message.content": "Answer with the retrieved manual pages."},
        {"message.role": "user", "message.content": question},
    ]
    out = {
        "input.value": json.dumps(
            {
                "messages": [
                    {"role": m["message.role"], "content": m["message.content"]} for m in messages
                ],
                "model": "gpt-4o-mini",
            }
        ),
        "input.mime_type": "application/json",
        "llm.model_name": "gpt-4o-mini",
        "llm.input_messages": messages,
    }
    if answer is not None:
        out["output.value"] = json.dumps(
            {"choices": [{"index": 0, "message": {"role": "assistant", "content": answer}}]}
        )
        out["output.mime_type"] = "application/json"
        out["llm.output_messages"] = [{"message.role": "assistant", "message.content": answer}]
    return out


ROWS = [
    # trace 1: a LlamaIndex query engine: plain text in and out at the root
    span(
        "a1f0000000000001",
        "e7c1000000000000000000000000a001",
        "RetrieverQueryEngine.query",
        "CHAIN",
        None,
        0.0,
        2.4,
        **{
            "input.value": "How do I reset the router to factory settings?",
            "output.value": "Hold the reset button on the back for ten seconds until the "
            "lights blink, then wait two minutes for it to restart.",
            "metadata": json.dumps({"prompt_version": "v1", "channel": "web"}),
            "tag.tags": ["web", "manual"],
            "session.id": "chat-311",
            "user.id": "cust-88",
        },
    ),
    span(
        "a1f0000000000002",
        "e7c1000000000000000000000000a001",
        "VectorIndexRetriever.retrieve",
        "RETRIEVER",
        "a1f0000000000001",
        0.1,
        0.5,
        **{
            "input.value": "How do I reset the router to factory settings?",
            "retrieval.documents": [
                {
                    "document.id": "man-4",
                    "document.score": 0.82,
                    "document.content": "Factory reset: hold RESET 10 s.",
                }
            ],
        },
    ),
    span(
        "a1f0000000000003",
        "e7c1000000000000000000000000a001",
        "OpenAI.chat",
        "LLM",
        "a1f0000000000001",
        0.6,
        2.3,
        **llm_io(
            "How do I reset the router to factory settings?",
            "Hold the reset button on the back for ten seconds until the lights blink, then "
            "wait two minutes for it to restart.",
        ),
    ),
    # trace 2: a LangChain chain: JSON in and out at the root
    span(
        "a1f0000000000011",
        "e7c1000000000000000000000000a002",
        "RunnableSequence",
        "CHAIN",
        None,
        10.0,
        11.9,
        **{
            "input.value": json.dumps({"input": "What does a blinking orange light mean?"}),
            "input.mime_type": "application/json",
            "output.value": json.dumps(
                {
                    "output": "A blinking orange light means the router "
                    "has no internet connection; check the cable."
                }
            ),
            "output.mime_type": "application/json",
            "metadata": json.dumps({"prompt_version": "v2", "channel": "app"}),
            "tag.tags": ["app"],
            "session.id": "chat-312",
            "user.id": "cust-91",
        },
    ),
    span(
        "a1f0000000000012",
        "e7c1000000000000000000000000a002",
        "ChatOpenAI",
        "LLM",
        "a1f0000000000011",
        10.2,
        11.8,
        **llm_io(
            "What does a blinking orange light mean?",
            "A blinking orange light means the router has no internet connection; check the cable.",
        ),
    ),
    # trace 3: the model call timed out: no output anywhere
    span(
        "a1f0000000000021",
        "e7c1000000000000000000000000a003",
        "RetrieverQueryEngine.query",
        "CHAIN",
        None,
        20.0,
        50.0,
        status="ERROR",
        **{
            "input.value": "Can I use the router as a mesh satellite?",
            "metadata": json.dumps({"prompt_version": "v2", "channel": "web"}),
            "tag.tags": ["web"],
            "session.id": "chat-313",
        },
    ),
    span(
        "a1f0000000000022",
        "e7c1000000000000000000000000a003",
        "OpenAI.chat",
        "LLM",
        "a1f0000000000021",
        20.5,
        50.0,
        status="ERROR",
        **llm_io("Can I use the router as a mesh satellite?", None),
    ),
    # trace 4: another query, prompt v1
    span(
        "a1f0000000000031",
        "e7c1000000000000000000000000a004",
        "RetrieverQueryEngine.query",
        "CHAIN",
        None,
        60.0,
        61.7,
        **{
            "input.value": "How do I change the Wi-Fi password?",
            "output.value": "Sign in at 192.168.1.1, open Wireless > Security, type the new "
            "password and click Save.",
            "metadata": json.dumps({"prompt_version": "v1", "channel": "web"}),
            "tag.tags": ["web"],
            "session.id": "chat-314",
            "user.id": "cust-90",
        },
    ),
]


def main() -> None:
    frame = pd.DataFrame(ROWS).set_index("context.span_id")
    frame.to_parquet(HERE / "phoenix_spans.parquet")


if __name__ == "__main__":
    main()
