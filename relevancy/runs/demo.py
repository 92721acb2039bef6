"""The bundled demo (48 answers to 24 questions, scored once by the embedded default) as a run."""

from __future__ import annotations

import json
from importlib import resources

import numpy as np
import pandas as pd

from relevancy.core.result import RelevancyResult
from relevancy.errors import InputError
from relevancy.io import read_table
from relevancy.runs.rows import now_iso
from relevancy.runs.store import RunStore

__all__ = [
    "DEMO_RUN_NAME",
    "demo_inputs",
    "demo_results",
    "import_demo",
]

DEMO_RUN_NAME = "Demo (embedded default)"


def demo_inputs() -> pd.DataFrame:
    """The bundled demo's rows, with a human ``label``: 1 where its hand label ``answer_type``
    is on-topic (direct and complete), 0 for partial, padded, off-topic and evasive answers."""
    with resources.as_file(resources.files("relevancy") / "data" / "demo.csv") as path:
        frame = read_table(path)
    if "label" not in frame.columns and "answer_type" in frame.columns:
        frame["label"] = np.where(frame["answer_type"] == "on-topic", "1", "0").astype(object)
    return frame


def demo_results() -> list[RelevancyResult]:
    """The precomputed demo results (``scripts/precompute_demo.py``), in ``demo.csv`` order."""
    text = (resources.files("relevancy") / "data" / "demo_results.jsonl").read_text("utf-8")
    return [RelevancyResult.from_dict(json.loads(line)) for line in text.splitlines() if line]


def import_demo(store: RunStore, *, force: bool = False) -> int | None:
    """Import the precomputed demo as a run, once per store (or again with ``force``).

    Returns the new run id, or ``None`` when the demo was imported before.
    """
    if not force and store.get_meta("demo_imported"):
        return None
    inputs = demo_inputs()
    results = demo_results()
    if len(results) != len(inputs) or any(
        r.user_input != u or r.response != a
        for r, u, a in zip(results, inputs["user_input"], inputs["response"])
    ):
        raise InputError("demo_results.jsonl does not match demo.csv: rerun precompute_demo.py")
    first = results[0]
    settings = {
        "backend": "embedded",
        "llm": "local",
        "embeddings": "local",
        "llm_name": first.llm,
        "embeddings_name": first.embeddings,
        "strictness": first.strictness,
        "noncommittal": "auto",
        "concurrency": 2,
        "precomputed": True,
        "mode_used": first.mode,
    }
    run_id = store.create_run(DEMO_RUN_NAME, settings, inputs, source="demo.csv (bundled)")
    store.append_results(run_id, enumerate(results))
    store.set_meta("demo_imported", now_iso())
    return run_id
