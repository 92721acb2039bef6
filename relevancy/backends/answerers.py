"""Answer models for experiments: a chat prompt in, one answer out, with its tokens and time.

Two kinds, one shape (:class:`Answer`):

* :class:`OpenAIAnswerer`, a chat model on any OpenAI-compatible endpoint. Every request goes
  through the model's :class:`~relevancy.backends._ratelimit.RateController`, as the question
  generator's do: the requests sent at once follow the rate limit, 429s are waited out and
  transient errors retried. A request the server refuses for good (an unknown model, a bad
  key) is an :class:`Answer` with its ``error`` in the server's words, never an exception.
* :class:`LocalAnswerer`, the embedded SmolLM2-135M, run in the embedded generator's worker
  process (``op: "answer"``; a native crash there costs the answer in flight an error, not the
  caller). Its answers are weak: it is there so an experiment runs with no key and no network.

:meth:`fingerprint` is what makes an answer different (backend, server, model, temperature,
token cap): with the seed and the messages it keys the answer cache of
:mod:`relevancy.experiments`. The key is never part of it.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import asdict, dataclass
from typing import Any

from relevancy.backends._budget import Deadline, default_threads
from relevancy.backends._llama_client import HANG_MARGIN_S, GeneratorCrashed, worker
from relevancy.backends._local_generator import MODEL_NAME, _load, smollm_model_path
from relevancy.backends._openai_client import (
    _ClientPerLoop,
    describe_api_error,
    http_response_class,
    make_async_client,
    read_json_reply,
)
from relevancy.core.redact import redact
from relevancy.errors import ConfigError, GenerationError

__all__ = [
    "Answer",
    "OpenAIAnswerer",
    "LocalAnswerer",
    "answer_here",
    "answer_from_line",
    "LOCAL_MODEL",
]

#: the name ``--model`` gives the embedded answerer
LOCAL_MODEL = "local"


@dataclass
class Answer:
    """One answer: its text (``""`` when it failed), why it failed, and what it cost."""

    text: str
    error: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    #: the server's ``finish_reason`` (``stop``, ``length``, ``content_filter``...)
    finish_reason: str | None = None
    #: the model's refusal text, when the server sends one apart from the content
    refusal: str | None = None
    cached: bool = False
    #: the Batch API job that gave it (None: a live request)
    batch_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Answer:
        known = {k: data[k] for k in cls.__dataclass_fields__ if k in data}
        return cls(**known)


def chatml(messages: list[dict[str, str]]) -> str:
    """``messages`` in SmolLM2's chat format (ChatML), ready for the assistant's turn."""
    text = "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages)
    return text + "<|im_start|>assistant\n"


class OpenAIAnswerer(_ClientPerLoop):
    """A chat model on an OpenAI-compatible endpoint, answering one prompt per request.

    Parameters
    ----------
    model : str
        The model's name at the endpoint.
    base_url, api_key : str or None
        Default to the SDK's environment variables (``OPENAI_BASE_URL``, ``OPENAI_API_KEY``);
        a local server needs no key.
    temperature, max_tokens : float, int
        Sent with every request.
    concurrency : int or None
        The most requests at once (None: the rate controller's default, adapting to the limit).
    """

    embedded = False

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        temperature: float = 0.0,
        max_tokens: int = 300,
        timeout: float = 60.0,
        max_retries: int = 3,
        concurrency: int | None = None,
        adaptive: bool = True,
        client: Any = None,
    ) -> None:
        self.model = model
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.max_retries = max_retries
        self._injected = client is not None
        self._factory = lambda: make_async_client(
            base_url=base_url, api_key=api_key, timeout=timeout, max_retries=max_retries
        )
        self._client = client or self._factory()
        self.base_url = str(self._client.base_url).rstrip("/")
        self.name = model
        self._response_class = http_response_class()
        self._limit(model, concurrency, adaptive)

    def fingerprint(self) -> dict[str, Any]:
        return {
            "backend": "openai",
            "base_url": self.base_url,
            "model": self.model,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
        }

    def body(self, messages: list[dict[str, str]], seed: int) -> dict[str, Any]:
        """The chat-completions request for one answer (live, or a line of a batch)."""
        return {
            "model": self.model,
            "messages": messages,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "seed": seed,
        }

    async def aanswer(self, messages: list[dict[str, str]], seed: int) -> Answer:
        """The model's answer to ``messages`` (an error in one line when it failed)."""
        import openai

        started = time.perf_counter()
        body = self.body(messages, seed)
        cost = sum(len(m["content"]) for m in messages) // 4 + self.max_tokens
        try:
            reply = await self._send(
                lambda client: client.post(
                    "/chat/completions", body=body, cast_to=self._response_class
                ),
                cost,
                read=read_json_reply,
            )
        except (openai.APIError, ValueError, TypeError, AttributeError) as exc:
            return Answer(
                "",
                describe_api_error(exc, self.base_url),
                seconds=time.perf_counter() - started,
            )
        usage = getattr(reply, "usage", None)
        choices = getattr(reply, "choices", None) or []
        message = getattr(choices[0], "message", None) if choices else None
        content = getattr(message, "content", None) if message is not None else None
        refusal = getattr(message, "refusal", None) if message is not None else None
        answer = Answer(
            content if isinstance(content, str) else "",
            None if choices else f"{self.base_url} returned no choices",
            int(getattr(usage, "prompt_tokens", 0) or 0),
            int(getattr(usage, "completion_tokens", 0) or 0),
            time.perf_counter() - started,
            getattr(choices[0], "finish_reason", None) if choices else None,
            redact(refusal) if isinstance(refusal, str) and refusal else None,
        )
        return answer


def answer_from_line(line: dict[str, Any], batch_id: str) -> Answer:
    """One line of a Batch API output file as the answer a live request would have given (an
    error in the server's words when the line failed)."""
    response = line.get("response")
    body = response.get("body") if isinstance(response, dict) else None
    status = response.get("status_code") if isinstance(response, dict) else None
    if line.get("error") or status != 200 or not isinstance(body, dict):
        error = line.get("error") or (body or {}).get("error") or {}
        message = error.get("message") if isinstance(error, dict) else str(error)
        return Answer("", redact(f"batch request failed: {message or status}"), batch_id=batch_id)
    choices = body.get("choices") or []
    message = (choices[0].get("message") or {}) if choices else {}
    content, refusal = message.get("content"), message.get("refusal")
    usage = body.get("usage") or {}
    return Answer(
        content if isinstance(content, str) else "",
        None if choices else "the batch returned no choices",
        int(usage.get("prompt_tokens") or 0),
        int(usage.get("completion_tokens") or 0),
        0.0,
        choices[0].get("finish_reason") if choices else None,
        redact(refusal) if isinstance(refusal, str) and refusal else None,
        batch_id=batch_id,
    )


class LocalAnswerer:
    """The embedded SmolLM2-135M as an answer model (offline; its answers are weak).

    Parameters
    ----------
    temperature, max_tokens : float, int
        Sampling settings (temperature 0 is greedy).
    time_limit : float
        Seconds one answer may take before it is cut off (it is kept, flagged ``cut off``).
    """

    embedded = True
    model = LOCAL_MODEL
    name = f"local:{MODEL_NAME}"

    def __init__(
        self,
        *,
        temperature: float = 0.0,
        max_tokens: int = 200,
        time_limit: float = 60.0,
        n_ctx: int = 2048,
        threads: int | None = None,
    ) -> None:
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.time_limit = time_limit
        self.n_ctx = n_ctx
        self.threads = threads or default_threads()
        if not smollm_model_path().exists():
            raise ConfigError(f"generator model file missing: {smollm_model_path()}")

    def fingerprint(self) -> dict[str, Any]:
        return {
            "backend": "local",
            "model": MODEL_NAME,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
        }

    def settings(self) -> dict[str, Any]:
        """What the worker builds the answer from (besides the messages and the seed)."""
        return {
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "time_limit": self.time_limit,
            "n_ctx": self.n_ctx,
            "threads": self.threads,
        }

    def answer(self, messages: list[dict[str, str]], seed: int) -> Answer:
        """The embedded model's answer, from the worker process."""
        started = time.perf_counter()
        payload = {"op": "answer", "settings": self.settings(), "messages": messages}
        try:
            reply = worker().call({**payload, "seed": seed}, self.time_limit + HANG_MARGIN_S)
        except GeneratorCrashed as exc:
            return Answer("", str(exc), seconds=time.perf_counter() - started)
        if not reply.get("ok"):
            error = reply.get("error") or "the embedded generator failed"
            return Answer("", error, seconds=time.perf_counter() - started)
        return Answer.from_dict(reply["answer"])

    async def aanswer(self, messages: list[dict[str, str]], seed: int) -> Answer:
        return await asyncio.to_thread(self.answer, messages, seed)

    async def aclose(self) -> None:
        """Nothing to close (the worker is shared by the process)."""

    async def apreflight(self) -> None:
        """The model file is there (checked when made)."""


def answer_here(settings: dict[str, Any], messages: list[dict[str, str]], seed: int) -> Answer:
    """The embedded model's answer in this process (the worker's side of ``op: "answer"``)."""
    from llama_cpp import StoppingCriteriaList

    llm, lock = _load(smollm_model_path(), int(settings["n_ctx"]), int(settings["threads"]))
    max_tokens = int(settings["max_tokens"])
    prompt = llm.tokenize(chatml(messages).encode("utf-8"), add_bos=False, special=True)
    room = int(settings["n_ctx"]) - max_tokens - 1
    if len(prompt) > room:
        return Answer("", f"the prompt has {len(prompt)} tokens; the embedded model takes {room}")
    deadline = Deadline(float(settings["time_limit"]))
    started = time.perf_counter()
    with lock:
        try:
            out = llm.create_completion(
                prompt,
                temperature=float(settings["temperature"]),
                seed=int(seed),
                max_tokens=max_tokens,
                stopping_criteria=StoppingCriteriaList([deadline]),
                stop=["<|im_end|>"],
            )
        except Exception as exc:  # llama.cpp errors are plain exceptions
            raise GenerationError(f"llama.cpp failed: {exc}") from None
    usage = out.get("usage", {})
    choice = out["choices"][0]
    return Answer(
        (choice.get("text") or "").strip(),
        f"cut off after {deadline.seconds:.3g} s" if deadline.expired else None,
        int(usage.get("prompt_tokens", 0)),
        int(usage.get("completion_tokens", 0)),
        time.perf_counter() - started,
        "length" if deadline.expired else choice.get("finish_reason"),
    )
