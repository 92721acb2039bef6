"""OpenAI's Batch API for the question generator: the same requests at half the price.

:class:`GenerationBatch` writes one chat-completions request per response (the body a live
request would send: the prompt, ``n`` questions, the JSON schema, temperature, seed, max
tokens) as a JSON-lines file, uploads it (``/v1/files``, purpose ``batch``), creates the batch
(``/v1/batches``, 24 h window), polls it, downloads its output and turns each line back into the
:class:`GenerationSet` a live request would have given. Any server that implements
``/v1/files`` and ``/v1/batches`` works (the toy server does).

A batch that ended without its output (failed, expired, cancelled) or that the server does not
know raises :class:`BatchGone`, so that the caller can submit a new one; a server that cannot be
reached, or answers an error, raises a one-line :class:`GenerationError`. An output line that is
not JSON (a file cut short) is counted and skipped, never a traceback.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from relevancy.backends._openai_client import describe_api_error
from relevancy.core.prompt import chat_messages, output_schema, parse_output
from relevancy.core.redact import redact
from relevancy.core.result import Generation, GenerationSet
from relevancy.errors import ConfigError, GenerationError

__all__ = ["GenerationBatch", "BatchGone", "BatchOutput", "BATCH_DONE", "BATCH_FAILED"]

#: a batch's final states
BATCH_DONE = "completed"
BATCH_FAILED = ("failed", "expired", "cancelled")
_ENDPOINT = "/v1/chat/completions"


class BatchGone(GenerationError):
    """The batch cannot give its output: it ended ``failed``, ``expired`` or ``cancelled``, or
    the server does not know it (``status`` ``"unknown"``)."""

    def __init__(self, message: str, status: str) -> None:
        super().__init__(message)
        self.status = status


class BatchOutput(dict):  # type: ignore[type-arg]
    """The generation sets of a batch's output lines, by ``custom_id``; ``unreadable``: lines
    that were not JSON objects (skipped)."""

    unreadable: int = 0


class GenerationBatch:
    """One generator's requests as a batch job (``generator``: an ``OpenAIGenerator``)."""

    def __init__(self, generator: Any) -> None:
        if not hasattr(generator, "client") or not hasattr(generator, "max_tokens"):
            raise ConfigError(
                f"--batch-api needs an OpenAI-compatible generator, not {generator.name}"
            )
        self.generator = generator

    def request_line(self, custom_id: str, response: str, n: int) -> dict[str, Any]:
        """The batch file's line for ``response``: what a live request would send."""
        g = self.generator
        body: dict[str, Any] = {
            "model": g.model,
            "messages": chat_messages(response),
            "temperature": g.temperature,
            "max_tokens": g.max_tokens,
            "seed": g.seed,
            "response_format": {"type": "json_schema", "json_schema": output_schema()},
        }
        if n > 1:
            body["n"] = n
        return {"custom_id": custom_id, "method": "POST", "url": _ENDPOINT, "body": body}

    async def submit(self, lines: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        """Upload the lines and create the batch; its id and input file's id."""
        client = self.generator.client()
        content = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
        with self._errors("submitting the batch"):
            uploaded = await client.files.create(
                file=("relevancy-batch.jsonl", content.encode("utf-8")), purpose="batch"
            )
            batch = await client.batches.create(
                input_file_id=uploaded.id,
                endpoint=_ENDPOINT,
                completion_window="24h",
                metadata={"made_by": "relevancy"},
            )
        return {"batch_id": batch.id, "input_file_id": uploaded.id, "requests": len(lines)}

    @contextlib.contextmanager
    def _errors(self, doing: str, batch_id: str | None = None) -> Iterator[None]:
        """The SDK's errors while ``doing`` as one line: :class:`BatchGone` for a batch the
        server does not know (404), a :class:`GenerationError` for the rest."""
        import openai  # lazy: the SDK is only needed when a batch is used

        where = self.generator.base_url
        try:
            yield
        except openai.NotFoundError:
            if batch_id is None:
                raise GenerationError(f"{where} has no Batch API (HTTP 404 {doing})") from None
            raise BatchGone(f"batch {batch_id} is not known to {where}", "unknown") from None
        except openai.APIError as exc:
            again = (
                f": the batch goes on there; run the same command again to pick up {batch_id}"
                if batch_id
                else ""
            )
            raise GenerationError(f"{describe_api_error(exc, where)} {doing}{again}") from None

    async def wait(
        self,
        batch_id: str,
        *,
        progress: Callable[[int, int], None] | None = None,
        poll: float = 1.0,
        longest_poll: float = 30.0,
    ) -> Any:
        """Poll until the batch is done (``progress(completed, total)`` each time); the batch.

        Raises :class:`GenerationError` when it failed, expired or was cancelled."""
        client = self.generator.client()
        while True:
            with self._errors(f"while waiting for batch {batch_id}", batch_id):
                batch = await client.batches.retrieve(batch_id)
            counts = getattr(batch, "request_counts", None)
            if progress is not None and counts is not None:
                progress(int(counts.completed or 0), int(counts.total or 0))
            if batch.status == BATCH_DONE:
                return batch
            if batch.status in BATCH_FAILED:
                errors = getattr(getattr(batch, "errors", None), "data", None) or []
                why = "; ".join(str(getattr(e, "message", e)) for e in errors[:3])
                text = redact(f"batch {batch_id} {batch.status}" + (f" ({why})" if why else ""))
                raise BatchGone(text, str(batch.status))
            await asyncio.sleep(poll)
            poll = min(poll * 1.5, longest_poll)

    async def output_lines(self, batch: Any) -> tuple[list[dict[str, Any]], int]:
        """The lines of the batch's output (and error file) as read, and how many were not JSON
        objects (skipped)."""
        client = self.generator.client()
        lines: list[dict[str, Any]] = []
        unreadable = 0
        for file_id in (batch.output_file_id, getattr(batch, "error_file_id", None)):
            if not file_id:
                continue
            with self._errors(f"reading the output of batch {batch.id}", batch.id):
                content = await client.files.content(file_id)
            for raw in content.text.splitlines():
                if not raw.strip():
                    continue
                try:
                    line = json.loads(raw)
                except ValueError:
                    line = None
                if isinstance(line, dict):
                    lines.append(line)
                else:
                    unreadable += 1
        return lines, unreadable

    async def results(self, batch: Any, n: int) -> BatchOutput:
        """Each line of the batch's output (and error file) as a generation set, by custom id;
        lines that are not JSON objects are counted in ``unreadable`` and skipped."""
        found = BatchOutput()
        lines, found.unreadable = await self.output_lines(batch)
        for line in lines:
            found[str(line.get("custom_id"))] = self.generation_set(line, n)
        return found

    def generation_set(self, line: Mapping[str, Any], n: int) -> GenerationSet:
        """One output line as the set a live request would give (errors: a failed set that is
        not cached, so a live run retries it)."""
        model = self.generator.model
        response = line.get("response") or {}
        body = response.get("body") if isinstance(response, dict) else None
        status = response.get("status_code") if isinstance(response, dict) else None
        if line.get("error") or status != 200 or not isinstance(body, dict):
            error = line.get("error") or (body or {}).get("error") or {}
            message = error.get("message") if isinstance(error, dict) else str(error)
            failed = Generation("", None, redact(f"batch request failed: {message or status}"))
            return GenerationSet([failed] * n, model=model, requests=1, cacheable=False)
        good: list[Generation] = []
        choices = body.get("choices") or []
        for choice in choices[:n]:
            content = (choice.get("message") or {}).get("content") or ""
            try:
                parsed = parse_output(content)
            except ValueError as exc:
                good.append(Generation("", None, redact(f"unusable output: {exc}")))
                continue
            good.append(Generation(parsed.question, bool(parsed.noncommittal)))
        if not good:
            good = [Generation("", None, "the batch returned no choices")]
        usage = body.get("usage") or {}
        return GenerationSet(
            generations=[good[i % len(good)] for i in range(n)],
            model=model,
            usage={
                "prompt_tokens": int(usage.get("prompt_tokens") or 0),
                "completion_tokens": int(usage.get("completion_tokens") or 0),
            },
            requests=1,
            # fewer choices, or one unusable: not cached, so the live run asks again
            cacheable=len(choices) >= n and all(g.error is None for g in good),
        )
