"""What the older MLflow's own client sees in a store, or a person's action through it: run by
``.venv-mlflow``'s Python from ``tests/test_writeback_safety.py``, so that the write-back is
checked through the tool's client, never through relevancy's code.

    python tests/old_mlflow_client.py read URI EXPERIMENT_ID NAME
        one JSON object: each trace's assessments named NAME (value, valid, source type,
        run id, overrides, label), and the traces linked to each run of the experiment
    python tests/old_mlflow_client.py override URI TRACE_ID ASSESSMENT_ID VALUE
        a person overrides a feedback (source HUMAN), as in MLflow's UI
"""

from __future__ import annotations

import json
import sys

import mlflow
from mlflow.entities import AssessmentSource


def read(uri: str, experiment_id: str, name: str) -> dict:
    mlflow.set_tracking_uri(uri)
    client = mlflow.MlflowClient(uri)
    traces = mlflow.search_traces(locations=[experiment_id], return_type="list")
    found = {}
    for trace in traces:
        full = client.get_trace(trace.info.trace_id)
        found[trace.info.trace_id] = [
            {
                "id": a.assessment_id,
                "value": getattr(a, "value", None),
                "valid": a.valid is not False,
                "source": a.source.source_type,
                "run_id": a.run_id,
                "overrides": a.overrides,
                "label": (a.metadata or {}).get("label"),
                "reason": (a.metadata or {}).get("reason"),
            }
            for a in full.info.assessments or []
            if a.name == name
        ]
    runs = {}
    for run in client.search_runs([experiment_id]):
        linked = mlflow.search_traces(locations=[experiment_id], run_id=run.info.run_id)
        runs[run.info.run_id] = sorted(linked["trace_id"])
    return {"mlflow": mlflow.__version__, "traces": found, "runs": runs}


def override(uri: str, trace_id: str, assessment_id: str, value: float) -> dict:
    mlflow.set_tracking_uri(uri)
    source = AssessmentSource(source_type="HUMAN", source_id="reviewer@example.com")
    done = mlflow.override_feedback(
        trace_id=trace_id,
        assessment_id=assessment_id,
        value=value,
        source=source,
        rationale="A person read it: the answer does not answer the question.",
    )
    return {"id": done.assessment_id}


if __name__ == "__main__":
    verb, *rest = sys.argv[1:]
    if verb == "read":
        print(json.dumps(read(*rest)))
    elif verb == "override":
        uri, trace_id, assessment_id, value = rest
        print(json.dumps(override(uri, trace_id, assessment_id, float(value))))
    else:
        sys.exit(f"unknown verb {verb!r}: read or override")
