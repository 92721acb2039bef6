"""Write the Phoenix samples in tests/data/phoenix/ with a real Phoenix server.

The app in ``sample_app.py`` makes its calls with the real OpenAI SDK against the toy server,
traced by OpenInference's OpenAI instrumentation into a Phoenix server started in a temporary
folder; then every export a Phoenix user has is written as they would write it:

``spans.parquet``        ``Client().spans.get_spans_dataframe(...).to_parquet(...)``
``spans.csv``            the same frame's ``to_csv()`` (lists and dicts as Python reprs)
``spans.jsonl``          the same frame's ``to_json(orient="records", lines=True)`` (times as
                         epoch milliseconds, pandas' default)
``rest_spans.json``      ``GET /v1/projects/{project}/spans`` (the REST API's JSON)
``otlp_spans.json``      ``GET /v1/projects/{project}/spans/otlpv1`` (OTLP JSON)
``dataset_examples.json`` ``GET /v1/datasets/{id}/examples`` of a dataset made from the LLM
                         spans (``input: {messages}``, ``output: {messages}``)
``dataset.csv``, ``dataset_openai_ft.jsonl``, ``dataset_openai_evals.jsonl``
                         the dataset's downloads (CSV, OpenAI fine-tuning, OpenAI evals)
``truth.json``           each case's question and answer (by the ``case`` metadata key)
``spans_redacted.jsonl`` the same app traced with ``OPENINFERENCE_HIDE_INPUTS=true`` (every
                         input written as ``__REDACTED__``), exported as docs/cli.md says
                         (``to_json(orient="records", lines=True, date_format="iso")``)

Made with the versions in ``truth.json`` (arize-phoenix 20.26.1 as the server). To refresh::

    bash scripts/setup.sh dev      # .venv with the phoenix extra, .venv-phoenix with the server
    .venv/bin/python tests/data/make_phoenix_samples.py
"""

from __future__ import annotations

import importlib.metadata as md
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from phoenix.client import Client

from relevancy.testing.openai_server import OpenAICompatServer
from relevancy.testing.tool_servers import PhoenixServer

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/
import sample_app  # noqa: E402

OUT = Path(__file__).resolve().parent / "phoenix"
PROJECT = "router-support"
PRIVATE = "router-support-private"


def versions() -> dict[str, str]:
    names = [
        "arize-phoenix-client",
        "arize-phoenix-otel",
        "openinference-instrumentation-openai",
        "openai",
        "pandas",
        "pyarrow",
    ]
    found = {name: md.version(name) for name in names}
    return {"arize-phoenix (server)": "20.26.1", **found}


def wait_for_spans(client: Client, expected: int, project: str = PROJECT) -> Any:
    for _ in range(120):
        frame = client.spans.get_spans_dataframe(project_identifier=project, limit=10_000)
        if len(frame) >= expected:
            return frame
        time.sleep(0.5)
    raise RuntimeError(f"Phoenix holds {len(frame)} spans, expected {expected}")


def message(m: dict[str, Any]) -> dict[str, Any]:
    """An OpenInference message as an OpenAI one (text parts as ``{"type": "text"}`` parts)."""
    content: Any = m.get("message.content") or ""
    parts = m.get("message.contents")
    if not content and parts is not None and len(parts):
        content = [
            {"type": "text", "text": p["message_content.text"]}
            for p in parts
            if p.get("message_content.type") == "text"
        ]
    return {"role": m["message.role"], "content": content}


