"""A small OpenAI-compatible HTTP server that can misbehave on purpose.

Tests and benchmarks use it to drive the ``openai``-SDK backend over real HTTP on 127.0.0.1,
without a network, a GPU or an API key. It serves three endpoints:

``GET /v1/models``
    Two fake model ids (:data:`CHAT_MODEL`, :data:`EMBEDDING_MODEL`).
``POST /v1/chat/completions``
    A deterministic toy "model": it reads the last ``user`` message (the text after its last
    ``Response:`` marker, if any) and answers with a question built from the content words, plus
    a ``noncommittal`` flag set when the text sounds evasive. ``n`` choices are returned, each a
    little different. The reply is JSON ``{"question": "...", "noncommittal": 0}``; without a
    ``response_format`` its shape follows ``text_mode`` (``"json"``, ``"prose"`` or ``"lines"``).
    Given ``tools`` and a last message from the user, it calls the first tool instead (one
    choice, ``tool_calls`` with the user's words as ``{"query": ...}``); the request that sends
    the tool's result back gets a text reply, as from a real model.
``POST /v1/embeddings``
    Deterministic hashed bag-of-words vectors (words plus lighter character trigrams),
    L2-normalised. Both ``encoding_format="float"`` and ``"base64"`` (the SDK's default) work.

It also enforces OpenAI-style rate limits per model (``rpm``, ``tpm``: see
``relevancy/testing/_limits.py``) and serves the Batch API (``/v1/files``, ``/v1/batches``)
and two admin endpoints (``GET /admin/stats``, ``POST /admin/limits``): see
``relevancy/testing/_batches.py``.

Faults are injected per request, either from a seeded random :class:`FaultPlan` or from a script
that takes priority::

    from relevancy.testing.openai_server import FaultPlan, OpenAICompatServer

    with OpenAICompatServer(api_key="sk-test", retry_after=0.1) as srv:
        client = openai.OpenAI(base_url=srv.base_url, api_key="sk-test", max_retries=0)
        srv.script(["429", None, "500"])   # next three requests: 429, normal, 500
        ...
        srv.set_faults(FaultPlan(rate=0.3, seed=1))
        print(srv.stats())

Fault kinds (:data:`FAULT_KINDS`):

``"429"``            429 with ``Retry-After`` and ``retry-after-ms`` headers, code
                     ``rate_limit_exceeded``.
``"500"``, ``"503"`` that status with an OpenAI-style error body.
``"slow"``           wait ``slow_seconds`` (cut short by :meth:`OpenAICompatServer.stop`), then
                     answer normally; a client with a shorter timeout gives up first.
``"drop"``           close the connection without sending anything.
``"invalid_json"``   200, ``application/json``, a truncated body that is not JSON.
``"missing_fields"`` 200 with valid JSON lacking ``choices`` (chat) or ``data`` (embeddings,
                     models).
``"fewer_choices"``  chat only: one choice fewer than would be served (so ``n=1`` gives none).
``"empty_content"``  chat only: every choice's content is ``""``.
``"embed_wrong_count"`` embeddings only: one vector fewer than inputs (one extra for a single
                     input).
``"embed_wrong_dim"`` embeddings only: the last vector has ``dim + 3`` components.

A kind that does not fit the endpoint (a chat-only kind on ``/v1/embeddings``, an embeddings-only
kind on chat, either on ``/v1/models``) is *not applied*: the request is served normally, logged
with ``fault=None`` and ``fault_ignored=<kind>``. A random :class:`FaultPlan` only draws among the
kinds that fit the endpoint, so its rate holds on every endpoint. A scripted entry is consumed by
the next authorised request to a known endpoint, whatever that endpoint is; 401 and 404 answers
consume nothing. Requests with a malformed body get a 400 unless a status/transport fault
(``429``, ``500``, ``503``, ``drop``, ``invalid_json``) was drawn, which wins, as a rate limiter
in front of a real server would.

Every request is logged in :attr:`OpenAICompatServer.requests` (path, parsed body, fault, whether
the Authorization header was accepted, status). The Authorization header and the key are never
stored.

This module holds the HTTP server and its command line; the toy model is in
``relevancy/testing/_toy_model.py`` and the faults in ``relevancy/testing/_faults.py``. Their
public names are importable from here.

Cost model. By default every request is answered at once (after ``latency``, if set) and
usage counts words. For a server that behaves like a remote API (benches), set
``token_latency`` (seconds per completion token: a request takes ``latency`` plus the longest
choice's tokens times this, the ``n`` choices decoded side by side), ``tokenizer="approx"``
(usage counted like a BPE tokenizer, :func:`approx_tokens`) and, for a server with a fixed number
of slots (llama.cpp's is one), ``slots`` (requests served at once; the others wait their turn).
Usage is reported as OpenAI does: the prompt once per request whatever ``n`` is, the completion
tokens of every choice, and ``*_tokens_details``. ``usage_log`` appends one JSON line per answered
request (endpoint, status, tokens, choices, seconds queued and served) to a file, for benches
that run the server in its own process.

Run it by hand with::

    python -m relevancy.testing.openai_server --port 8765 [--api-key K] [--fault-rate 0.3]
        [--embedding-dim 64] [--no-n] [--latency 0.3 --token-latency 0.01 --tokenizer approx]
        [--slots 1] [--usage-log usage.jsonl] [--rpm 60 --tpm 40000 --limit-window 6]
        [--batch-delay 5] [--batch-fault expired] [--header NAME=VALUE]
        [--fault-pattern ok,ok,429] [--no-retry-after] [--seed 7 --seeded]
"""

