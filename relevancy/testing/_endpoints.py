"""The toy model's endpoints: chat completions and embeddings (and the model list), as methods
of :class:`relevancy.testing.openai_server.OpenAICompatServer`."""

from __future__ import annotations

import base64
import json
import re
import struct
import time
from typing import Any

from relevancy.testing._answers import toy_answer
from relevancy.testing._faults import Reply
from relevancy.testing._http import BadRequestError
from relevancy.testing._toy_model import (
    CHAT_MODEL,
    EMBEDDING_MODEL,
    answer_text,
    approx_tokens,
    embed_text,
    embed_token_ids,
    is_noncommittal,
    make_question,
    message_text,
    render_content,
)

__all__ = ["EndpointsMixin", "MAX_N", "MAX_DIMENSIONS", "stream_reply"]

MAX_N = 128


MAX_DIMENSIONS = 65_536


def is_token_list(value: Any) -> bool:
    return isinstance(value, list) and all(
        isinstance(t, int) and not isinstance(t, bool) for t in value
    )


def embedding_inputs(value: Any) -> list[str | list[int]]:
    """Normalise ``input``: a string, strings, one token-id list, or token-id lists."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and value:
        if all(isinstance(item, str) for item in value):
            return list(value)
        if is_token_list(value):
            return [list(value)]
        if all(is_token_list(item) and item for item in value):
            return [list(item) for item in value]
    raise BadRequestError(
        "'input' must be a string, a non-empty array of strings, or token-id arrays.",
        param="input",
    )


def stream_reply(completion: dict[str, Any], body: dict[str, Any]) -> Reply:
    """A chat completion as the server-sent events of ``stream: true``: per choice, a first
    chunk with the role, the content a word at a time (or the tool call), a last chunk with the
    finish reason; then the usage when ``stream_options.include_usage`` asks for it, and
    ``[DONE]``. Sent at once, as one body: a client reads it event by event all the same."""
    base = {k: completion[k] for k in ("id", "created", "model", "system_fingerprint")}
    base["object"] = "chat.completion.chunk"

    def chunk(index: int, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        choice = {"index": index, "delta": delta, "logprobs": None, "finish_reason": finish}
        return {**base, "choices": [choice]}

    events = []
    for choice in completion["choices"]:
        i, message = choice["index"], choice["message"]
        events.append(chunk(i, {"role": "assistant", "content": "", "refusal": None}))
        for n, call in enumerate(message.get("tool_calls") or []):
            events.append(chunk(i, {"tool_calls": [{"index": n, **call}]}))
        words = re.findall(r"\S+\s*|\s+", message.get("content") or "")
        events += [chunk(i, {"content": word}) for word in words]
        events.append(chunk(i, {}, choice["finish_reason"]))
    options = body.get("stream_options")
    if isinstance(options, dict) and options.get("include_usage"):
        events.append({**base, "choices": [], "usage": completion["usage"]})
    text = "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"
    return Reply(body=text.encode(), content_type="text/event-stream")


class EndpointsMixin:
    """Chat completions, embeddings and the model list (the server's state is its own)."""

    #: models answered as an assistant (``relevancy/testing/_answers.py``); with any set, a
    #: chat request for a model the server does not know gets a 404
    answer_models: tuple[str, ...] = ()

    def _models(self) -> dict[str, Any]:
        created = 1_700_000_000
        return {
            "object": "list",
            "data": [
                {"id": name, "object": "model", "created": created, "owned_by": "relevancy"}
                for name in (CHAT_MODEL, EMBEDDING_MODEL)
            ],
        }

    def _chat(
        self, body: dict[str, Any], fault: str | None, entry: dict[str, Any]
    ) -> dict[str, Any]:
        model = body.get("model")
        if not isinstance(model, str) or not model:
            raise BadRequestError("You must provide a model parameter.", param="model")
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise BadRequestError("'messages' must be a non-empty array.", param="messages")
        if not all(isinstance(m, dict) and isinstance(m.get("role"), str) for m in messages):
            raise BadRequestError("Each message needs a string 'role'.", param="messages")
        n = body.get("n", 1)
        if n is None:
            n = 1
        if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_N:
            raise BadRequestError(f"'n' must be an integer from 1 to {MAX_N}.", param="n")
        shape = self._reply_shape(body.get("response_format"))

        served = n if self.honour_n else 1
        if self.max_n is not None:
            served = min(served, self.max_n)
        if fault == "fewer_choices":
            served -= 1

        if self.answer_models and model not in (*self.answer_models, CHAT_MODEL):
            raise BadRequestError(
                f"The model `{model}` does not exist or you do not have access to it.",
                code="model_not_found",
                status=404,
            )
        user_texts = [message_text(m.get("content")) for m in messages if m["role"] == "user"]
        text = answer_text(user_texts[-1]) if user_texts else ""
        if model in self.answer_models:  # an assistant's answer, as plain text
            text, shape, flag = toy_answer(messages, model, self.answer_models), "answer", 0
        tool = self._tool_to_call(body)
        if tool is not None:
            return self._tool_call(model, tool, text, messages, entry)
        flag = is_noncommittal(text)
        seed = body.get("seed")
        first = max(0, seed) if self.seeded and isinstance(seed, int) else 0
        contents = [
            text
            if shape == "answer"
            else render_content(make_question(text, first + i), flag, shape)
            for i in range(served)
        ]
        if fault == "empty_content":
            contents = ["" for _ in contents]

        count = self._count
        prompt_tokens = sum(count(message_text(m.get("content"))) for m in messages)
        if count is approx_tokens:  # OpenAI's chat format adds a few tokens per message
            prompt_tokens += 3 * len(messages) + 3
        per_choice = [count(c) for c in contents]
        completion_tokens = sum(per_choice)
        usage = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        }
        with self._lock:
            entry["decode_tokens"] = max(per_choice, default=0)
            entry["choices"] = len(contents)
            entry["usage"] = usage
        return {
            "id": f"chatcmpl-{self.seed}-{next(self._ids):08d}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "system_fingerprint": "fp_relevancy_toy",
            "choices": [
                {
                    "index": i,
                    "message": {"role": "assistant", "content": content, "refusal": None},
                    "logprobs": None,
                    "finish_reason": "stop",
                }
                for i, content in enumerate(contents)
            ],
            "usage": {
                **usage,
                "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
                "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0},
            },
        }

    def _tool_to_call(self, body: dict[str, Any]) -> str | None:
        """The function the toy model calls: the first of ``tools`` when the last message is
        the user's (a reply to a tool's result is text, as a real model's would be)."""
        tools = body.get("tools")
        if not tools or body.get("tool_choice", "auto") == "none":
            return None
        if not isinstance(tools, list) or not all(isinstance(t, dict) for t in tools):
            raise BadRequestError("'tools' must be an array of objects.", param="tools")
        function = tools[0].get("function")
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            raise BadRequestError("Each tool needs a function with a name.", param="tools")
        return function["name"] if body["messages"][-1].get("role") == "user" else None

    def _tool_call(
        self,
        model: str,
        name: str,
        text: str,
        messages: list[dict[str, Any]],
        entry: dict[str, Any],
    ) -> dict[str, Any]:
        """One choice that calls ``name`` with the user's words as its ``query``."""
        arguments = json.dumps({"query": " ".join(text.split()[:12])}, ensure_ascii=False)
        prompt_tokens = sum(self._count(message_text(m.get("content"))) for m in messages)
        completion_tokens = self._count(arguments)
        usage = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        }
        number = next(self._ids)
        with self._lock:
            entry["decode_tokens"] = completion_tokens
            entry["choices"] = 1
            entry["usage"] = usage
        call = {
            "id": f"call_{self.seed}_{number:08d}",
            "type": "function",
            "function": {"name": name, "arguments": arguments},
        }
        return {
            "id": f"chatcmpl-{self.seed}-{number:08d}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "system_fingerprint": "fp_relevancy_toy",
            "choices": [
                {
                    "index": 0,
                    "message": {
                        "role": "assistant",
                        "content": None,
                        "refusal": None,
                        "tool_calls": [call],
                    },
                    "logprobs": None,
                    "finish_reason": "tool_calls",
                }
            ],
            "usage": usage,
        }

    def _reply_shape(self, response_format: Any) -> str:
        """The reply shape ("json", "prose", "lines"); 400 for an unsupported format."""
        if response_format is None:
            return self.text_mode
        if not isinstance(response_format, dict):
            raise BadRequestError("'response_format' must be an object.", param="response_format")
        kind = response_format.get("type")
        if kind == "text":
            return self.text_mode
        if kind == "json_schema":
            if not self.accept_json_schema:
                raise BadRequestError(
                    "response_format of type 'json_schema' is not supported by this server.",
                    param="response_format",
                    code="unsupported_response_format",
                    status=self.reject_status,
                )
            if not isinstance(response_format.get("json_schema"), dict):
                raise BadRequestError(
                    "'response_format.json_schema' must be an object.",
                    param="response_format.json_schema",
                )
            return "json"
        if kind == "json_object":
            if not self.accept_json_object:
                raise BadRequestError(
                    "response_format of type 'json_object' is not supported by this server.",
                    param="response_format",
                    code="unsupported_response_format",
                )
            return "json"
        raise BadRequestError(
            f"Unknown response_format type {kind!r}.", param="response_format.type"
        )

    def _embeddings(
        self, body: dict[str, Any], fault: str | None, entry: dict[str, Any]
    ) -> dict[str, Any]:
        model = body.get("model")
        if not isinstance(model, str) or not model:
            raise BadRequestError("You must provide a model parameter.", param="model")
        items = embedding_inputs(body.get("input"))
        dim = body.get("dimensions")
        if dim is None:
            dim = self.embedding_dim
        elif isinstance(dim, bool) or not isinstance(dim, int) or not 1 <= dim <= MAX_DIMENSIONS:
            raise BadRequestError(
                f"'dimensions' must be an integer from 1 to {MAX_DIMENSIONS}.",
                param="dimensions",
            )
        encoding = body.get("encoding_format") or "float"
        if encoding not in ("float", "base64"):
            raise BadRequestError(
                "'encoding_format' must be 'float' or 'base64'.", param="encoding_format"
            )

        def embed(item: str | list[int], size: int) -> list[float]:
            if isinstance(item, str):
                return embed_text(item, size, self.seed)
            return embed_token_ids(item, size, self.seed)

        vectors = [embed(item, dim) for item in items]
        if fault == "embed_wrong_count":
            if len(vectors) > 1:
                vectors.pop()
            else:
                vectors.append(embed(items[0] if items else "", dim))
        elif fault == "embed_wrong_dim":
            vectors[-1] = embed(items[-1], dim + 3)

        def encode(vector: list[float]) -> list[float] | str:
            if encoding == "float":
                return vector
            return base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode("ascii")

        tokens = sum(self._count(i) if isinstance(i, str) else len(i) for i in items)
        with self._lock:
            entry["usage"] = {"prompt_tokens": tokens, "total_tokens": tokens}
        return {
            "object": "list",
            "data": [
                {"object": "embedding", "index": i, "embedding": encode(vector)}
                for i, vector in enumerate(vectors)
            ],
            "model": model,
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }
