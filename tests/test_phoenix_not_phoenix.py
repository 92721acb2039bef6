"""``--from phoenix://`` at a server that is not Phoenix (a web page on that port) says so in
one line, instead of "has no spans: check the project's name" (Phoenix's client reads a page
that is not spans as no spans)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from relevancy.cli import main

from helpers import cli_backends

PAGE = b"<!doctype html><html><body><h1>Welcome to nginx!</h1></body></html>"


class WebPage(BaseHTTPRequestHandler):
    """Answers every request with the same HTML page, 200."""

    def _page(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(PAGE)))
        self.end_headers()
        self.wfile.write(PAGE)

    do_GET = do_POST = _page

    def log_message(self, *args: object) -> None:  # quiet
        pass


@pytest.fixture
def web_page() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), WebPage)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_a_web_page_is_not_a_phoenix_project_with_no_spans(tmp_path, capsys, web_page, toy_server):
    pytest.importorskip("phoenix.client")
    url = f"phoenix://{web_page}/default"
    code = main(
        ["score", "--from", url, "-o", str(tmp_path / "out.csv"), *cli_backends(toy_server)]
    )
    err = capsys.readouterr().err
    assert code == 2
    assert err.strip().splitlines() == [
        f"error: {url} does not answer as a Phoenix server does (its answer is not JSON: "
        f"'<!doctype html><html><body><h1>Welcome t'...): check the address and the port"
    ]
    assert "has no spans" not in err