from __future__ import annotations

import contextlib
import hmac
import itertools
import json
import socket
import sys
import threading
import time
from collections import Counter, deque
from collections.abc import Iterable, Sequence
from typing import Any

from relevancy.core.interrupt import ctrl_c_interrupts
from relevancy.testing._batches import BatchesMixin
from relevancy.testing._cli import parse_args, server_options
from relevancy.testing._endpoints import EndpointsMixin, stream_reply
from relevancy.testing._faults import (
    CHAT_ONLY_FAULTS,
    EARLY_FAULTS,
    EMBEDDING_ONLY_FAULTS,
    ENDPOINT_FAULTS,
    FAULT_KINDS,
    GENERIC_FAULTS,
    FaultPlan,
    Reply,
    check_kind,
    early_fault_reply,
    error_reply,
    json_reply,
)
from relevancy.testing._http import BadRequestError, HTTPServer
from relevancy.testing._limits import LimitsMixin, RateLimits
from relevancy.testing._toy_model import (
    CHAT_MODEL,
    EMBEDDING_MODEL,
    TEXT_MODES,
    answer_text,
    approx_tokens,
    embed_text,
    is_noncommittal,
    make_question,
    word_count,
)

__all__ = [
    "CHAT_MODEL",
    "CHAT_ONLY_FAULTS",
    "EMBEDDING_MODEL",
    "EMBEDDING_ONLY_FAULTS",
    "FAULT_KINDS",
    "GENERIC_FAULTS",
    "FaultPlan",
    "OpenAICompatServer",
    "answer_text",
    "embed_text",
    "is_noncommittal",
    "main",
    "make_question",
]

_ROUTES: dict[str, tuple[str, str]] = {
    "/v1/models": ("GET", "models"),
    "/v1/chat/completions": ("POST", "chat"),
    "/v1/embeddings": ("POST", "embeddings"),
}

#: how usage is counted: the old toy count, or close to a BPE tokenizer's
_TOKENIZERS = {"words": word_count, "approx": approx_tokens}


# ----------------------------------------------------------------------------- HTTP plumbing


# ----------------------------------------------------------------------------- the server


