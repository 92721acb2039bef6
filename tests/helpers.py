"""What many test files need: the dashboard under AppTest, the toy server's backends for the CLI
and the library, and small data files.

Tests import it as ``from helpers import ...`` (pytest puts ``tests/`` on ``sys.path``, as it
holds a ``conftest.py`` and no ``__init__.py``). Fixtures (``toy_server``) are in
``conftest.py``; browser helpers in ``browser/ui.py``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import numpy as np
import pandas as pd
import pytest

from relevancy import AnswerRelevancy, Generation, make_embedder, make_generator
from relevancy.runs import RunStore
from relevancy.testing.fakes import FakeEmbedder, FakeGenerator
from relevancy.testing.openai_server import CHAT_MODEL, EMBEDDING_MODEL, OpenAICompatServer

if TYPE_CHECKING:  # imported when a test opens the dashboard, not by every test file
    from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[1]
APP = str(ROOT / "app.py")
#: screenshots and logs of the browser tests (git-ignored)
ARTIFACTS = ROOT / "test-artifacts"
#: the demo is the first run of every fresh store (imported on the dashboard's first start)
DEMO = 1


# --- what a test needs that may not be installed -----------------------------------------------
def in_ci() -> bool:
    """CI sets ``CI`` (``scripts/test.sh`` exports ``CI=1``): there, nothing may be skipped for a
    missing dependency."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def skip_or_fail(reason: str) -> NoReturn:
    """Something the test needs is missing: skip with ``reason``, or fail with it under CI."""
    if in_ci():
        pytest.fail(reason, pytrace=False)
    pytest.skip(reason)


# --- processes --------------------------------------------------------------------------------
def recorded_generator_cpu() -> bool:
    """Whether llama.cpp runs here on the instruction set the embedded generator's recorded
    outputs were made with (AVX-512: the shipped demo, the judge check's record). Without it
    llama.cpp takes other code paths and its choices can differ by whole words: measured on an
    AVX2-only AMD EPYC (Dec 7), a demo row 0.06 off its record and a judge pair 0.25. There a
    recorded score is not expected back, only a score of the same shape."""
    import llama_cpp

    return "AVX512 = 1" in llama_cpp.llama_print_system_info().decode()


def with_sigint_ignored(argv: list[str]) -> list[str]:
    """``argv`` started with SIGINT ignored, as a shell without job control starts a background
    job (``sh -c 'cmd &'``, a CI script): Python keeps the inherited ``SIG_IGN``, so the command
    stops on Ctrl-C only if it sets its own handler. ``sh`` execs it: same process id."""
    return ["sh", "-c", 'trap "" INT; exec "$@"', "sh", *argv]


# --- the dashboard under AppTest ---------------------------------------------------------------
def ok(at: AppTest) -> AppTest:
    """``at`` after checking its last script run raised nothing (the exceptions are shown)."""
    assert not at.exception, [e.value for e in at.exception]
    return at


def app(
    page: str | None = None, *, query: Mapping[str, str] | None = None, timeout: float = 180
) -> AppTest:
    """A new session of the dashboard, run once and checked: ``app.py`` (Home), or ``page`` under
    ``pages/`` opened directly, with ``query`` as the URL's parameters (a link opened in a fresh
    browser tab)."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(APP, default_timeout=timeout)
    if page:
        at.switch_page(f"pages/{page}")
    for name, value in (query or {}).items():
        at.query_params[name] = value
    at.run()
    return ok(at)


def visit(at: AppTest, page: str) -> AppTest:
    """Move the session ``at`` to ``page`` under ``pages/`` (as the sidebar's link does), run it
    and check it."""
    at.switch_page(f"pages/{page}")
    at.run()
    return ok(at)


def metrics(at: AppTest) -> dict[str, str]:
    """The page's metrics, label to value as drawn (a label is Markdown: its escapes, which
    keep text from the data inert, are not drawn)."""
    return {re.sub(r"\\(.)", r"\1", m.label): m.value for m in at.metric}


def choose_toy_backend(at: AppTest, srv: OpenAICompatServer) -> AppTest:
    """Set the sidebar to the OpenAI-compatible backend on the toy server's models."""
    at.sidebar.radio(key="_w_sb_backend").set_value("compatible").run()
    at.sidebar.text_input(key="_w_sb_base_url").input(srv.base_url)
    at.sidebar.text_input(key="_w_sb_llm_model").input(CHAT_MODEL)
    at.sidebar.text_input(key="_w_sb_emb_model").input(EMBEDDING_MODEL).run()
    return ok(at)


# --- the toy server's backends -----------------------------------------------------------------
def cli_backends(srv: OpenAICompatServer, *more: str) -> list[str]:
    """The command line's options that score with the toy server's models, then ``more``
    (``"-q"``, ``"--timeout", "1"``...)."""
    return [
        "--llm",
        f"openai:{CHAT_MODEL}",
        "--embeddings",
        f"openai:{EMBEDDING_MODEL}",
        "--base-url",
        srv.base_url,
        *more,
    ]


def toy_metric(
    srv: OpenAICompatServer,
    *,
    api_key: str | None = None,
    client: Mapping[str, Any] | None = None,
    llm: Mapping[str, Any] | None = None,
    **metric: Any,
) -> AnswerRelevancy:
    """The metric on the toy server's models over HTTP. ``client`` goes to both clients
    (``timeout``, ``max_retries``...), ``llm`` to the generator only, the rest to the metric
    (its defaults otherwise: pass ``cache=False`` for no cache)."""
    both = {"base_url": srv.base_url, "api_key": api_key, **(client or {})}
    return AnswerRelevancy(
        llm=make_generator(f"openai:{CHAT_MODEL}", **both, **(llm or {})),
        embeddings=make_embedder(f"openai:{EMBEDDING_MODEL}", **both),
        **metric,
    )


