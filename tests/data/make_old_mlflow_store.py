"""Make an MLflow tracking store with an *older* MLflow than the project's client, as a team on
that version has it: chat completions made with the real OpenAI SDK against the toy server,
traced by ``mlflow.openai.autolog()``; then the traces exported as a user does
(``mlflow.search_traces(...).to_json(...)``).

Run by the older MLflow's Python (``.venv-mlflow``, made by ``bash scripts/setup.sh dev``); the
write-back tests (``tests/test_writeback_safety.py``) run it into a temporary folder::

    .venv-mlflow/bin/python tests/data/make_old_mlflow_store.py \\
        --tracking-uri sqlite:////tmp/x/mlflow.db --base-url http://127.0.0.1:PORT/v1 \\
        --traces 40 --export /tmp/x/traces.json

It prints one JSON line: the MLflow version, the experiment id and the store's schema revision.
Only the standard library, MLflow and the OpenAI SDK are used (nothing of relevancy's).
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
from urllib.parse import urlsplit

import mlflow
import openai

TOPICS = (
    "reset the router",
    "change the Wi-Fi password",
    "turn on the guest network",
    "update the firmware",
    "find the WAN port",
    "read the status lights",
    "limit a child's screen time",
    "open a port for a game server",
)


def question(i: int) -> str:
    return f"How do I {TOPICS[i % len(TOPICS)]} (case {i})?"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tracking-uri", required=True)
    p.add_argument("--base-url", required=True, help="the toy server's /v1 address")
    p.add_argument("--traces", type=int, default=20)
    p.add_argument("--experiment", default="support-bot")
    p.add_argument("--export", required=True, help="where search_traces is written (JSON)")
    args = p.parse_args(argv)

    mlflow.set_tracking_uri(args.tracking_uri)
    experiment_id = mlflow.create_experiment(args.experiment)
    mlflow.set_experiment(experiment_id=experiment_id)
    mlflow.openai.autolog()
    client = openai.OpenAI(base_url=args.base_url, api_key="sk-toy", max_retries=0)
    for i in range(args.traces):
        client.chat.completions.create(
            model="toy-chat", messages=[{"role": "user", "content": question(i)}]
        )
    mlflow.openai.autolog(disable=True)
    mlflow.flush_trace_async_logging()
    frame = mlflow.search_traces(locations=[experiment_id])
    frame.to_json(args.export, orient="records")
    revision = None
    if args.tracking_uri.startswith("sqlite:"):
        path = urlsplit(args.tracking_uri).path
        with sqlite3.connect(path) as db:
            revision = db.execute("SELECT version_num FROM alembic_version").fetchone()[0]
    info = {
        "mlflow": mlflow.__version__,
        "experiment_id": experiment_id,
        "traces": len(frame),
        "revision": revision,
    }
    print(json.dumps(info))
    return 0


if __name__ == "__main__":
    sys.exit(main())