def dataset_from(frame: Any) -> tuple[list[dict], list[dict], list[dict]]:
    """What "Add to dataset" keeps of each LLM span with an answer: its messages in and out."""
    inputs, outputs, metadata = [], [], []
    for _, span in frame.iterrows():
        if span["span_kind"] != "LLM" or not isinstance(
            span["attributes.llm.output_messages"], list
        ):
            continue
        ins = [message(m) for m in span["attributes.llm.input_messages"]]
        outs = [message(m) for m in span["attributes.llm.output_messages"]]
        if not any(m["content"] for m in outs):
            continue
        inputs.append({"messages": ins})
        outputs.append({"messages": outs})
        meta = span["attributes.metadata"]
        meta = meta if isinstance(meta, dict) else json.loads(meta)
        metadata.append({"span_id": span["context.span_id"], **meta})
    return inputs, outputs, metadata


def main() -> None:
    OUT.mkdir(exist_ok=True)
    with (
        tempfile.TemporaryDirectory() as tmp,
        PhoenixServer(Path(tmp) / "phoenix") as phoenix,
        OpenAICompatServer(text_mode="lines") as toy,
    ):
        print(f"phoenix serve answered after {phoenix.start_s:.1f} s at {phoenix.base_url}")
        truth = sample_app.trace_into_phoenix(phoenix.collector, PROJECT, toy)
        # one span per chat call, three per pipeline (root, retriever, model)
        client = Client(base_url=phoenix.base_url)
        spans = len(sample_app.CHATS) + 1 + 3 * len(sample_app.PIPELINES)
        frame = wait_for_spans(client, spans)
        frame = frame.sort_values("start_time")
        frame.to_parquet(OUT / "spans.parquet")
        frame.to_csv(OUT / "spans.csv")
        # epoch milliseconds: what pandas writes unless told otherwise (until pandas 4)
        frame.to_json(OUT / "spans.jsonl", orient="records", lines=True, date_format="epoch")
        http = httpx.Client(base_url=phoenix.base_url, timeout=30)
        for name, path in (("rest_spans.json", "spans"), ("otlp_spans.json", "spans/otlpv1")):
            body = http.get(f"/v1/projects/{PROJECT}/{path}", params={"limit": 1000})
            body.raise_for_status()
            (OUT / name).write_text(json.dumps(body.json(), indent=1, ensure_ascii=False) + "\n")
        inputs, outputs, metadata = dataset_from(frame)
        dataset = client.datasets.create_dataset(
            name="router-answers",
            inputs=inputs,
            outputs=outputs,
            metadata=metadata,
            dataset_description="LLM spans of the router support app",
        )
        downloads = {
            "dataset_examples.json": f"/v1/datasets/{dataset.id}/examples",
            "dataset.csv": f"/v1/datasets/{dataset.id}/csv",
            "dataset_openai_ft.jsonl": f"/v1/datasets/{dataset.id}/jsonl/openai_ft",
            "dataset_openai_evals.jsonl": f"/v1/datasets/{dataset.id}/jsonl/openai_evals",
        }
        for name, path in downloads.items():
            body = http.get(path)
            body.raise_for_status()
            if name.endswith(".json"):
                text = json.dumps(body.json(), indent=1, ensure_ascii=False) + "\n"
                (OUT / name).write_text(text, encoding="utf-8")
            else:
                (OUT / name).write_bytes(body.content)
        sample_app.write_truth(OUT / "truth.json", truth, versions())
        hidden = os.environ.get("OPENINFERENCE_HIDE_INPUTS")
        os.environ["OPENINFERENCE_HIDE_INPUTS"] = "true"  # as a team that hides inputs sets it
        try:
            sample_app.trace_into_phoenix(phoenix.collector, PRIVATE, toy)
        finally:
            if hidden is None:
                os.environ.pop("OPENINFERENCE_HIDE_INPUTS")
            else:
                os.environ["OPENINFERENCE_HIDE_INPUTS"] = hidden
        private = wait_for_spans(client, spans, PRIVATE).sort_values("start_time")
        private.to_json(
            OUT / "spans_redacted.jsonl", orient="records", lines=True, date_format="iso"
        )
    print(f"wrote {len(frame)} spans and the dataset's {len(inputs)} examples to {OUT}")


if __name__ == "__main__":
    main()
