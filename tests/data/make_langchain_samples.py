"""Write the LangChain samples in tests/data/phoenix/ with a real Phoenix server.

A small LangChain app (a prompt template, ``ChatOpenAI`` against the toy server, an output
parser) is traced by OpenInference's LangChain instrumentation into a Phoenix server started
in a temporary folder: chains invoked and streamed, and the chat model called on its own. The
span frame is then exported as docs/cli.md tells a Phoenix user to (a frame holding a streamed
call cannot go to Parquet as it is):

``langchain_spans.jsonl``  ``get_spans_dataframe(...).to_json(orient="records", lines=True,
                           date_format="iso")``
``langchain_truth.json``   each case's question and answer (by the ``case`` metadata key)

LangChain is not one of relevancy's dependencies; to refresh::

    bash scripts/setup.sh dev
    .venv/bin/pip install -c constraints.txt langchain-openai \\
        openinference-instrumentation-langchain
    .venv/bin/python tests/data/make_langchain_samples.py
"""

from __future__ import annotations

import importlib.metadata as md
import json
import tempfile
import time
from pathlib import Path

from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_openai import ChatOpenAI
from openinference.instrumentation import using_metadata
from openinference.instrumentation.langchain import LangChainInstrumentor
from phoenix.client import Client
from phoenix.otel import register

from relevancy.testing.openai_server import OpenAICompatServer
from relevancy.testing.tool_servers import PhoenixServer

OUT = Path(__file__).resolve().parent / "phoenix"
PROJECT = "router-support-langchain"
SYSTEM = "You answer questions about the Aurora X2 router from its manual. Be brief."
#: case -> (how the app calls LangChain, the user's question)
CASES = {
    "chain-invoke": ("invoke", "How do I reset the router to factory settings?"),
    "chain-invoke-2": ("invoke", "What does a blinking orange light mean?"),
    "chain-stream": ("stream", "How long does the router take to restart?"),
    "chain-batch": ("batch", "Is the guest network on by default?"),
    "model-only": ("model", "Where do I change the Wi-Fi password?"),
}


def versions() -> dict[str, str]:
    names = [
        "langchain-core",
        "langchain-openai",
        "openinference-instrumentation-langchain",
        "arize-phoenix-client",
        "arize-phoenix-otel",
        "openai",
        "pandas",
    ]
    return {"arize-phoenix (server)": "20.26.1", **{n: md.version(n) for n in names}}


def main() -> None:
    with (
        tempfile.TemporaryDirectory() as tmp,
        PhoenixServer(Path(tmp) / "phoenix") as phoenix,
        OpenAICompatServer(text_mode="lines") as toy,
    ):
        provider = register(
            endpoint=phoenix.collector,
            project_name=PROJECT,
            batch=False,
            set_global_tracer_provider=False,
            verbose=False,
        )
        instrumentor = LangChainInstrumentor()
        instrumentor.instrument(tracer_provider=provider)
        model = ChatOpenAI(model="toy-chat", base_url=toy.base_url, api_key="sk-toy", max_retries=0)
        prompt = ChatPromptTemplate.from_messages([("system", SYSTEM), ("human", "{question}")])
        chain = prompt | model | StrOutputParser()
        truth = {}
        try:
            for case, (how, question) in CASES.items():
                with using_metadata({"case": case}):
                    if how == "invoke":
                        answer = chain.invoke({"question": question})
                    elif how == "stream":
                        answer = "".join(chain.stream({"question": question}))
                    elif how == "batch":
                        (answer,) = chain.batch([{"question": question}])
                    else:
                        answer = model.invoke([("system", SYSTEM), ("human", question)]).content
                truth[case] = {"question": question, "answer": answer}
            provider.force_flush()
        finally:
            instrumentor.uninstrument()
            provider.shutdown()
        client = Client(base_url=phoenix.base_url)
        for _ in range(120):
            frame = client.spans.get_spans_dataframe(project_identifier=PROJECT, limit=1000)
            roots = frame[frame["parent_id"].isna()]
            if len(roots) >= len(CASES):
                break
            time.sleep(0.5)
        frame = frame.sort_values("start_time")
        frame.to_json(
            OUT / "langchain_spans.jsonl", orient="records", lines=True, date_format="iso"
        )
    body = {"made_with": versions(), "cases": truth}
    text = json.dumps(body, ensure_ascii=False, indent=1) + "\n"
    (OUT / "langchain_truth.json").write_text(text, encoding="utf-8")
    print(f"wrote {len(frame)} spans ({len(roots)} traces) to {OUT}")


if __name__ == "__main__":
    main()
