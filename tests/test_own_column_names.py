"""A table's ``model`` (or ``system``, ``prompt_version``) column is taken as the variant, and
keeps its own name wherever a person reads it: the CSV that ``relevancy score -o`` writes, the
store's exports, the Dataset grid's header, the Embeddings colour choice, the Distributions
split. ``variant`` is a role used inside (issue 46, item 8)."""

from __future__ import annotations

import io

import pandas as pd
import pytest

from relevancy.cli import main
from relevancy.io import normalize_columns, results_to_frame
from relevancy.paths import default_store_path
from relevancy.runs import RunStore, demo_results

from helpers import ROOT, app, cli_backends, ok, visit, write_rows


@pytest.mark.parametrize("own", ["model", "system", "prompt_version", "Model"])
def test_results_keep_the_tables_name_for_the_variant(own):
    table = normalize_columns(pd.DataFrame({"question": ["q"], "answer": ["a"], own: ["gpt"]}))
    assert "variant" in table.columns  # inside, the role
    out = results_to_frame(demo_results()[:1], table)
    assert own in out.columns and "variant" not in out.columns
    assert out[own].tolist() == ["gpt"]


def test_a_variant_column_stays_variant_and_a_second_candidate_stays_itself():
    table = normalize_columns(
        pd.DataFrame({"question": ["q"], "answer": ["a"], "variant": ["A"], "model": ["m"]})
    )
    out = results_to_frame(demo_results()[:1], table)
    assert out[["variant", "model"]].values.tolist() == [["A", "m"]]


def test_the_cli_writes_the_model_column_as_model(tmp_path, toy_server):
    rows = [{"question": "What is x?", "answer": "X is y.", "model": "gpt-a"}]
    src = write_rows(tmp_path / "rows.csv", rows)
    out = tmp_path / "out.csv"
    argv = ["score", str(src), "-o", str(out), "-q", "--save-run", "models"]
    assert main([*argv, *cli_backends(toy_server)]) == 0
    header = pd.read_csv(out).columns.tolist()
    assert "model" in header and "variant" not in header
    store = RunStore(default_store_path())
    info = store.list_runs()[0]
    assert info.shown("variant") == "model"
    exported = pd.read_csv(io.BytesIO(store.export_bytes(info.id, "csv")))
    assert "model" in exported.columns and "variant" not in exported.columns


def _model_run() -> int:
    """The demo's rows with their variant column named ``model``, scored as the demo."""
    demo = pd.read_csv(ROOT / "relevancy" / "data" / "demo.csv").rename(
        columns={"variant": "model"}
    )
    store = RunStore(default_store_path())
    run = store.create_run("models", {"backend": "embedded"}, normalize_columns(demo))
    store.append_results(run, list(enumerate(demo_results())))
    return run


@pytest.mark.slow
def test_the_pages_name_the_column_as_the_table_does():
    at = app()
    run = _model_run()
    at.session_state["active_run"] = run
    visit(at, "1_Dataset.py")
    grid = next(d.value for d in at.dataframe if d.proto.id.endswith(f"-ds_table_{run}"))
    assert "model" in grid.columns and "variant" not in grid.columns
    assert at.multiselect(key="ds_variants").label == "model"
    visit(at, "3_Embeddings.py")
    assert at.segmented_control(key="emb_color").options == ["score", "model", "noncommittal"]
    visit(at, "2_Distributions.py")
    labels = at.segmented_control(key="dist_split").options
    assert labels[:3] == ["model", "main reason", "scoring models"]
    ok(at)
