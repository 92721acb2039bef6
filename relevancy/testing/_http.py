"""The HTTP plumbing of the toy server: a threading server that tracks its connections, and
a handler that reads a bounded body and hands it to the server's router."""

from __future__ import annotations

import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MAX_BODY_BYTES = 64 * 1024 * 1024


class BadRequestError(Exception):
    """A request the server refuses with 400."""

    def __init__(
        self, message: str, *, param: str | None = None, code: str | None = None, status: int = 400
    ) -> None:
        super().__init__(message)
        self.message = message
        self.param = param
        self.code = code
        self.status = status


CONNECTION_ERRORS = (BrokenPipeError, ConnectionResetError, ConnectionAbortedError, TimeoutError)


class HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 256  # many clients connecting at once (socketserver's default is 5)

    def __init__(self, address: tuple[str, int], app: Any) -> None:
        self.app = app
        super().__init__(address, Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], OSError):
            return  # a client that went away (timeout, drop) is business as usual here
        super().handle_error(request, client_address)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, like real API servers
    server_version = "relevancy-openai-compat/1.0"
    timeout = 60  # idle keep-alive connections give up after this
    disable_nagle_algorithm = True  # else headers and body, sent apart, stall ~40 ms on ACKs
    server: HTTPServer

    def setup(self) -> None:
        super().setup()
        self.server.app._track(self.connection)

    def finish(self) -> None:
        try:
            super().finish()
        except CONNECTION_ERRORS:
            pass
        finally:
            self.server.app._untrack(self.connection)

    def do_GET(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    do_PUT = do_DELETE = do_PATCH = do_POST

    def log_message(self, format: str, *args: Any) -> None:
        if self.server.app.log_requests:
            super().log_message(format, *args)

    def _read_body(self) -> bytes | None:
        """The request body, or None when its framing is broken."""
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            chunks: list[bytes] = []
            total = 0
            while True:
                size_line = self.rfile.readline(1024).split(b";")[0].strip()
                try:
                    size = int(size_line, 16)
                except ValueError:
                    return None
                if size == 0:
                    while self.rfile.readline(1024).strip():  # trailers
                        pass
                    return b"".join(chunks)
                total += size
                if total > MAX_BODY_BYTES:
                    return None
                chunks.append(self.rfile.read(size))
                self.rfile.readline(1024)
        length_header = self.headers.get("Content-Length")
        if length_header is None:
            return b""
        try:
            length = int(length_header)
        except ValueError:
            return None
        if not 0 <= length <= MAX_BODY_BYTES:
            return None
        return self.rfile.read(length)

    def _serve(self) -> None:
        raw = self._read_body()
        reply = self.server.app._handle(
            self.command,
            self.path,
            self.headers.get("Authorization"),
            raw,
            self.headers.get("Content-Type"),
        )
        if raw is None:
            reply.close = True  # the stream position is unknown; don't reuse the connection
        if reply.drop:
            self.close_connection = True
            return
        try:
            self.send_response(reply.status)
            self.send_header("Content-Type", reply.content_type)
            self.send_header("Content-Length", str(len(reply.body)))
            for name, value in reply.headers.items():
                self.send_header(name, value)
            if reply.close:
                self.send_header("Connection", "close")
                self.close_connection = True
            self.end_headers()
            self.wfile.write(reply.body)
            self.wfile.flush()
        except CONNECTION_ERRORS:
            self.close_connection = True
