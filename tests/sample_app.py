"""The calls the sample scripts trace: one small support app, run the same way under Phoenix and
under MLflow by the sample scripts (``tests/data/make_phoenix_samples.py``,
``make_mlflow_samples.py``, ``make_openai_samples.py``) and by the tests that write back to a real
Phoenix server and a real MLflow store (``test_writeback.py``).

It makes chat completions with the real OpenAI SDK against the toy server
(``relevancy.testing.openai_server``): one call per trace shaped like a RAG app's (multi-turn,
a tool call and the call that answers its result, content parts, a ``developer`` role, German,
French and Japanese, structured output, JSON mode, a streamed reply, a failed call, an empty
reply), and pipelines
whose root span holds the question and the answer with a retriever and a model call under it.

Each case is named; the scripts tag its trace with the name and :func:`run` returns the truth
for each: the question a reader should find (the last user turn; text parts joined by a new
line), the answer (the reply's text, JSON text kept as it is), or ``None`` and why there is none.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from typing import Any, Protocol

import openai

MODEL = "toy-chat"
SYSTEM = "You answer questions about the Aurora X2 router from its manual. Be brief."
MANUAL = {
    "reset": "Factory reset: hold RESET on the back for 10 s until the lights blink.",
    "light": "A blinking orange light means no internet connection: check the WAN cable.",
    "wifi": "Change the Wi-Fi password at 192.168.1.1 > Wireless > Security.",
    "guest": "The guest network is off by default; turn it on under Wireless > Guest.",
    "firmware": "Firmware updates install at 3 am when automatic updates are on.",
}
SEARCH_TOOL = {
    "type": "function",
    "function": {
        "name": "search_manual",
        "description": "Search the router's manual.",
        "parameters": {
            "type": "object",
            "properties": {"query": {"type": "string"}},
            "required": ["query"],
        },
    },
}
ANSWER_SCHEMA = {
    "type": "json_schema",
    "json_schema": {
        "name": "answer",
        "schema": {
            "type": "object",
            "properties": {"question": {"type": "string"}, "noncommittal": {"type": "integer"}},
            "required": ["question", "noncommittal"],
        },
    },
}


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def system(text: str = SYSTEM) -> dict[str, Any]:
    return {"role": "system", "content": text}


def assistant(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


#: name -> (messages, other arguments of ``chat.completions.create``, fault for the toy server)
CHATS: dict[str, tuple[list[dict[str, Any]], dict[str, Any], str | None]] = {
    "single": ([system(), user("How do I reset the router to factory settings?")], {}, None),
    "no-system": ([user("What does a blinking orange light mean?")], {}, None),
    "multi-turn": (
        [
            system(),
            user("I changed the Wi-Fi password."),
            assistant("Good: devices need the new password to reconnect."),
            user("Where do I change it again if I forget it?"),
        ],
        {},
        None,
    ),
    "few-shot": (
        [
            system(),
            user("Is the guest network on by default?"),
            assistant("No, it is off by default."),
            user("When do firmware updates install?"),
        ],
        {},
        None,
    ),
    "content-parts": (
        [
            system(),
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "My router shows a blinking orange light."},
                    {"type": "text", "text": "What should I check first?"},
                ],
            },
        ],
        {},
        None,
    ),
    "image-part": (
        [
            system(),
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "Which port is the WAN port on this photo?"},
                    {
                        "type": "image_url",
                        "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="},
                    },
                ],
            },
        ],
        {},
        None,
    ),
    "developer-role": (
        [{"role": "developer", "content": SYSTEM}, user("How do I turn on the guest network?")],
        {},
        None,
    ),
    "german": (
        [
            system("Du beantwortest Fragen zum Router Aurora X2."),
            user("Wie setze ich den Router auf Werkseinstellungen zurück?"),
        ],
        {},
        None,
    ),
    "french": (
        [
            system("Tu réponds aux questions sur le routeur Aurora X2."),
            user("Comment changer le mot de passe du Wi-Fi ?"),
        ],
        {},
        None,
    ),
    "japanese": (
        [system(), user("ゲストネットワークはどうやって有効にしますか？")],
        {},
        None,
    ),
    "context-in-user-turn": (
        [system(), user(f"Context:\n{MANUAL['firmware']}\n\nQuestion: When do updates install?")],
        {},
        None,
    ),
    "structured-output": (
        [
            system("Reply with the question you answer, as JSON."),
            user("Can I schedule firmware updates?"),
        ],
        {"response_format": ANSWER_SCHEMA},
        None,
    ),
    "json-mode": (
        [system("Reply in JSON."), user("How long does a factory reset take?")],
        {"response_format": {"type": "json_object"}},
        None,
    ),
    "temperature": (
        [system(), user("Does the router support WPA3?")],
        {"temperature": 0.2, "max_tokens": 200, "seed": 7},
        None,
    ),
    "streamed": (
        [system(), user("How long does the router take to restart?")],
        {"stream": True, "stream_options": {"include_usage": True}},
        None,
    ),
    "tool-call": (
        [system(), user("How do I update the firmware by hand?")],
        {"tools": [SEARCH_TOOL]},
        None,
    ),
    "failed": ([system(), user("Can the router act as a mesh satellite?")], {}, "500"),
    "empty-reply": ([system(), user("What is the default admin password?")], {}, "empty_content"),
}
#: the call that sends the tool's result back (its messages are built from ``tool-call``'s)
TOOL_RESULT = "tool-result"
#: name -> (question, answer shape): the pipelines' inputs
PIPELINES: dict[str, tuple[str, str]] = {
    "pipeline-text": ("How do I reset the router?", "text"),
    "pipeline-german": ("Was bedeutet ein orange blinkendes Licht?", "text"),
    "pipeline-json": ("Where is the Wi-Fi password changed?", "json"),
    "pipeline-structured": ("Is the guest network on by default?", "structured"),
    "pipeline-failed": ("Does the router have a USB port?", "failed"),
}


class Tracing(Protocol):
    """What a tool's tracing gives the app: a tag for a call, spans for the pipelines."""

    def call(self, case: str) -> contextlib.AbstractContextManager[Any]: ...

    def pipeline(
        self, case: str, inputs: Any
    ) -> contextlib.AbstractContextManager[Callable[[Any], None]]: ...

    def retriever(
        self, query: str
    ) -> contextlib.AbstractContextManager[Callable[[list[str]], None]]: ...


