"""The toy server's Batch API and its admin endpoints.

``POST /v1/files`` (multipart: ``file``, ``purpose``), ``GET /v1/files/{id}`` and
``GET /v1/files/{id}/content`` keep files in memory. ``POST /v1/batches`` (``input_file_id``,
``endpoint``, ``completion_window``) starts a batch; ``GET /v1/batches/{id}`` reports it:
``in_progress`` with ``request_counts.completed`` growing with the time elapsed, then, once
``batch_delay`` seconds have passed since it was created, ``completed`` with an
``output_file_id`` (one line per request: ``custom_id`` and ``response``: ``status_code``,
``request_id``, ``body``) and, when some lines failed, an ``error_file_id``. The requests are
answered by the same toy model, without faults or rate limits (a batch has its own limits).
``POST /v1/batches/{id}/cancel`` cancels one not yet done.

``batch_fault`` (``--batch-fault``) makes every batch end badly, one of :data:`BATCH_FAULTS`:
``failed`` and ``expired`` (that status, with an error, no output file), ``truncated`` (the
output file cut in the middle of a line), ``missing`` (every other line left out of the
output), ``unknown_ids`` (every other line under a ``custom_id`` no request had),
``unusable`` (each choice's content not the JSON asked for), ``few_choices`` (one choice per
line whatever ``n`` asked).

Admin (not OpenAI's): ``GET /admin/stats`` is :meth:`OpenAICompatServer.stats`;
``POST /admin/limits`` with ``{"rpm": ..., "tpm": ...}`` changes the rate limits (a server run in
its own process, by a bench or a test).
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from email.parser import BytesParser
from email.policy import HTTP
from typing import Any

from relevancy.testing._faults import Reply, error_reply, json_reply
from relevancy.testing._http import BadRequestError

__all__ = ["BATCH_FAULTS", "BatchesMixin"]

#: how a batch can be made to end badly (``batch_fault``)
BATCH_FAULTS = (
    "failed",
    "expired",
    "truncated",
    "missing",
    "unknown_ids",
    "unusable",
    "few_choices",
)

_ENDPOINTS = {"/v1/chat/completions": "chat", "/v1/embeddings": "embeddings"}


def _not_found(what: str) -> Reply:
    return error_reply(404, f"No such {what}.", type_="invalid_request_error", code="not_found")


def _bad(message: str, param: str | None = None) -> Reply:
    return error_reply(400, message, type_="invalid_request_error", code=None, param=param)


def multipart_fields(raw: bytes, content_type: str) -> dict[str, tuple[str | None, bytes]]:
    """The fields of a ``multipart/form-data`` body: name to (filename, content)."""
    head = f"Content-Type: {content_type}\r\nMIME-Version: 1.0\r\n\r\n".encode()
    message = BytesParser(policy=HTTP).parsebytes(head + raw)
    fields: dict[str, tuple[str | None, bytes]] = {}
    if not message.is_multipart():
        return fields
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        if name:
            payload = part.get_payload(decode=True) or b""
            fields[str(name)] = (part.get_filename(), payload)
    return fields


class BatchesMixin:
    """Files, batches and the admin endpoints (the server's state is its own)."""

    batch_delay: float
    seed: int
    _lock: threading.Lock

    def _init_batches(self, fault: str | None = None) -> None:
        if fault is not None and fault not in BATCH_FAULTS:
            raise ValueError(f"unknown batch fault {fault!r}; expected one of {BATCH_FAULTS}")
        self.batch_fault = fault
        self._files: dict[str, dict[str, Any]] = {}
        self._batches: dict[str, dict[str, Any]] = {}
        self._batch_ids = itertools.count(1)

    def _batch_count(self) -> int:
        with self._lock:
            return len(self._batches)

    def _is_extra(self, path: str) -> bool:
        return path.startswith(("/v1/files", "/v1/batches", "/admin/"))

    def _extra_route(
        self, method: str, path: str, raw: bytes | None, body: Any, content_type: str | None
    ) -> Reply:
        parts = [p for p in path.split("/") if p]
        if parts[0] == "admin":
            return self._admin(method, parts[1:], body)
        if parts[1] == "files":
            if method == "POST" and len(parts) == 2:
                return self._upload(raw or b"", content_type or "")
            if method == "GET" and len(parts) in (3, 4):
                found = self._files.get(parts[2])
                if found is None:
                    return _not_found("file")
                if len(parts) == 3:
                    return json_reply(found["meta"])
                if parts[3] == "content":
                    return Reply(body=found["content"], content_type="application/octet-stream")
            return _not_found("route")
        if method == "POST" and len(parts) == 2:
            return self._create_batch(body)
        if len(parts) >= 3 and parts[2] in self._batches:
            if method == "GET" and len(parts) == 3:
                return json_reply(self._batch_state(parts[2]))
            if method == "POST" and parts[3:] == ["cancel"]:
                with self._lock:
                    batch = self._batches[parts[2]]
                    if batch["status"] not in ("completed", "failed"):
                        batch["status"] = "cancelled"
                        batch["cancelled_at"] = int(time.time())
                return json_reply(self._public(batch))
        return _not_found("batch")

    def _admin(self, method: str, parts: list[str], body: Any) -> Reply:
        if parts == ["stats"] and method == "GET":
            return json_reply(self.stats())  # type: ignore[attr-defined]
        if parts == ["limits"] and method == "POST" and isinstance(body, dict):
            try:
                self.set_limits(rpm=body.get("rpm"), tpm=body.get("tpm"))  # type: ignore[attr-defined]
            except (TypeError, ValueError) as exc:
                return _bad(str(exc))
            return json_reply(self.limits.describe())  # type: ignore[attr-defined]
        return _not_found("admin route")

    # -- files

    def _upload(self, raw: bytes, content_type: str) -> Reply:
        if "multipart/form-data" not in content_type:
            return _bad("Uploads must be multipart/form-data.")
        fields = multipart_fields(raw, content_type)
        if "file" not in fields:
            return _bad("Missing the 'file' field.", param="file")
        purpose = fields.get("purpose", (None, b"batch"))[1].decode() or "batch"
        filename, content = fields["file"]
        return json_reply(self._store_file(content, filename or "upload.jsonl", purpose))

    def _store_file(self, content: bytes, filename: str, purpose: str) -> dict[str, Any]:
        with self._lock:
            file_id = f"file-toy{self.seed}{len(self._files) + 1:06d}"
            meta = {
                "id": file_id,
                "object": "file",
                "bytes": len(content),
                "created_at": int(time.time()),
                "filename": filename,
                "purpose": purpose,
                "status": "processed",
            }
            self._files[file_id] = {"meta": meta, "content": content}
        return meta

    # -- batches

    def _create_batch(self, body: Any) -> Reply:
        if not isinstance(body, dict):
            return _bad("The request body must be a JSON object.")
        endpoint = body.get("endpoint")
        if endpoint not in _ENDPOINTS:
            return _bad(f"Unsupported endpoint {endpoint!r}.", param="endpoint")
        found = self._files.get(str(body.get("input_file_id")))
        if found is None:
            return _bad("No such input file.", param="input_file_id")
        try:
            lines = [json.loads(x) for x in found["content"].decode().splitlines() if x.strip()]
        except (UnicodeDecodeError, json.JSONDecodeError):
            return _bad("The input file is not JSON lines.", param="input_file_id")
        now = time.time()
        with self._lock:
            batch_id = f"batch_toy{self.seed}{next(self._batch_ids):06d}"
            batch = {
                "id": batch_id,
                "object": "batch",
                "endpoint": endpoint,
                "errors": None,
                "input_file_id": body["input_file_id"],
                "completion_window": body.get("completion_window", "24h"),
                "status": "in_progress",
                "output_file_id": None,
                "error_file_id": None,
                "created_at": int(now),
                "in_progress_at": int(now),
                "expires_at": int(now) + 86400,
                "completed_at": None,
                "failed_at": None,
                "cancelled_at": None,
                "request_counts": {"total": len(lines), "completed": 0, "failed": 0},
                "metadata": body.get("metadata"),
                "_started": time.monotonic(),
                "_lines": lines,
            }
            self._batches[batch_id] = batch
        return json_reply(self._public(batch))

    @staticmethod
    def _public(batch: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in batch.items() if not k.startswith("_")}

    def _batch_state(self, batch_id: str) -> dict[str, Any]:
        with self._lock:
            batch = self._batches[batch_id]
            if batch["status"] != "in_progress":
                return self._public(batch)
            share = (
                (time.monotonic() - batch["_started"]) / self.batch_delay
                if (self.batch_delay > 0)
                else 1.0
            )
            if share < 1.0:
                counts = batch["request_counts"]
                counts["completed"] = int(counts["total"] * share)
                return self._public(batch)
            batch["status"] = "finalizing"  # answered once, outside the lock
        self._finish(batch)
        with self._lock:
            return self._public(batch)

    def _finish(self, batch: dict[str, Any]) -> None:
        if self.batch_fault in ("failed", "expired"):
            status = self.batch_fault
            why = {"expired": "The batch expired before it was done."}.get(
                status, "The input file failed validation."
            )
            error = {"code": f"batch_{status}", "message": why, "param": None, "line": None}
            with self._lock:
                batch.update(status=status, errors={"object": "list", "data": [error]})
                batch[f"{status}_at"] = int(time.time())
            return
        endpoint = _ENDPOINTS[batch["endpoint"]]
        out: list[str] = []
        errors: list[str] = []
        for number, line in enumerate(batch["_lines"], 1):
            custom_id = line.get("custom_id") if isinstance(line, dict) else None
            request_id = f"req_batch_{number:06d}"
            try:
                if not isinstance(line, dict) or not isinstance(line.get("body"), dict):
                    raise BadRequestError("Each line needs a 'body' object.")
                if line.get("url", batch["endpoint"]) != batch["endpoint"]:
                    raise BadRequestError("A line's url must be the batch's endpoint.")
                entry: dict[str, Any] = {}
                method = self._chat if endpoint == "chat" else self._embeddings  # type: ignore[attr-defined]
                payload = method(line["body"], None, entry)
            except BadRequestError as exc:
                error = {"code": exc.code or "invalid_request", "message": exc.message}
                errors.append(
                    json.dumps(
                        {
                            "id": f"batch_req_{number}",
                            "custom_id": custom_id,
                            "response": None,
                            "error": error,
                        }
                    )
                )
                continue
            if self.batch_fault in ("missing", "unknown_ids") and number % 2 == 0:
                if self.batch_fault == "missing":
                    continue
                custom_id = f"unknown-{number}"
            self._spoil(payload)
            response = {"status_code": 200, "request_id": request_id, "body": payload}
            out.append(
                json.dumps(
                    {
                        "id": f"batch_req_{number}",
                        "custom_id": custom_id,
                        "response": response,
                        "error": None,
                    }
                )
            )
        content = ("\n".join(out) + "\n").encode()
        if self.batch_fault == "truncated":
            content = content[: len(content) // 2 + 7]
        output = self._store_file(content, "output.jsonl", "batch_output")
        failed = None
        if errors:
            failed = self._store_file(
                ("\n".join(errors) + "\n").encode(), "errors.jsonl", "batch_output"
            )
        with self._lock:
            batch.update(
                status="completed",
                completed_at=int(time.time()),
                output_file_id=output["id"],
                error_file_id=failed and failed["id"],
            )
            batch["request_counts"].update(completed=len(out), failed=len(errors))

    def _spoil(self, payload: dict[str, Any]) -> None:
        """A line's answer as ``batch_fault`` spoils it (``unusable``, ``few_choices``)."""
        choices = payload.get("choices")
        if not isinstance(choices, list):
            return
        if self.batch_fault == "few_choices":
            del choices[1:]
        elif self.batch_fault == "unusable":
            for choice in choices:
                choice["message"]["content"] = "I would rather not write questions today."