# --- data files --------------------------------------------------------------------------------
def store_bytes(store: RunStore) -> bytes:
    """Everything a run store keeps on disk, as bytes to search: its SQLite files, and its
    Parquet segments written out as text (their pages are compressed)."""
    files = [p for p in store.path.parent.glob(store.path.name + "*") if p.is_file()]
    out = b"".join(p.read_bytes() for p in files)
    columns = store.path.with_name(store.path.name + ".columns")
    for segment in sorted(columns.rglob("*.parquet")):
        out += pd.read_parquet(segment).to_csv(index=False).encode()
    return out


def write_rows(path: Path, rows: pd.DataFrame | Iterable[Mapping[str, Any]]) -> Path:
    """Write ``rows`` (a frame, or one dict a row) to ``path`` in the format its suffix names:
    ``.csv``, ``.tsv``, ``.json`` (a list of objects), ``.jsonl`` or ``.parquet``."""
    frame = rows if isinstance(rows, pd.DataFrame) else pd.DataFrame(list(rows))
    suffix = path.suffix.lower()
    if suffix == ".csv":
        frame.to_csv(path, index=False)
    elif suffix == ".tsv":
        frame.to_csv(path, index=False, sep="\t")
    elif suffix == ".json":
        frame.to_json(path, orient="records")
    elif suffix == ".jsonl":
        frame.to_json(path, orient="records", lines=True)
    elif suffix == ".parquet":
        frame.to_parquet(path, index=False)
    else:
        raise ValueError(f"write_rows: no format for {path.name!r}")
    return path


def write_pairs(path: Path, n: int, *, kinds: bool = False) -> Path:
    """``n`` distinct on-topic question/answer rows written to ``path`` (see :func:`write_rows`);
    with ``kinds``, a ``kind`` column too (every third row ``padded``, the others ``good``)."""
    rows = []
    for i in range(n):
        row = {
            "question": f"What is the tallest mountain in range {i}?",
            "answer": f"The tallest peak of range {i} rises above the valley.",
        }
        if kinds:
            row["kind"] = "good" if i % 3 else "padded"
        rows.append(row)
    return write_rows(path, rows)


TOPICS = ("tallest mountain", "longest river", "largest desert", "deepest lake", "oldest city")
EVASIVE = "I don't know, it depends on many things I cannot help with."


def region_rows(n: int = 24, *, evasive_every: int = 0) -> list[dict[str, str]]:
    """``n`` questions about regions over five topics, answered on topic; with
    ``evasive_every``, every such row from the first on dodges the question instead."""
    rows = []
    for i in range(n):
        topic = TOPICS[i % len(TOPICS)]
        answer = f"The {topic} of region {i} is famous for its {topic} records and maps."
        if evasive_every and i % evasive_every == 0:
            answer = EVASIVE
        rows.append({"question": f"What is the {topic} of region {i}?", "answer": answer})
    return rows


# --- a run with times (the Over time page) ------------------------------------------------------
#: the first hour of :func:`timed_run`
T0 = datetime(2026, 12, 6, 9, tzinfo=timezone.utc)


def timed_run(
    store: RunStore, *, settings: Mapping[str, Any] | None = None, scored: int | None = None
) -> tuple[int, pd.DataFrame, list[Any]]:
    """A run scored with the fake backends (as the dashboard's AppTests do): 8 rows an hour for
    three hours, the third under a new prompt version and answered off topic; the times as ISO
    text, epoch seconds and epoch milliseconds, and one cell that is no time. Only the first
    ``scored`` results are saved (all by default); returns the run, its inputs and results."""
    rng = np.random.default_rng(3)
    rows, vectors = [], {}
    for h in range(3):
        for j in range(8):
            i = len(rows)
            when = T0 + timedelta(hours=h, minutes=5 * j + 2)
            cell = (
                when.strftime("%Y-%m-%dT%H:%M:%S")
                if i % 3 == 0
                else (when.timestamp() if i % 3 == 1 else int(when.timestamp() * 1000))
            )
            question = f"What is the capital of country {i}?"
            answer = f"answer {i}"
            drift = rng.uniform(0.1, 0.5) if h < 2 else rng.uniform(1.5, 3.0)
            vectors[question] = [1.0, 0.0, 0.0, 0.0]
            vectors[f"gen {answer}"] = [1.0, drift, 0.1, 0.0]
            version = "v2" if h == 2 else "v1"
            rows.append(
                {
                    "user_input": question,
                    "response": answer,
                    "start_time": cell,
                    "prompt_version": version,
                }
            )
    rows.append(
        {"user_input": "When?", "response": "answer x", "start_time": "n/a", "prompt_version": "v1"}
    )
    inputs = pd.DataFrame(rows)
    metric = AnswerRelevancy(
        llm=FakeGenerator(lambda response, n: [Generation(f"gen {response}", False)] * n),
        embeddings=FakeEmbedder(vectors),
        cache=False,
    )
    results = metric.score_many(inputs)
    run_id = store.create_run("timed run", {"backend": "embedded", **(settings or {})}, inputs)
    store.append_results(run_id, list(enumerate(results))[:scored])
    return run_id, inputs, results
