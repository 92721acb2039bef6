"""A password inside ``--base-url`` (``http://user:PW@host/v1``) never appears where a user can
see it: not in the output's error column, the run store, its JSON export, the HTML report or on
the console, when every request fails and the errors quote the server's address (before: it
was in all five; only the run's settings stripped it)."""

from __future__ import annotations

import pytest

from relevancy.cli import main
from relevancy.core.redact import redact
from relevancy.runs import RunStore
from relevancy.testing.openai_server import (
    CHAT_MODEL,
    EMBEDDING_MODEL,
    FaultPlan,
    OpenAICompatServer,
)

from helpers import store_bytes, write_rows

PASSWORD = "Tr0ub4dor-and-3"


def build_report(store: RunStore, run_id: int) -> str:
    try:
        from relevancy.report import build_report as build
    except ImportError:  # where it was before the report had a package of its own
        from relevancy.dashboard.views.report import build_report as build
    return build(store, run_id)


def test_a_password_in_the_base_url_is_in_no_output(tmp_path, capsys) -> None:
    pytest.importorskip("plotly")
    src = write_rows(
        tmp_path / "rows.csv", [{"question": f"Q{i}?", "answer": f"A {i}."} for i in range(3)]
    )
    out = tmp_path / "out.csv"
    with OpenAICompatServer(faults=FaultPlan(rate=1.0, kinds=("500",))) as srv:
        url = srv.base_url.replace("http://", f"http://relevancy-user:{PASSWORD}@")
        code = main(
            [
                "score",
                str(src),
                "-o",
                str(out),
                "--save-run",
                "leak",
                "--no-cache",
                "--llm",
                f"openai:{CHAT_MODEL}",
                "--embeddings",
                f"openai:{EMBEDDING_MODEL}",
                "--base-url",
                url,
            ]
        )
    console = capsys.readouterr()
    assert code == 1  # nothing could be scored: every request met a 500
    written = out.read_text()
    assert "HTTP 500 from http://***@127.0.0.1:" in written  # the errors say where, without it
    store = RunStore()
    run = store.list_runs()[-1]
    places = {
        "console": console.out + console.err,
        "output": written,
        "export": store.export_bytes(run.id, "json").decode(),
        "report": build_report(store, run.id),
        "store": store_bytes(store).decode("latin-1"),
    }
    leaked = [where for where, text in places.items() if PASSWORD in text]
    assert leaked == []
    assert "failed (  3)    generation failed: HTTP 500 from http://***@127.0.0.1:" in console.out


@pytest.mark.parametrize(
    "text, shown",
    [
        (
            "HTTP 500 from http://bob:s3cr3t-pw@10.0.0.1:8080/v1: boom",
            "HTTP 500 from http://***@10.0.0.1:8080/v1: boom",
        ),
        ("cannot reach https://alice@example.org/v1", "cannot reach https://***@example.org/v1"),
        (
            "GET https://x.openai.azure.com/o?api-version=2024-10-21&api-key=zz99yy88 failed",
            "GET https://x.openai.azure.com/o?api-version=2024-10-21&api-key=*** failed",
        ),
        ("https://h/p?a=1&token=t0k3n&sig=AbC%2Fd&b=2", "https://h/p?a=1&token=***&sig=***&b=2"),
        ("https://h/p?access_token=abc#top", "https://h/p?access_token=***#top"),
        (
            "mail bob@example.org, see http://example.org/v1?q=1",
            "mail bob@example.org, see http://example.org/v1?q=1",
        ),
    ],
)
def test_redact_hides_address_passwords_and_secret_query_values(text, shown) -> None:
    assert redact(text) == shown