def question_of(messages: list[dict[str, Any]]) -> str:
    """The last user turn's text (text parts joined by a new line)."""
    content = [m for m in messages if m["role"] == "user"][-1]["content"]
    if isinstance(content, str):
        return content
    return "\n".join(p["text"] for p in content if p.get("type") == "text")


def _reply(completion: Any) -> str:
    return completion.choices[0].message.content or ""


def _streamed(chunks: Any) -> str:
    """A streamed reply's text, read chunk by chunk as an app shows it."""
    return "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)


def run(client: openai.OpenAI, server: Any, tracing: Tracing) -> dict[str, dict[str, Any]]:
    """Make every call under ``tracing``; the truth for each case, by name."""
    truth: dict[str, dict[str, Any]] = {}
    tool_reply = None
    for case, (messages, kwargs, fault) in CHATS.items():
        question = question_of(messages)
        if fault:
            server.script([fault])
        with tracing.call(case):  # a stream's trace ends when the app has read it
            try:
                completion = client.chat.completions.create(
                    model=MODEL, messages=messages, **kwargs
                )
                answer = _streamed(completion) if kwargs.get("stream") else _reply(completion)
            except openai.APIError as exc:
                truth[case] = {
                    "question": question,
                    "answer": None,
                    "skip": "failed",
                    "error": type(exc).__name__,
                }
                continue
        if case == "tool-call":
            tool_reply = (messages, completion.choices[0].message)
        truth[case] = {"question": question, "answer": answer or None}
        if not answer:
            truth[case]["skip"] = "no answer"
    messages, reply = tool_reply
    call = reply.tool_calls[0]
    found = MANUAL["firmware"]
    followed = [
        *messages,
        reply.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": call.id, "content": found},
    ]
    with tracing.call(TOOL_RESULT):
        completion = client.chat.completions.create(
            model=MODEL, messages=followed, tools=[SEARCH_TOOL]
        )
    truth[TOOL_RESULT] = {"question": question_of(messages), "answer": _reply(completion)}
    for case, (question, shape) in PIPELINES.items():
        truth[case] = _pipeline(client, server, tracing, case, question, shape)
    return truth


def _pipeline(
    client: openai.OpenAI, server: Any, tracing: Tracing, case: str, question: str, shape: str
) -> dict[str, Any]:
    """Retrieve, then ask the model with the pages found: one trace, the root holding both."""
    inputs: Any = question
    if shape == "json":
        inputs = {"question": question, "history": [], "user": "cust-88"}
    try:
        with tracing.pipeline(case, inputs) as set_output:
            with tracing.retriever(question) as set_documents:
                pages = [text for key, text in MANUAL.items() if key in question.lower()]
                pages = pages or list(MANUAL.values())[:2]
                set_documents(pages)
            if shape == "failed":
                server.script(["500"])
            messages = [system(SYSTEM + "\n\nManual:\n" + "\n".join(pages)), user(question)]
            extra = {"response_format": ANSWER_SCHEMA} if shape == "structured" else {}
            answer = _reply(client.chat.completions.create(model=MODEL, messages=messages, **extra))
            if shape == "json":
                set_output({"answer": answer, "sources": ["manual"]})
            else:
                set_output(answer)
    except openai.APIError as exc:
        return {"question": question, "answer": None, "skip": "failed", "error": type(exc).__name__}
    return {"question": question, "answer": answer}


