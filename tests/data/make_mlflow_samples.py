"""Write the MLflow samples in tests/data/mlflow/ with real MLflow tracing.

The app in ``sample_app.py`` makes its calls with the real OpenAI SDK against the toy server,
traced by ``mlflow.openai.autolog()`` (and ``mlflow.start_span`` for the pipelines) into a
SQLite tracking store in a temporary folder; then the exports an MLflow user has:

``search_traces.json``    ``mlflow.search_traces(...)`` written with ``to_json(orient="records")``
``search_traces.jsonl``   the same with ``lines=True``
``search_traces.parquet`` the same frame to Parquet, its nested columns dumped to JSON text first
                          (``to_parquet`` of the frame as it is fails: ArrowInvalid)
``search_traces_no_spans.json`` ``mlflow.search_traces(..., include_spans=False)`` with
                          ``to_json(orient="records")``: each trace's previews, no spans
``cli_traces.json``       ``mlflow traces search --experiment-id ID --output json``
``trace.json``            ``Trace.to_json()`` of one pipeline trace
``truth.json``            each case's question and answer (by the trace's ``case`` tag)

Made with the versions in ``truth.json``. To refresh::

    bash scripts/setup.sh dev      # .venv with the mlflow extra
    .venv/bin/python tests/data/make_mlflow_samples.py
"""

from __future__ import annotations

import importlib.metadata as md
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import mlflow

from relevancy.testing.openai_server import OpenAICompatServer

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/
import sample_app  # noqa: E402

OUT = Path(__file__).resolve().parent / "mlflow"
EXPERIMENT = "router-support"
#: columns of ``search_traces`` holding objects: written as JSON text for Parquet
NESTED = ("request", "response", "trace_metadata", "tags", "spans", "assessments")


def versions() -> dict[str, str]:
    names = ["mlflow-skinny", "openai", "pandas", "pyarrow", "sqlalchemy", "alembic"]
    return {name: md.version(name) for name in names}


def main() -> None:
    OUT.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp, OpenAICompatServer(text_mode="lines") as toy:
        uri = f"sqlite:///{tmp}/mlflow.db"
        mlflow.set_tracking_uri(uri)
        experiment_id = mlflow.create_experiment(EXPERIMENT, artifact_location=f"{tmp}/artifacts")
        truth = sample_app.trace_into_mlflow(experiment_id, toy)
        frame = mlflow.search_traces(locations=[experiment_id], order_by=["timestamp_ms ASC"])
        frame.to_json(OUT / "search_traces.json", orient="records", force_ascii=False)
        frame.to_json(OUT / "search_traces.jsonl", orient="records", lines=True, force_ascii=False)
        bare = mlflow.search_traces(
            locations=[experiment_id], order_by=["timestamp_ms ASC"], include_spans=False
        )
        bare.to_json(OUT / "search_traces_no_spans.json", orient="records", force_ascii=False)
        dumped = frame.copy()
        for column in NESTED:
            if column in dumped:
                dumped[column] = dumped[column].map(lambda v: json.dumps(v, default=str))
        dumped.to_parquet(OUT / "search_traces.parquet")
        env = {**os.environ, "MLFLOW_TRACKING_URI": uri}
        cli = subprocess.run(
            [
                str(Path(sys.executable).with_name("mlflow")),
                "traces",
                "search",
                "--experiment-id",
                experiment_id,
                "--output",
                "json",
                "--max-results",
                "100",
            ],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        listed = json.loads(cli.stdout)
        (OUT / "cli_traces.json").write_text(
            json.dumps(listed, indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
        )
        tags = frame["tags"].map(lambda t: t.get("case"))
        one = mlflow.get_trace(frame["trace_id"][tags == "pipeline-json"].iloc[0])
        (OUT / "trace.json").write_text(one.to_json(pretty=True) + "\n", encoding="utf-8")
        sample_app.write_truth(OUT / "truth.json", truth, versions())
    print(f"wrote {len(frame)} traces to {OUT}")


if __name__ == "__main__":
    main()