class OpenAICompatServer(EndpointsMixin, LimitsMixin, BatchesMixin):
    """An OpenAI-compatible server on a background thread, with fault injection.

    Use it as a context manager (``with OpenAICompatServer() as srv: ...``) or call
    :meth:`start` / :meth:`stop`. ``port=0`` picks a free port; read it from :attr:`port` or
    use :attr:`base_url` once started.

    Options: ``api_key`` (None accepts any or no key), ``faults`` (a :class:`FaultPlan` or None),
    ``embedding_dim``, ``honour_n`` (False answers one choice whatever ``n`` is, like llama.cpp's
    server), ``max_n`` (cap on choices), ``accept_json_schema`` / ``accept_json_object`` (False
    rejects that ``response_format`` with 400), ``text_mode`` (``"json"``, ``"prose"``,
    ``"lines"``: reply shape without ``response_format``), ``retry_after`` (seconds announced by a
    429; None: none), ``headers`` (sent with every chat and embeddings answer), ``slow_seconds``
    (delay of a ``"slow"`` fault), ``seed`` (salts the embedding hash and the response ids),
    ``latency`` (fixed delay before every response), ``token_latency``, ``slots``, ``tokenizer``
    and ``usage_log`` (the cost model: see the module docstring),
    ``log_requests`` (print an access log line per request to stderr), ``seeded`` (choice ``i``
    under ``seed`` s is question ``s + i``, as seed ``s + i`` alone gives; else question ``i``),
    ``rpm``, ``tpm``, ``limit_window`` and ``limit_retry_after`` (rate limits per model, like
    OpenAI's: see ``relevancy/testing/_limits.py``; :meth:`set_limits` or ``POST /admin/limits``
    change them), ``batch_delay`` (seconds a ``/v1/batches`` job takes) and ``batch_fault`` (how
    batches fail: see ``relevancy/testing/_batches.py``).
    """

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        api_key: str | None = None,
        faults: FaultPlan | None = None,
        embedding_dim: int = 64,
        honour_n: bool = True,
        max_n: int | None = None,
        accept_json_schema: bool = True,
        accept_json_object: bool = True,
        text_mode: str = "json",
        retry_after: float | None = 1.0,
        slow_seconds: float = 5.0,
        seed: int = 0,
        latency: float = 0.0,
        token_latency: float = 0.0,
        slots: int | None = None,
        tokenizer: str = "words",
        usage_log: str | None = None,
        log_requests: bool = False,
        seeded: bool = False,
        rpm: int | None = None,
        tpm: int | None = None,
        limit_window: float = 60.0,
        limit_retry_after: bool = True,
        batch_delay: float = 0.0,
        headers: dict[str, str] | None = None,
        batch_fault: str | None = None,
    ) -> None:
        if embedding_dim < 1:
            raise ValueError("embedding_dim must be at least 1")
        if max_n is not None and max_n < 1:
            raise ValueError("max_n must be at least 1 (or None)")
        if text_mode not in TEXT_MODES:
            raise ValueError(f"text_mode must be one of {TEXT_MODES}, got {text_mode!r}")
        if min(retry_after or 0.0, slow_seconds, latency, token_latency) < 0:
            raise ValueError(
                "retry_after, slow_seconds, latency and token_latency must not be negative"
            )
        if slots is not None and slots < 1:
            raise ValueError("slots must be at least 1 (or None)")
        if tokenizer not in _TOKENIZERS:
            raise ValueError(f"tokenizer must be one of {tuple(_TOKENIZERS)}, got {tokenizer!r}")
        self.host = host
        self._requested_port = port
        self._api_key = api_key
        self.embedding_dim = embedding_dim
        self.honour_n = honour_n
        self.max_n = max_n
        self.accept_json_schema = accept_json_schema
        #: HTTP status for a refused response_format (llama-cpp-python's server answers 500).
        self.reject_status = 400
        self.accept_json_object = accept_json_object
        self.text_mode = text_mode
        self.retry_after = retry_after
        self.slow_seconds = slow_seconds
        self.seed = seed
        self.latency = latency
        self.token_latency = token_latency
        self.slots = slots
        self._slot = threading.BoundedSemaphore(slots) if slots else None
        self._count = _TOKENIZERS[tokenizer]
        self.usage_log = usage_log
        self.log_requests = log_requests
        self.seeded = seeded
        self._in_flight = self._max_in_flight = 0  # requests being served (slots taken)
        self.limits = RateLimits(rpm, tpm, window=limit_window, retry_after=limit_retry_after)
        self.batch_delay = batch_delay
        self.header_overrides = dict(headers or {})
        self._init_batches(batch_fault)

        self._lock = threading.Lock()
        self._plan: FaultPlan | None = None
        self.set_faults(faults)
        self._script: deque[str | None] = deque()
        self._log: list[dict[str, Any]] = []
        self._ids = itertools.count(1)
        self._connections: set[socket.socket] = set()
        self._stopping = threading.Event()
        self._httpd: HTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle

    def start(self) -> OpenAICompatServer:
        """Bind and serve on a daemon thread; does nothing if already running."""
        if self._httpd is not None:
            return self
        self._stopping.clear()
        httpd = HTTPServer((self.host, self._requested_port), self)
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"openai-compat-server:{self.port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, promptly: sleeping requests are woken and open connections closed."""
        httpd, thread = self._httpd, self._thread
        if httpd is None:
            return
        self._stopping.set()
        httpd.shutdown()
        with self._lock:
            connections = list(self._connections)
        for conn in connections:  # wake handler threads blocked on idle keep-alive sockets
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        httpd.server_close()
        if thread is not None:
            thread.join(timeout=1.0)
        self._httpd = None
        self._thread = None

    def __enter__(self) -> OpenAICompatServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("the server is not running; call start() first")
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        """``http://HOST:PORT/v1``, ready for ``openai.OpenAI(base_url=...)``."""
        host = "127.0.0.1" if self.host in ("", "0.0.0.0") else self.host
        return f"http://{host}:{self.port}/v1"

    def __repr__(self) -> str:
        where = self.base_url if self._httpd is not None else "stopped"
        return f"<OpenAICompatServer {where}>"

    # -- faults

    def set_faults(self, plan: FaultPlan | None) -> None:
        """Use ``plan`` for random faults from now on (None: no random faults)."""
        if plan is not None and not isinstance(plan, FaultPlan):
            raise TypeError(f"expected a FaultPlan or None, got {type(plan).__name__}")
        with self._lock:
            self._plan = plan

    def script(self, kinds: Iterable[str | None]) -> None:
        """Queue faults for the next requests, in order (None: serve that one normally).

        Scripted entries are used before the random plan is consulted.
        """
        queued = list(kinds)
        for kind in queued:
            check_kind(kind)
        with self._lock:
            self._script.extend(queued)

    def set_limits(self, *, rpm: int | None = None, tpm: int | None = None) -> None:
        """Change the rate limits (None turns one off); requests in the window still count."""
        self.limits.set(rpm=rpm, tpm=tpm)

    def clear(self) -> None:
        """Forget the request log and any scripted faults not yet used."""
        with self._lock:
            self._log.clear()
            self._script.clear()

    # -- inspection

    @property
    def requests(self) -> list[dict[str, Any]]:
        """A snapshot of the request log, oldest first.

        Each entry has ``method``, ``path``, ``body`` (parsed JSON or None), ``fault`` (the fault
        applied, or None), ``fault_ignored`` (a drawn kind that did not fit, or None),
        ``authorization_ok`` and ``status`` (None for a dropped or unfinished request).
        """
        with self._lock:
            return [dict(entry) for entry in self._log]

    def stats(self) -> dict[str, Any]:
        """Counts: ``total``, ``by_path``, ``by_fault`` (applied faults only), ``by_status``,
        ``max_in_flight`` (the most requests served at once so far), ``limits`` (the rate
        limits, requests admitted and 429s by type) and ``batches`` (batches created)."""
        with self._lock:
            log = list(self._log)
            most = self._max_in_flight
        return {
            "limits": self.limits.describe(),
            "batches": self._batch_count(),
            "max_in_flight": most,
            "total": len(log),
            "by_path": dict(Counter(entry["path"] for entry in log)),
            "by_fault": dict(Counter(entry["fault"] for entry in log if entry["fault"])),
            "by_status": dict(Counter(entry["status"] for entry in log)),
        }

    # -- request handling (called on handler threads)

    def _track(self, conn: socket.socket) -> None:
        with self._lock:
            self._connections.add(conn)

    def _untrack(self, conn: socket.socket) -> None:
        with self._lock:
            self._connections.discard(conn)

    def _authorised(self, header: str | None) -> bool:
        if self._api_key is None:
            return True
        scheme, _, token = (header or "").partition(" ")
        if scheme.lower() != "bearer":
            return False
        return hmac.compare_digest(token.strip().encode(), self._api_key.encode())

    def _next_fault(self, endpoint: str) -> tuple[str | None, str | None]:
        """(fault to apply, drawn fault that does not fit ``endpoint``)."""
        with self._lock:
            if self._script:
                kind = self._script.popleft()
            else:
                kind = self._plan.draw(endpoint) if self._plan is not None else None
        if kind is not None and kind not in ENDPOINT_FAULTS[endpoint]:
            return None, kind
        return kind, None

    def _handle(
        self,
        method: str,
        target: str,
        auth: str | None,
        raw: bytes | None,
        content_type: str | None = None,
    ) -> Reply:
        path = target.split("?", 1)[0]
        body: Any = None
        if raw:
            try:
                body = json.loads(raw)
            except (UnicodeDecodeError, json.JSONDecodeError):
                body = None
        authorised = self._authorised(auth)
        entry: dict[str, Any] = {
            "method": method,
            "path": path,
            "body": body,
            "fault": None,
            "fault_ignored": None,
            "authorization_ok": authorised,
            "status": None,
        }
        with self._lock:
            self._log.append(entry)

        arrived = time.perf_counter()
        if self._slot is not None:  # wait for a free slot (a stop wakes the waiters)
            while not self._slot.acquire(timeout=0.05):
                if self._stopping.is_set():
                    return Reply(drop=True)
        with self._lock:
            self._in_flight += 1
            self._max_in_flight = max(self._max_in_flight, self._in_flight)
        try:
            started = time.perf_counter()
            if self.latency and self._stopping.wait(self.latency):
                return Reply(drop=True)
            if authorised and self._is_extra(path):  # admin, files and batches
                reply = self._extra_route(method, path, raw, body, content_type)
            else:
                reply = self._route(
                    method=method,
                    path=path,
                    authorised=authorised,
                    raw=raw,
                    body=body,
                    entry=entry,
                )
            reply.headers = {**entry.pop("limit_headers", {}), **reply.headers}
            decode = self.token_latency * entry.get("decode_tokens", 0)
            if decode and self._stopping.wait(decode):
                return Reply(drop=True)
        finally:
            with self._lock:
                self._in_flight -= 1
            if self._slot is not None:
                self._slot.release()
        with self._lock:
            entry["status"] = None if reply.drop else reply.status
            entry["queued_s"] = started - arrived
            entry["served_s"] = time.perf_counter() - started
        if self.usage_log:
            self._write_usage(entry)
        return reply

    def _write_usage(self, entry: dict[str, Any]) -> None:
        keys = ("path", "status", "choices", "queued_s", "served_s", "counted_tokens")
        line = {k: entry.get(k) for k in keys}
        if isinstance(entry.get("body"), dict):
            line["model"] = entry["body"].get("model")
        line.update(entry.get("usage") or {})
        with self._lock, open(self.usage_log, "a", encoding="utf-8") as fh:  # type: ignore[arg-type]
            fh.write(json.dumps(line) + "\n")

    def _route(
        self,
        *,
        method: str,
        path: str,
        authorised: bool,
        raw: bytes | None,
        body: Any,
        entry: dict[str, Any],
    ) -> Reply:
        if not authorised:
            return error_reply(
                401,
                "Incorrect API key provided. Check the key and try again.",
                type_="invalid_request_error",
                code="invalid_api_key",
            )
        route = _ROUTES.get(path.rstrip("/") or "/")
        if route is None:
            return error_reply(
                404,
                f"Invalid URL ({method} {path})",
                type_="invalid_request_error",
                code="unknown_url",
            )
        expected_method, endpoint = route
        if method != expected_method:
            return error_reply(
                405,
                f"Method {method} not allowed on {path}; use {expected_method}.",
                type_="invalid_request_error",
                code="method_not_allowed",
            )

        limit_headers, refused = self._limit_check(endpoint, body, entry)
        entry["limit_headers"] = limit_headers
        if refused is not None:  # over a rate limit: no fault drawn, nothing served
            entry["rate_limited"] = True
            return refused
        fault, ignored = self._next_fault(endpoint)
        with self._lock:
            entry["fault"], entry["fault_ignored"] = fault, ignored

        if fault in EARLY_FAULTS:
            return early_fault_reply(fault, endpoint, self.retry_after)
        if fault == "slow" and self._stopping.wait(self.slow_seconds):
            return Reply(drop=True)

        try:
            if endpoint == "models":
                payload = self._models()
            else:
                if raw is None or not isinstance(body, dict):
                    raise BadRequestError(
                        "The request body must be a JSON object.", code="invalid_json"
                    )
                if endpoint == "chat":
                    payload = self._chat(body, fault, entry)
                else:
                    payload = self._embeddings(body, fault, entry)
        except BadRequestError as exc:
            if fault not in (None, "slow"):
                with self._lock:  # the fault never reached the client
                    entry["fault"], entry["fault_ignored"] = None, fault
            return error_reply(
                exc.status,
                exc.message,
                type_="invalid_request_error",
                code=exc.code,
                param=exc.param,
            )

        if fault == "missing_fields":
            payload.pop("data" if endpoint in ("embeddings", "models") else "choices", None)
        if endpoint == "chat" and body.get("stream") and "choices" in payload:
            return stream_reply(payload, body)
        return json_reply(payload, headers={"x-request-id": f"req_{next(self._ids):08d}"})

    # -- endpoints


# ----------------------------------------------------------------------------- command line


def main(argv: Sequence[str] | None = None) -> int:
    """Run the server in the foreground until Ctrl-C."""
    server = OpenAICompatServer(**server_options(args := parse_args(argv)))
    server.answer_models = args.answer_models  # answer chat prompts as these models
    with ctrl_c_interrupts(), server:  # Ctrl-C stops it, even if started with SIGINT ignored
        try:
            print(f"Serving an OpenAI-compatible API at {server.base_url}", flush=True)
            threading.Event().wait()
        except KeyboardInterrupt:
            print("Stopping.", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