# --- the tools' tracing (their libraries imported when used) ----------------------------------
class PhoenixTracing:
    """The app's spans as OpenInference writes them."""

    def __init__(self, tracer: Any) -> None:
        self.tracer = tracer

    def call(self, case: str) -> contextlib.AbstractContextManager[Any]:
        from openinference.instrumentation import using_metadata

        return using_metadata({"case": case})

    @contextlib.contextmanager
    def pipeline(self, case: str, inputs: Any):
        from openinference.instrumentation import using_metadata

        with (
            using_metadata({"case": case}),
            self.tracer.start_as_current_span(
                "answer_question", openinference_span_kind="chain"
            ) as span,
        ):
            span.set_input(inputs)

            def set_output(value: Any) -> None:
                span.set_output(value)

            yield set_output

    @contextlib.contextmanager
    def retriever(self, query: str):
        with self.tracer.start_as_current_span(
            "search_manual", openinference_span_kind="retriever"
        ) as span:
            span.set_input(query)

            def set_documents(pages: list[str]) -> None:
                for i, page in enumerate(pages):
                    span.set_attribute(f"retrieval.documents.{i}.document.content", page)
                    span.set_attribute(f"retrieval.documents.{i}.document.id", f"manual-{i}")

            yield set_documents


class MlflowTracing:
    """The app's spans as MLflow writes them; each trace tagged with its case."""

    def __init__(self) -> None:
        import mlflow

        self.client = mlflow.MlflowClient()

    @contextlib.contextmanager
    def call(self, case: str):
        import mlflow

        before = mlflow.get_last_active_trace_id()
        try:
            yield
        finally:
            after = mlflow.get_last_active_trace_id()
            if after and after != before:
                self.client.set_trace_tag(after, "case", case)

    @contextlib.contextmanager
    def pipeline(self, case: str, inputs: Any):
        import mlflow
        from mlflow.entities import SpanType

        with mlflow.start_span(name="answer_question", span_type=SpanType.CHAIN) as span:
            mlflow.update_current_trace(tags={"case": case})
            span.set_inputs(inputs)
            yield span.set_outputs

    @contextlib.contextmanager
    def retriever(self, query: str):
        import mlflow
        from mlflow.entities import Document, SpanType

        with mlflow.start_span(name="search_manual", span_type=SpanType.RETRIEVER) as span:
            span.set_inputs({"query": query})

            def set_documents(pages: list[str]) -> None:
                span.set_outputs(
                    [Document(page_content=p, id=f"manual-{i}") for i, p in enumerate(pages)]
                )

            yield set_documents


def write_truth(path: Any, truth: dict[str, dict[str, Any]], versions: dict[str, str]) -> None:
    """The truth file: each case's question and answer, and the versions that made it."""
    body = {"made_with": versions, "cases": truth}
    path.write_text(json.dumps(body, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")


def trace_into_phoenix(collector: str, project: str, server: Any) -> dict[str, dict[str, Any]]:
    """Run the app with OpenInference's OpenAI instrumentation sending its spans to
    ``collector`` (a Phoenix server's ``/v1/traces``) under ``project``; the truth. The OpenAI
    SDK is left uninstrumented afterwards."""
    from openinference.instrumentation.openai import OpenAIInstrumentor
    from phoenix.otel import register

    provider = register(
        endpoint=collector,
        project_name=project,
        batch=False,
        set_global_tracer_provider=False,
        verbose=False,
    )
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        client = openai.OpenAI(base_url=server.base_url, api_key="sk-toy", max_retries=0)
        truth = run(client, server, PhoenixTracing(provider.get_tracer(__name__)))
        provider.force_flush()
    finally:
        instrumentor.uninstrument()
        provider.shutdown()
    return truth


def trace_into_mlflow(experiment_id: str, server: Any) -> dict[str, dict[str, Any]]:
    """Run the app with ``mlflow.openai.autolog()`` into ``experiment_id`` (of the tracking
    URI set); the truth. Autologging is switched off afterwards and every trace flushed."""
    import mlflow

    mlflow.set_experiment(experiment_id=experiment_id)
    mlflow.openai.autolog()
    try:
        client = openai.OpenAI(base_url=server.base_url, api_key="sk-toy", max_retries=0)
        truth = run(client, server, MlflowTracing())
    finally:
        mlflow.openai.autolog(disable=True)
        mlflow.flush_trace_async_logging()
    return truth
