"""The dashboard's Streamlit-free logic: charts, projection, compare, explain, store, report."""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest

from relevancy import RelevancyResult
from relevancy.analysis.compare import outcome, pair_runs, pair_variants, summarize_pairs
from relevancy.analysis.explain import (
    Analysis,
    PartCoverage,
    aanalyze,
    explain,
    explain_result,
    worked_mean,
)
from relevancy.analysis.projection import density, fit_pca, pca, project, stratified_sample
from relevancy.core.result import QuestionScore
from relevancy.core.text import split_question_parts, split_sentences
from relevancy.core.triage import SentenceScore
from relevancy.dashboard.views import (
    compare_vega,
    projection_chart,
    projection_vega,
    score_vega,
    sentence_table,
)
from relevancy.dashboard.views.datasets import read_upload, validate
from relevancy.dashboard.views.vega import MIDDLE_CUT, category_scale
from relevancy.errors import InputError
from relevancy.io import apply_mapping, guess_mapping
from relevancy.report import charts, compare_charts
from relevancy.report.html import build_report
from relevancy.runs import DEMO_RUN_NAME, RunStore, clean_settings, import_demo
from relevancy.testing.synthetic import write_synthetic_run

FAKE_KEY = "sk-test-DO-NOT-LEAK-1234567890abcdef"


def _result(
    question: str = "When was the first super bowl?",
    response: str = "The first superbowl was held on Jan 15, 1967.",
    sims: tuple[float, ...] = (0.9, 0.8, 0.7),
    *,
    value: float | None = None,
    noncommittal: bool = False,
    answer_similarity: float | None = 0.8,
    dim: int = 4,
    seed: int = 0,
) -> RelevancyResult:
    rng = np.random.default_rng(seed)
    qs = [QuestionScore(f"What is generated question {i}?", s, None) for i, s in enumerate(sims)]
    mean = float(np.mean(sims)) if sims else float("nan")
    return RelevancyResult(
        user_input=question,
        response=response,
        value=(0.0 if noncommittal else mean) if value is None else value,
        questions=qs,
        noncommittal=noncommittal,
        noncommittal_method="exemplars",
        noncommittal_detail="closest evasive exemplar 'I don't know.' at similarity 0.20",
        answer_similarity=answer_similarity,
        llm="local:test",
        embeddings="local:test-emb",
        strictness=len(sims),
        user_input_embedding=rng.normal(size=dim).tolist(),
        question_embeddings=[rng.normal(size=dim).tolist() for _ in sims],
    )


def _four_row_run(store, name: str, inputs: pd.DataFrame) -> int:
    """A run of the four ``inputs`` rows, scored 0.2, 0.6, 0.8 and 0.5 (one question each)."""
    run_id = store.create_run(name, {}, inputs)
    scores = zip(inputs["user_input"], inputs["response"], [0.2, 0.6, 0.8, 0.5])
    store.append_results(run_id, [(i, _result(u, r, (s,))) for i, (u, r, s) in enumerate(scores)])
    return run_id


# --- charts -----------------------------------------------------------------------------
@pytest.fixture
def scored_frame() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "user_input": ["q1", "q2", "q3", "q1", "q2", "q3"],
            "response": ["a"] * 6,
            "variant": ["A", "A", "A", "B", "B", "B"],
            "score": [0.2, 0.6, np.nan, 0.9, 0.7, 0.4],
        }
    )


def _vlines(fig: go.Figure) -> list[float]:
    return [s.x0 for s in fig.layout.shapes if s.type == "line" and s.x0 == s.x1]


def test_histogram_has_one_trace_per_group_and_threshold_line(scored_frame):
    fig = charts.score_histogram(scored_frame, threshold=0.55, by="variant")
    assert isinstance(fig, go.Figure)
    assert [t.type for t in fig.data] == ["histogram", "histogram"]
    assert [t.name for t in fig.data] == ["A", "B"]
    # the figure carries each non-empty bin's centre and rows (NaN dropped), not the rows
    assert fig.data[0].histfunc == "sum"
    assert list(fig.data[0].x) == pytest.approx([0.225, 0.625]) and list(fig.data[0].y) == [1, 1]
    assert 0.55 in _vlines(fig)
    single = charts.score_histogram(scored_frame, threshold=0.5)
    assert len(single.data) == 1 and len(single.data[0].x) == 5


def test_the_distributions_histogram_as_vega_lite_has_the_report_figures_bins(scored_frame):
    data, spec = score_vega.histogram_spec(scored_frame, threshold=0.55, by="variant")
    fig = charts.score_histogram(scored_frame, threshold=0.55, by="variant")
    for name, trace in zip(["A", "B"], fig.data):  # the same bins, the same rows
        part = data[data["group"] == name]
        assert list((part["start"] + part["end"]) / 2) == pytest.approx(list(trace.x))
        assert list(part["rows"]) == list(trace.y)
    bars = next(layer for layer in spec["layer"] if layer["mark"]["type"] == "bar")
    assert bars["encoding"]["y"]["stack"] is None and bars["encoding"]["y2"] == {"datum": 0}
    assert bars["encoding"]["color"]["legend"]["labelExpr"] == MIDDLE_CUT
    rule = next(layer for layer in spec["layer"] if layer["mark"].get("strokeDash"))
    assert rule["data"]["values"][0]["start"] == 0.55 and rule["mark"]["tooltip"] is False
    # one group: no legend; no threshold, no line; a score below 0 widens the axis to it
    low = scored_frame.assign(score=scored_frame["score"].where(scored_frame.index > 0, -0.3))
    data, spec = score_vega.histogram_spec(low, threshold=None)
    (bars,) = spec["layer"]
    assert bars["encoding"]["color"]["legend"] is None and set(data["group"]) == {"all rows"}
    assert bars["encoding"]["x"]["scale"]["domain"][0] == pytest.approx(-0.32)
    assert data["start"].min() == pytest.approx(-0.3)
    # many groups: every one in the legend's columns, twenty colours before any repeats
    many = pd.concat([scored_frame] * 2, ignore_index=True)
    many["team"] = [f"team {i}" for i in range(len(many))]
    data, spec = score_vega.histogram_spec(many, by="team")
    colour = next(layer for layer in spec["layer"] if layer["mark"]["type"] == "bar")["encoding"][
        "color"
    ]
    assert len(colour["scale"]["domain"]) == len(many) > len(charts.PALETTE)
    assert colour["scale"]["scheme"] == "tableau20" and colour["legend"]["columns"] == 3
    assert category_scale(["a", "b"]) == {"domain": ["a", "b"], "range": charts.PALETTE[:2]}
    # no score at all: no bars, the axes still drawn
    empty, _ = score_vega.histogram_spec(scored_frame.assign(score=np.nan))
    assert empty.empty


@pytest.mark.parametrize("kind,trace", [("box", "box"), ("violin", "violin")])
def test_box_and_violin(scored_frame, kind, trace):
    fig = charts.score_box(scored_frame, threshold=0.5, by="variant", kind=kind)
    assert [t.type for t in fig.data] == [trace, trace]
    assert any(s.y0 == 0.5 == s.y1 for s in fig.layout.shapes)  # horizontal threshold


def test_ecdf_steps_to_one(scored_frame):
    fig = charts.score_ecdf(scored_frame, threshold=0.5, by="variant")
    assert [t.type for t in fig.data] == ["scatter", "scatter"]
    b = fig.data[1]
    assert list(b.x) == [0.4, 0.4, 0.7, 0.9]
    assert list(b.y) == pytest.approx([0.0, 1 / 3, 2 / 3, 1.0])
    assert 0.5 in _vlines(fig)


def test_question_bars_one_bar_per_question_and_escaped_text():
    r = _result(sims=(0.9, 0.5))
    r.questions.append(QuestionScore("", None, None, "hit the token cap"))
    r.questions[0] = QuestionScore("<script>alert(1)</script>?", 0.9, None)
    fig = charts.question_bars(r)
    bar = fig.data[0]
    assert bar.type == "bar" and list(bar.x) == [0.9, 0.5, 0.0]
    assert list(fig.layout.yaxis.ticktext) == ["Q1", "Q2", "Q3"]
    texts = [a.text for a in fig.layout.annotations]
    assert any("&lt;script&gt;" in t for t in texts)
    assert not any("<script>" in t for t in texts)
    assert any("unusable" in t for t in texts)
    assert any(abs(s.x0 - 0.7) < 1e-9 for s in fig.layout.shapes)  # mean line


def _points(store, results, variants, rows=None):
    """A run of ``results`` in ``store``, and its Embeddings-page points."""
    inputs = pd.DataFrame(
        {
            "user_input": [r.user_input for r in results],
            "response": [r.response for r in results],
            "variant": variants,
        }
    )
    run_id = store.create_run("points", {}, inputs)
    store.append_results(run_id, enumerate(results))
    return store.points(run_id, rows)


def test_projection_scatter_lines_and_colouring(store):
    results = [_result(sims=(0.9, 0.8), seed=1), _result("other?", sims=(0.3,), seed=2)]
    points, matrix = _points(store, results, ["A", "B"])
    coords = project(matrix, "pca", 2)
    fig = projection_chart.projection_scatter(points, coords, color_by="score")
    names = [t.name for t in fig.data]
    assert names == ["generated questions", "original questions"]
    # in SVG the links are one path beneath the points (a trace draws an element per link)
    (links,) = fig.layout.shapes
    assert links.name == "links" and links.layer == "between" and links.xref == "x"
    assert links.path.count("M") == links.path.count("L") == 3  # one per generated question
    for move in links.path.split("M")[1:]:  # each from an original to one of its questions
        start, end = (tuple(map(float, p.split(","))) for p in move.split("L"))
        assert any(np.allclose(start, c, atol=1e-4) for c in coords[points["kind"] == "question"])
        assert any(np.allclose(end, c, atol=1e-4) for c in coords[points["kind"] != "question"])
    # the hover's numbers come from customdata: row, point, row 1-based, similarity, score
    gen = fig.data[0]
    assert gen.customdata.shape == (3, 5) and list(gen.customdata[:, 2]) == [1, 1, 2]
    assert sorted(np.round(gen.customdata[:, 3], 2)) == [0.3, 0.8, 0.9]
    assert "%{customdata[3]:.3f}" in gen.hovertemplate and "(row %{customdata[2]})" in (
        gen.hovertemplate
    )
    assert len(fig.data[0].x) == 3 and len(fig.data[1].x) == 2
    by_variant = projection_chart.projection_scatter(points, coords, color_by="variant")
    assert [t.name for t in by_variant.data][:2] == ["A", "B"]
    # 3-D and WebGL draw the links as a trace (NaN between links, float32 numbers)
    fig3 = projection_chart.projection_scatter(points, project(matrix, "pca", 3), dims=3)
    assert all(t.type == "scatter3d" for t in fig3.data) and not fig3.layout.shapes
    links3 = fig3.data[0]
    assert links3.name == "links" and int(np.isnan(links3.x).sum()) == 3
    assert links3.x.dtype == np.float32  # numbers, not JSON lists


def test_the_2d_map_as_vega_lite_links_colours_and_selections(store):
    results = [_result(sims=(0.9, 0.8), seed=1), _result("other?", sims=(0.3,), seed=2)]
    points, matrix = _points(store, results, ["A", "B"])
    coords = project(matrix, "pca", 2)
    data, spec = projection_vega.map_spec(points, coords, color_by="score")
    assert len(data) == len(points) == 5
    gen = data[data["kind"] == "generated"]
    orig = data[data["kind"] == "question"].set_index("row")
    # each link runs from a generated question to its own row's original question
    assert np.allclose(gen[["px", "py"]].to_numpy(), orig.loc[gen["row"], ["x", "y"]].to_numpy())
    assert list(gen["row_no"]) == [1, 1, 2]
    assert np.allclose(sorted(gen["similarity"]), [0.3, 0.8, 0.9], atol=1e-6)
    links, dots, diamonds = spec["layer"]
    assert links["mark"]["tooltip"] is False  # a layer without a tooltip says so in its mark
    assert dots["encoding"]["color"]["scale"]["domain"] == [0.0, 0.25, 0.5, 0.75, 1.0]
    assert diamonds["mark"]["shape"] == "diamond" and spec["config"] == {"aria": False}
    by_flag = projection_vega.map_spec(points, coords, color_by="noncommittal")[1]
    flag = by_flag["layer"][1]["encoding"]["color"]
    assert flag["field"] == "noncommittal" and flag["scale"]["domain"] == ["no"]
    assert flag["scale"]["range"] == ["#0ea5e9"]  # the plotly map's colour for "no"
    # a point the projection could not place is left out; a long question is cut
    odd = coords.copy()
    odd[0] = np.nan
    long = points.assign(text=["q" * 500] + list(points["text"][1:]))
    cut, _ = projection_vega.map_spec(long, odd)
    assert len(cut) == 4 and cut["text"].str.len().max() <= 300
    # a click is its row; a box, every row with a point inside it (either corner first)
    pick = projection_vega.selected_rows({"pick": [{"row": 1}], "box": {}}, data)
    assert pick == [1]
    assert projection_vega.selected_rows({"pick": [{"row": 0}]}, data) == [0]  # the first row
    assert projection_vega.selected_rows({"pick": [{"row": -1}, {"row": None}]}, data) == []
    everything = {"x": [data["x"].max(), data["x"].min()], "y": [data["y"].min(), data["y"].max()]}
    assert projection_vega.selected_rows({"box": everything}, data) == [0, 1]
    assert (
        projection_vega.selected_rows(
            {"pick": [{}], "box": {"x": [9e9, 9e9 + 1], "y": [0, 1]}}, data
        )
        == []
    )
    assert projection_vega.selected_rows(None, data) == []


def test_the_link_path_skips_points_without_a_place_and_may_be_empty():
    x = np.array([0, 1, np.nan, np.nan, 2, np.nan, 3, 4, np.nan], dtype=np.float32)
    y = np.array([0, 1, np.nan, 5, 6, np.nan, 7, np.inf, np.nan], dtype=np.float32)
    assert projection_chart._link_path(x, y) == "M0,0L1,1"  # NaN and inf ends: no link
    assert projection_chart._link_path(x[:0], y[:0]) == ""  # no shape drawn for no links


def test_ab_scatter_and_the_compare_pages_vega_charts():
    paired = pd.DataFrame(
        {
            "user_input": ["q1", "q2", "q3"],
            "score_a": [0.2, 0.5, 0.9],
            "score_b": [0.8, 0.51, 0.4],
        }
    )
    paired["diff"] = paired["score_b"] - paired["score_a"]
    paired["outcome"] = [outcome(d) for d in paired["diff"]]
    fig = compare_charts.ab_scatter(paired, label_a="old", label_b="new")  # the report's
    points = {t.name: list(t.x) for t in fig.data if t.mode == "markers"}
    assert points == {"new better": [0.2], "tie": [0.5], "old better": [0.9]}
    # the dashboard's: the same dots and colours, as Vega-Lite; the names on the axes only
    data, spec = compare_vega.scatter_spec(paired, label_a="old", label_b="new")
    by = data.groupby("outcome")["a"].apply(lambda a: [round(float(v), 3) for v in a]).to_dict()
    assert by == {"B better": [0.2], "tie": [0.5], "A better": [0.9]}
    dots = spec["layer"][-1]["encoding"]
    assert dots["color"]["scale"]["domain"] == ["B better", "tie", "A better"]
    colours = [compare_charts.OUTCOME_COLORS[k] for k in ("win", "tie", "loss")]
    assert dots["color"]["scale"]["range"] == colours
    assert (dots["x"]["title"], dots["y"]["title"]) == ("A: old", "B: new")
    # a long name is cut to the plot's width (not the plot squeezed), its middle left out
    assert dots["x"]["axis"]["titleLimit"] == {"expr": "width"}
    long_a, long_b = "x" * 250 + "-alpha", "x" * 250 + "-beta"
    _, wide = compare_vega.scatter_spec(paired, label_a=long_a, label_b=long_b)
    titles = [wide["layer"][-1]["encoding"][k]["title"] for k in ("x", "y")]
    assert titles[0].endswith("-alpha") and titles[1].endswith("-beta") and "…" in titles[0]
    assert len(titles[0]) < 60
    assert [t["title"] for t in dots["tooltip"]] == ["question", "A", "B", "B − A"]
    # no layer but the dots has a tooltip, and no mark an ARIA description: Vega-Lite builds
    # both from the titles as expressions, and a backslash in a name broke the whole chart
    assert [x["mark"].get("tooltip") for x in spec["layer"]] == [False] * 3 + [None]
    assert spec["config"]["aria"] is False
    assert "title" not in spec  # every pair drawn: no sample to state
    # the differences in bins of 0.05, stacked here: each bin's bars sit on one another
    data, spec = compare_vega.histogram_spec(paired)
    assert data["pairs"].sum() == 3 and set(data["outcome"]) == {"regression", "tie", "improvement"}
    for _, bin_ in data.groupby("start"):
        assert (bin_["high"] - bin_["low"] == bin_["pairs"]).all()
        assert sorted(bin_["low"]) == [0, *np.cumsum(bin_["pairs"])[:-1]]
    band = spec["layer"][0]["data"]["values"][0]
    assert (band["start"], band["end"]) == (-0.02, 0.02)
    assert [x["mark"].get("tooltip") for x in spec["layer"]] == [False, None, False]


def test_the_compare_scatter_states_its_sample_of_pairs():
    n = compare_charts.SCATTER_PAIRS + 500
    rng = np.random.default_rng(3)
    paired = pd.DataFrame({"user_input": [f"q{i}" for i in range(n)], "score_a": rng.random(n)})
    paired["score_b"] = rng.random(n)
    paired["diff"] = paired["score_b"] - paired["score_a"]
    paired["outcome"] = [outcome(d) for d in paired["diff"]]
    data, spec = compare_vega.scatter_spec(paired)
    assert len(data) == compare_charts.SCATTER_PAIRS
    assert spec["title"]["text"] == f"{compare_charts.SCATTER_PAIRS:,} pairs drawn at random"
    data, _ = compare_vega.histogram_spec(paired)
    assert data["pairs"].sum() == n  # the histogram counts every pair


def test_score_colour_scale_and_shading_escapes():
    assert charts.score_color(0.0) == "#c0392b"
    assert charts.score_color(1.0) == "#1e8449"
    assert charts.score_color(float("nan")) == "#9ca3af"
    html = sentence_table.sentence_shading_html([SentenceScore("<b>x</b> & y", 0.4)])
    assert "&lt;b&gt;x&lt;/b&gt; &amp; y" in html and "<b>x" not in html


# --- projection -------------------------------------------------------------------------
def test_a_pca_fitted_on_a_sample_places_every_point_and_counts_them_all():
    rng = np.random.default_rng(3)
    everything = rng.normal(size=(5000, 24)) * np.linspace(3, 0.1, 24)
    sample = everything[rng.choice(5000, 400, replace=False)]
    fit = fit_pca(sample, 2)
    assert np.allclose(fit.transform(sample), pca(sample, 2))  # the drawn map, unchanged
    assert np.allclose(fit.transform(everything[:3]), (everything[:3] - sample.mean(0)) @ fit.axes)
    chunks = [everything[i : i + 700] for i in range(0, 5000, 700)]
    shaded = density(fit, chunks, pca(sample, 2), bins=50)
    whole = density(fit, [everything], pca(sample, 2), bins=50)
    assert shaded.total == 5000 and np.array_equal(shaded.counts, whole.counts)
    assert shaded.outside == whole.outside < 50  # the sample's frame, widened by a quarter
    # the counts are where the points are: the densest bin holds the projected mean
    y, x = np.unravel_index(shaded.counts.argmax(), shaded.counts.shape)
    xs, ys = shaded.centres()
    centre = fit.transform(everything.mean(0, keepdims=True))[0]
    assert abs(xs[x] - centre[0]) < 4 * (xs[1] - xs[0]) and abs(ys[y] - centre[1]) < 4 * (
        ys[1] - ys[0]
    )
    # a point far off the sample's frame is counted outside, never dropped
    far = density(fit, [np.full((1, 24), 1e6)], pca(sample, 2), bins=50)
    assert (far.total, far.outside, int(far.counts.sum())) == (1, 1, 0)
    fig = projection_chart.projection_scatter(
        pd.DataFrame(columns=["kind", "row", "parent"]), np.zeros((0, 2)), density=shaded
    )
    assert fig.data[0].type == "heatmap"
    assert np.sum(fig.data[0].customdata) == 5000 - shaded.outside
    # the 2-D canvas map: the occupied bins, each with its count and its edges, as records
    # of the map's one frame (a named dataset left the other layers without data)
    data, spec = projection_vega.map_spec(
        pd.DataFrame(
            columns=["kind", "row", "parent", "text", "similarity", "score", "variant"]
            + ["noncommittal"]
        ),
        np.zeros((0, 2)),
        density=shaded,
    )
    bins = data[data["kind"] == "shade"]
    assert bins["points"].sum() == 5000 - shaded.outside and (bins["points"] > 0).all()
    assert (bins["x2"] > bins["x"]).all() and (bins["y2"] > bins["y"]).all()
    box = {"x": [-1e9, 1e9], "y": [-1e9, 1e9]}  # a box round every bin selects no row
    assert projection_vega.selected_rows({"box": box}, data) == []
    assert spec["layer"][0]["mark"]["type"] == "rect"


def test_vector_chunks_read_every_vector_of_a_run_a_chunk_at_a_time(tmp_path):
    store = RunStore(tmp_path / "runs.sqlite3")
    run_id = write_synthetic_run(store, 300)
    _, user, generated = store.vectors(run_id)
    expected = np.concatenate([np.vstack([u[None], g]) for u, g in zip(user, generated)])
    chunks = list(store.vector_chunks(run_id, chunk_rows=64))
    assert len(chunks) == 5 and all(len(c) <= 64 * 4 for c in chunks)
    assert sum(len(c) for c in chunks) == len(expected)
    # the same vectors, each chunk's rows' questions first, then their generated questions
    got = np.concatenate(chunks)
    assert np.array_equal(np.sort(got.sum(1)), np.sort(expected.sum(1)))
    assert list(store.vector_chunks(run_id + 99)) == []


def test_pca_shapes_and_determinism():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(30, 16))
    a, b = pca(x, 2), pca(x.copy(), 2)
    assert a.shape == (30, 2) and np.allclose(a, b)
    assert project(x, "pca", 3).shape == (30, 3)
    # the first component carries the most variance
    assert a[:, 0].var() >= a[:, 1].var()
    assert project(x[:1], "pca", 2).shape == (1, 2)
    assert project(np.zeros((0, 16)), "pca", 2).shape == (0, 2)
    assert project(x[:3], "tsne", 2).shape == (3, 2)  # too few points: falls back to PCA


def test_tsne_runs_lazily():
    x = np.random.default_rng(1).normal(size=(20, 8))
    assert project(x, "tsne", 2).shape == (20, 2)


@pytest.mark.slow
def test_umap_runs_lazily(monkeypatch):
    """UMAP (numba-compiled: ~20 s the first time, a few seconds once its cache is warm)."""
    import os
    from pathlib import Path

    monkeypatch.setenv(
        "NUMBA_CACHE_DIR",
        os.environ.get("NUMBA_CACHE_DIR") or str(Path.home() / ".cache/relevancy/numba"),
    )
    x = np.random.default_rng(2).normal(size=(40, 16))
    coords = project(x, "umap", 2)
    assert coords.shape == (40, 2) and np.isfinite(coords).all()


def test_project_rejects_bad_input():
    with pytest.raises(InputError):
        project(np.ones((3, 4)), "mds", 2)
    with pytest.raises(InputError):
        project(np.ones((3, 4)), "pca", 4)
    with pytest.raises(InputError):
        project(np.array([[np.nan, 1.0]]), "pca", 2)


def test_points_dedupe_originals_and_skip_nan_rows(store):
    same = _result(sims=(0.9, 0.8), seed=1)
    same2 = _result(sims=(0.4,), seed=3)  # same user_input, another variant
    failed = _result("broken?", sims=(), value=float("nan"))
    failed.user_input_embedding = None
    points, matrix = _points(store, [same, same2, failed], ["A", "B", "A"])
    assert (points["kind"] == "question").sum() == 1
    assert (points["kind"] == "generated").sum() == 3
    assert set(points.loc[points["kind"] == "generated", "parent"]) == {0}
    assert matrix.shape == (4, 4) and matrix.dtype == np.float32
    assert np.allclose(matrix[0], same.user_input_embedding, atol=1e-6)
    assert np.allclose(matrix[1], same.question_embeddings[0], atol=1e-6)
    assert set(points["row"]) == {0, 1}
    assert projection_chart.row_questions(points) == {0: same.user_input, 1: same.user_input}
    only, _ = store.points(store.list_runs()[0].id, [1])  # some rows only: its own original
    assert list(only["kind"]) == ["question", "generated"] and set(only["row"]) == {1}


def test_stratified_sample_keeps_each_groups_share():
    groups = ["A|high"] * 600 + ["A|low"] * 300 + ["B|high"] * 95 + ["B|low"] * 5
    picked = stratified_sample(groups, 100, seed=1)
    counts = pd.Series([groups[i] for i in picked]).value_counts().to_dict()
    # exactly 100: B|low's one row (its share is 0.5) comes out of B|high's 9.5
    assert counts == {"A|high": 60, "A|low": 30, "B|high": 9, "B|low": 1}
    assert list(picked) == sorted(picked) and len(set(picked)) == len(picked)
    assert stratified_sample(groups[:50], 100).tolist() == list(range(50))


def test_umap_is_fitted_on_a_sample_and_tsne_refuses_too_many_points(monkeypatch):
    x = np.random.default_rng(0).normal(size=(40, 8))
    with pytest.raises(InputError, match="t-SNE of 40 points"):
        project(x, "tsne", 2, fit_at_most=30)
    fitted: list[int] = []

    class FakeUMAP:  # the real one takes ~20 s to compile; what matters is what it is fed
        def __init__(self, **kwargs):
            pass

        def fit(self, data):
            fitted.append(len(data))
            return self

        def transform(self, data):
            return np.zeros((len(data), 2))

    import types

    monkeypatch.setitem(sys.modules, "umap", types.SimpleNamespace(UMAP=FakeUMAP))
    assert project(x, "umap", 2, fit_at_most=30).shape == (40, 2) and fitted == [30]


def test_import_projection_does_not_import_umap_or_streamlit():
    code = (
        "import sys, relevancy.analysis.projection, relevancy.runs.store, "
        "relevancy.analysis.compare, relevancy.analysis.explain, relevancy.analysis.summary, "
        "relevancy.report.html, relevancy.report.charts, "
        "relevancy.dashboard.views.datasets, relevancy.dashboard.views.format, "
        "relevancy.dashboard.views.compare_table, relevancy.dashboard.views.examples;"
        "print(sorted(m for m in ('umap', 'streamlit', 'sklearn') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# --- compare ----------------------------------------------------------------------------
@pytest.fixture
def ab_table() -> pd.DataFrame:
    # q1: B better by .3; q2: tie; q3: B worse by .5; q4 only in A; q5 NaN on B
    return pd.DataFrame(
        {
            "row": range(9),
            "user_input": ["q1", "q2", "q3", "q4", "q5", "q1", "q2", "q3", "q5"],
            "response": list("abcdefghi"),
            "variant": ["A"] * 5 + ["B"] * 4,
            "score": [0.5, 0.6, 0.9, 0.3, 0.4, 0.8, 0.61, 0.4, np.nan],
        }
    )


def test_pair_variants_math(ab_table):
    paired = pair_variants(ab_table, "A", "B", tie_margin=0.02)
    assert list(paired["user_input"]) == ["q1", "q2", "q3", "q5"]
    assert paired["diff"].tolist()[:3] == pytest.approx([0.3, 0.01, -0.5])
    assert list(paired["outcome"]) == ["win", "tie", "loss", "n/a"]
    assert list(paired["row_a"]) == [0, 1, 2, 4] and list(paired["row_b"]) == [5, 6, 7, 8]
    s = summarize_pairs(paired, tie_margin=0.02)
    assert (s["pairs"], s["compared"], s["nan_pairs"]) == (4, 3, 1)
    assert (s["wins"], s["ties"], s["losses"]) == (1, 1, 1)
    assert s["mean_diff"] == pytest.approx((0.3 + 0.01 - 0.5) / 3)
    assert s["mean_a"] == pytest.approx((0.5 + 0.6 + 0.9) / 3)
    assert s["ci_low"] <= s["mean_diff"] <= s["ci_high"]


def test_pair_uses_id_and_occurrence(ab_table):
    t = ab_table.copy()
    t["id"] = ["x1", "x2", "x3", "x4", "x5", "x1", "OTHER", "x3", "x5"]
    paired = pair_variants(t, "A", "B")
    assert list(paired["user_input"]) == ["q1", "q3", "q5"]  # q2 ids differ
    dup = pd.DataFrame(
        {
            "row": range(4),
            "user_input": ["q", "q", "q", "q"],
            "response": list("abcd"),
            "variant": ["A", "A", "B", "B"],
            "score": [0.1, 0.2, 0.3, 0.5],
        }
    )
    assert pair_variants(dup, "A", "B")["diff"].tolist() == pytest.approx([0.2, 0.3])


def test_pair_runs_and_wide_margin(ab_table):
    a = ab_table[ab_table["variant"] == "A"]
    b = ab_table[ab_table["variant"] == "B"].assign(variant="A")
    paired = pair_runs(a, b, variant="A", tie_margin=0.6)
    assert set(paired["outcome"]) == {"tie", "n/a"}
    with pytest.raises(InputError):
        pair_variants(ab_table.drop(columns=["variant"]), "A", "B")


# --- explain ----------------------------------------------------------------------------
def test_split_helpers():
    assert split_question_parts("Where is France and what is its capital?") == [
        "Where is France",
        "what is its capital",
    ]
    assert split_question_parts("What is bread and butter?") == ["What is bread and butter"]
    assert split_question_parts("Quel est le plus long fleuve et où se jette-t-il ?") == [
        "Quel est le plus long fleuve",
        "où se jette-t-il",
    ]
    assert split_sentences("One. Two is here!\nThree?  ") == ["One.", "Two is here!", "Three?"]


def test_explain_reasons_follow_the_main_reason():
    from relevancy.core.triage import triage

    def codes(r, **kw):
        return [x.code for x in explain(r, **kw)]

    ok = _result(sims=(0.9, 0.85, 0.8))
    assert codes(ok) == [] and triage(ok).reason == "ok"
    evasive = _result(sims=(0.2, 0.1, 0.3), noncommittal=True, answer_similarity=0.1)
    # the noncommittal verdict says it all: no "off topic" box beside it
    assert codes(evasive) == ["noncommittal"] and triage(evasive).reason == "noncommittal"
    assert "off_topic" in triage(evasive).flags
    off = _result(sims=(0.3, 0.2, 0.1), answer_similarity=0.2)
    assert codes(off) == ["off_topic"] and triage(off).reason == "off_topic"
    assert "spread" in codes(_result(sims=(0.9, 0.2, 0.85)))
    suspect = _result(sims=(0.3, 0.2, 0.1), answer_similarity=0.75)
    assert codes(suspect) == ["generator_suspect"]  # not "off topic" as well
    nan = _result(sims=(), value=float("nan"))
    nan.error = "all 3 generations failed"
    assert codes(nan) == ["error"] and triage(nan).reason == "error"
    analysis = Analysis(
        sentences=[
            SentenceScore("France is in western Europe.", 0.8),
            SentenceScore("My cat sleeps on warm windowsills.", 0.1),
        ],
        parts=[PartCoverage("Where is France", 0.82, 0.8), PartCoverage("its capital", 0.08, 0.2)],
    )
    with_analysis = codes(_result(sims=(0.7, 0.75)), analysis=analysis)
    assert with_analysis[:2] == ["partial", "padded"]
    assert worked_mean(_result(sims=(0.5, 0.7))) == "(0.500 + 0.700) / 2 = 0.600"
    assert worked_mean(_result(sims=(0.5,), noncommittal=True)) == (
        "0 (noncommittal); without that rule (0.500) / 1 = 0.500"
    )


def test_triage_flags_generated_questions_that_are_not_questions_or_repeat():
    from relevancy.core.triage import question_hygiene, triage

    r = _result(sims=(0.4, 0.45, 0.3))
    r.questions[0].question = "Istanbul's Istanbul, Turkey, is the largest city of Turkey, the?"
    r.questions[1].question = "Don't worry, I'm here to help?"
    assert question_hygiene([q.question for q in r.questions]) == (0, 2)
    t = triage(r)
    assert t.reason == "generator_suspect" and "non_questions" in t.flags
    same = _result(sims=(0.9, 0.9, 0.9))
    for q in same.questions:
        q.question = "What is the capital of Japan?"
    t = triage(same)
    assert t.reason == "ok" and t.flags == ("duplicate_questions",)
    assert "duplicate_questions" in codes_of(same)


def test_triage_puts_a_partial_answer_before_a_padded_one():
    from relevancy.core.triage import REASONS, triage

    both = _result(sims=(0.8, 0.75, 0.7))
    both.parts = [
        {"text": "France is in Europe.", "similarity": 0.8},
        {"text": "Filler words here.", "similarity": 0.05},
    ]
    both.question_parts = [
        {"part": "Where is France", "coverage": 0.8},
        {"part": "its capital", "coverage": 0.1},
    ]
    t = triage(both)
    assert {"partial", "padded"} <= set(t.flags)
    assert t.reason == "partial"  # a missing part says more than filler
    assert list(REASONS).index("partial") < list(REASONS).index("padded")
    padded_only = _result(sims=(0.8, 0.75, 0.7))
    padded_only.parts = both.parts
    assert triage(padded_only).reason == "padded"


@pytest.mark.parametrize(
    ("usable", "non_questions", "suspect"),
    [
        (4, 1, False),
        (4, 2, True),
        (4, 3, True),
        (3, 1, False),
        (3, 2, True),
        (2, 1, True),
        (1, 0, False),
        (1, 1, True),
        (6, 2, False),
        (6, 3, True),
    ],
)
def test_generator_suspect_from_half_the_questions_not_being_questions(
    usable, non_questions, suspect
):
    from relevancy.core.text import looks_like_question
    from relevancy.core.triage import triage

    r = _result(sims=(0.8,) * usable, answer_similarity=0.1)  # nothing else makes it suspect
    for q in r.questions[:non_questions]:
        q.question = "Don't worry, I'm here to help?"
    counted = sum(not looks_like_question(q.question) for q in r.questions)
    assert counted == non_questions
    t = triage(r)
    assert ("generator_suspect" in t.flags) is suspect
    assert ("non_questions" in t.flags) is (non_questions > 0)
    assert t.reason == ("generator_suspect" if suspect else "ok")


def codes_of(r):
    return [x.code for x in explain(r)]


def test_aanalyze_with_a_fake_embedder():
    from relevancy.backends import EmbedderBase

    class Fake(EmbedderBase):
        name = "fake"

        async def aembed(self, texts):
            # texts mentioning France point one way, the rest another
            return np.array(
                [[1.0, 0.0] if "France" in t or "Europe" in t else [0.0, 1.0] for t in texts],
                dtype=np.float32,
            )

    import asyncio

    r = _result("Where is France?", "France is in Europe. Cats purr.")
    a = asyncio.run(aanalyze(r, Fake()))
    assert [s.text for s in a.sentences] == ["France is in Europe.", "Cats purr."]
    assert [round(s.similarity, 3) for s in a.sentences] == [1.0, 0.0]
    assert a.parts == []


# --- store ------------------------------------------------------------------------------
@pytest.fixture
def store(tmp_path) -> RunStore:
    return RunStore(tmp_path / "runs.sqlite3")


def test_store_round_trip_incremental_rename_delete_export(store, tmp_path):
    inputs = pd.DataFrame(
        {
            "user_input": ["q1", "q2", "q3"],
            "response": ["=1+1", "b", "c"],
            "variant": ["A", "B", "A"],
            "extra": [1, None, 3.5],
        }
    )
    settings = {
        "backend": "openai",
        "llm": "openai:gpt-4o-mini",
        "api_key": FAKE_KEY,
        "base_url": "https://user:pw@example.com/v1",
        "nested": {"token": FAKE_KEY, "note": f"key {FAKE_KEY}"},
    }
    run_id = store.create_run("first", settings, inputs, source="up.csv")
    assert store.pending_rows(run_id) == [0, 1, 2]
    info = store.get_run(run_id)
    assert (info.n_rows, info.n_scored, info.status) == (3, 0, "empty")
    # rows arrive one by one, out of order (as a concurrent batch finishes them)
    store.append_results(run_id, [(2, _result("q3", "c", (0.3,)))])
    assert store.pending_rows(run_id) == [0, 1]
    assert store.get_run(run_id).status == "partial"
    store.append_results(run_id, [(0, _result("q1", "=1+1", (0.9, 0.7)))])
    data = store.load_run(run_id)
    assert list(data.frame["row"]) == [0, 2]
    assert data.frame["score"].tolist() == pytest.approx([0.8, 0.3])
    assert data.results[0].question_embeddings is not None
    assert data.inputs.shape == (3, 4)
    store.append_results(run_id, [(1, _result("q2", "b", (0.5,)))])
    assert store.get_run(run_id).complete
    assert store.get_run(run_id).mean == pytest.approx((0.8 + 0.5 + 0.3) / 3)

    store.rename(run_id, "renamed")
    assert store.get_run(run_id).name == "renamed"
    with pytest.raises(InputError):
        store.rename(run_id, "  ")

    for fmt in ("csv", "json", "parquet"):
        out = store.export(run_id, tmp_path / f"out.{fmt}")
        assert out.stat().st_size > 0
    csv = (tmp_path / "out.csv").read_text()
    assert "'=1+1" in csv  # formula defused
    assert pd.read_parquet(tmp_path / "out.parquet").shape[0] == 3
    assert len(json.loads((tmp_path / "out.json").read_text())) == 3
    assert store.export_bytes(run_id, "jsonl").count(b"\n") == 3
    with pytest.raises(InputError, match="cannot export as 'html'"):
        store.export_bytes(run_id, "html")  # the dashboard builds the report

    # the key is nowhere: not in the database file, not in any export
    blobs = [store.path.read_bytes()] + [p.read_bytes() for p in tmp_path.iterdir() if p.is_file()]
    wal = store.path.with_name(store.path.name + "-wal")
    if wal.exists():
        blobs.append(wal.read_bytes())
    assert not any(FAKE_KEY.encode() in b for b in blobs)
    saved = store.get_run(run_id).settings
    assert "api_key" not in saved and "token" not in saved["nested"]
    assert saved["base_url"] == "https://example.com/v1"
    assert FAKE_KEY not in json.dumps(saved)

    store.delete(run_id)
    assert store.list_runs() == []
    with sqlite3.connect(store.path) as db:
        for table in ("inputs", "results", "questions"):
            assert db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0] == 0
    with pytest.raises(InputError):
        store.load_run(run_id)


def test_clean_settings_keeps_plain_values():
    out = clean_settings({"strictness": 3, "flag": True, "none": None, "password": "x"})
    assert out == {"strictness": 3, "flag": True, "none": None}


def test_demo_import_once(store):
    run_id = import_demo(store)
    assert import_demo(store) is None
    data = store.load_run(run_id)
    assert data.info.name == DEMO_RUN_NAME
    assert data.info.n_rows == data.info.n_scored == 48
    assert set(data.frame["variant"]) == {"prompt-A", "prompt-B"}
    assert all(r.user_input_embedding is not None for r in data.results)
    assert import_demo(store, force=True) != run_id


def test_store_location_from_env(tmp_path, monkeypatch):
    from relevancy.paths import default_store_path

    monkeypatch.setenv("RELEVANCY_STORE", str(tmp_path / "somewhere"))
    assert default_store_path() == tmp_path / "somewhere" / "runs.sqlite3"
    monkeypatch.setenv("RELEVANCY_STORE", str(tmp_path / "x.db"))
    assert RunStore().path == tmp_path / "x.db"


# --- report -----------------------------------------------------------------------------
def test_report_is_self_contained_and_escaped(store):
    evil = "<script>alert('x')</script>"
    inputs = pd.DataFrame(
        {
            "user_input": [f"q1 {evil}", "q2", "q1 " + evil, "q2"],
            "response": [evil, "b", "c", "d"],
            "variant": ["A", "A", "B", "B"],
        }
    )
    run_id = _four_row_run(store, f"run {evil}", inputs)
    from relevancy.report.html import build_report

    html = build_report(store, run_id, threshold=0.5)
    assert evil not in html
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in html
    # plotly's JS is inlined once; nothing is fetched from the network
    assert html.count("* plotly.js v") == 1
    assert "<script src" not in html and "<link" not in html and 'src="http' not in html
    assert html.count('class="plotly-graph-div"') == 4  # hist, box, ecdf, A vs B
    assert "Lowest 4 rows" in html


# --- dataset upload helpers -------------------------------------------------------------
def test_read_upload_formats_and_mapping(tmp_path):
    csv = b"Question,Answer,model\nq1,a1,m1\nq2,,m2\n"
    frame = read_upload("x.csv", csv)  # read once, under the file's own column names
    assert list(frame.columns) == ["Question", "Answer", "model"]
    mapping = guess_mapping(list(frame.columns))
    assert mapping == {
        "user_input": "Question",
        "response": "Answer",
        "variant": "model",
        "id": None,
        "label": None,
    }
    mapped = apply_mapping(frame, mapping)
    assert list(mapped.columns) == ["user_input", "response", "variant"]
    issues = validate(frame, mapping)
    assert [i.level for i in issues][:1] == ["warning"]  # one empty answer
    assert not any(i.level == "error" for i in issues)
    assert any(i.level == "error" for i in validate(frame, {**mapping, "response": None}))
    assert any(i.level == "error" for i in validate(frame, {**mapping, "response": "nope"}))
    assert any(i.level == "error" for i in validate(frame, {**mapping, "response": "Question"}))
    js = json.dumps([{"question": "q", "answer": "a"}]).encode()
    assert read_upload("x.json", js).shape == (1, 2)
    assert read_upload("x.jsonl", b'{"question": "q", "answer": "a"}\n').shape == (1, 2)
    pq = tmp_path / "x.parquet"
    pd.DataFrame({"user_input": ["q"], "response": ["a"]}).to_parquet(pq)
    assert read_upload("x.parquet", pq.read_bytes()).shape == (1, 2)
    with pytest.raises(InputError, match="unsupported"):
        read_upload("x.xlsx", b"abc")
    with pytest.raises(InputError, match="UTF-8"):
        read_upload("x.csv", "q,a\né,è\n".encode("latin-1"))
    with pytest.raises(InputError):
        read_upload("x.json", b'"just a string"')
    # no recognisable question/answer column: read as-is, for mapping by hand
    raw = read_upload("x.csv", b"Prompt text,Bot reply\nq,a\n")
    assert list(raw.columns) == ["Prompt text", "Bot reply"]
    assert guess_mapping(list(raw.columns))["user_input"] is None
    mapped = apply_mapping(raw, {"user_input": "Prompt text", "response": "Bot reply"})
    assert list(mapped.columns) == ["user_input", "response"]


# --- scoring modes ----------------------------------------------------------------------
def _focus_result(
    sentence_sims: tuple[float, ...] = (0.8, 0.1, 0.7),
    ragas: float = 0.75,
    *,
    question: str = "Where is France?",
    noncommittal: bool = False,
) -> RelevancyResult:
    """A focus-mode result whose value is the focus formula on ``sentence_sims``."""
    from relevancy.core.modes import focus_parts, focus_score

    texts = [f"Sentence <{i}> here." for i in range(len(sentence_sims))]
    r = _result(question, " ".join(texts), (ragas,), noncommittal=noncommittal)
    r.mode = "focus"
    r.ragas_value = 0.0 if noncommittal else ragas
    context = focus_parts(sentence_sims)
    r.parts = [
        {"text": t, "similarity": s, "context_similarity": float(c)}
        for t, s, c in zip(texts, sentence_sims, context)
    ]
    r.value = focus_score(sentence_sims, r.ragas_value, noncommittal=noncommittal)
    return r


def test_results_frame_has_mode_ragas_value_and_parts():
    from relevancy import results_to_frame

    focus, ragas = _focus_result(), _result()
    frame = results_to_frame([focus, ragas])
    assert list(frame.columns[2:7]) == ["score", "reason", "flags", "mode", "ragas_value"]
    assert list(frame["mode"]) == ["focus", "ragas"]
    assert frame["ragas_value"].tolist() == pytest.approx([0.75, ragas.value])
    assert frame["score"][0] == pytest.approx(focus.value) and focus.value != 0.75
    assert json.loads(frame["parts"][0])[1]["similarity"] == 0.1
    assert frame["parts"][1] == ""


def test_focus_worked_formula_and_sentence_effects():
    def effects(r):
        return [row.without_it for row in explain_result(r).sentences]

    r = _focus_result((0.8, 0.1, 0.7), 0.75)
    e = explain_result(r)
    assert e.sentence_source == "score"
    assert [s.similarity for s in e.sentences] == [0.8, 0.1, 0.7]
    text = e.worked_focus
    assert text is not None and text.startswith("0.7 × (") and text.endswith(f"= {r.value:.3f}")
    assert "0.750 Ragas value" in text
    assert effects(r)[1] > 0.1  # the off-topic sentence pulls the score down
    assert effects(r)[0] < 0 and effects(r)[2] < 0
    # a score the parts do not reproduce (another formula): nothing is claimed
    r.value += 0.1
    assert explain_result(r).worked_focus is None and all(np.isnan(effects(r)))
    plain = explain_result(_result())
    assert plain.worked_focus is None and plain.sentences == [] and plain.sentence_source == ""
    silent = _focus_result(noncommittal=True)
    # the rule first, then what it replaced (not "... 0.000 Ragas value = 0.115 × 0")
    assert explain_result(silent).worked_focus.startswith("0 (noncommittal); without that rule")
    assert "0.750 questions' mean" in explain_result(silent).worked_focus
    assert all(np.isnan(effects(silent)))
    one = _focus_result((0.6,), 0.5)
    assert (
        explain_result(one).worked_focus
        == "0.7 × 0.600 (the sentence's similarity) + 0.3 × 0.500 Ragas value = 0.570"
    )
    assert np.isnan(effects(one)[0])


def test_sentence_table_marks_what_pulls_the_score_down():
    from relevancy.dashboard.widgets.drilldown import sentence_table

    r = _focus_result((0.8, 0.1, 0.7, 0.55), 0.75)
    r.parts[0]["origin"] = "first line"  # extra keys are shown generically
    table = sentence_table(explain_result(r))
    assert list(table.columns) == [
        "#",
        "similarity",
        "in context",
        "origin",
        "without it",
        "note",
        "sentence",
    ]
    assert table["sentence"][1] == "Sentence <1> here."
    assert table["note"][1] == "off topic, lowers the score" and table["note"][0] == ""
    assert table["without it"][1] > 0
    assert list(table["origin"]) == ["first line", "", "", ""]
    assert sentence_table(explain_result(_result())).empty


def test_the_sentence_view_explains_a_ragas_score_too():
    from relevancy.dashboard.widgets.drilldown import sentence_table

    r = _result("Where is France?", "France is in Europe. Cats purr.")
    analysis = Analysis(
        sentences=[SentenceScore("France is in Europe.", 0.8), SentenceScore("Cats purr.", 0.1)]
    )
    e = explain_result(r, analysis=analysis)
    assert e.sentence_source == "result" and e.worked_focus is None
    assert [s.note for s in e.sentences] == ["", "off topic"]
    table = sentence_table(e)
    assert list(table.columns) == ["#", "similarity", "note", "sentence"]  # no focus columns


def _blend_result(noncommittal: bool = False) -> RelevancyResult:
    """A blend-mode result of a two-part question whose value is the blend formula."""
    from relevancy.core.modes import blend_breakdown

    texts = ["It lies in Europe.", "Cats purr.", "Paris is the capital."]
    r = _result(
        "Where is France and what is its capital?",
        " ".join(texts),
        (0.7,),
        noncommittal=noncommittal,
    )
    r.mode, r.answer_similarity = "blend", 0.65
    r.ragas_value = 0.0 if noncommittal else 0.7
    sims, by_part = (0.2, 0.1, 0.6), (0.7, 0.1, 0.8)
    r.parts = [
        {"text": t, "similarity": s, "part_similarity": p} for t, s, p in zip(texts, sims, by_part)
    ]
    off = [False, True, False]  # the first is far from the question but answers a part
    r.value = blend_breakdown(0.65, off, r.ragas_value, noncommittal=noncommittal).value
    return r


def test_blend_worked_formula_and_its_off_question_sentences():
    from relevancy.dashboard.widgets.drilldown import sentence_table

    r = _blend_result()
    e = explain_result(r)
    assert e.sentence_source == "score" and e.worked_focus is None
    assert (
        e.worked_blend
        == e.worked_score
        == (
            "0.5 × (0.650 answer's similarity − 0.5 × 1/3 sentences answering nothing asked) "
            f"+ 0.5 × 0.700 Ragas value = {r.value:.3f}"
        )
    )
    assert [s.note for s in e.sentences] == ["", "off topic", ""]
    table = sentence_table(e)
    assert list(table.columns) == [
        "#",
        "similarity",
        "part similarity",
        "without it",
        "note",
        "sentence",
    ]
    r.value += 0.1  # numbers that do not give the score back: no arithmetic is claimed
    assert explain_result(r).worked_blend is None
    silent = explain_result(_blend_result(noncommittal=True)).worked_blend
    assert silent.startswith("0 (noncommittal); without that rule 0.5 × (0.650")
    assert "0.700 questions' mean" in silent


V1_STORE = Path(__file__).parent / "data" / "store_v1.sqlite3"


def _v1_copy(tmp_path) -> Path:
    """A copy of a store written by the code before the typed-column store (one JSON per row)."""
    path = tmp_path / "v1.sqlite3"
    shutil.copy(V1_STORE, path)
    return path


def test_store_lists_modes(store):
    inputs = pd.DataFrame({"user_input": ["q1", "q2"], "response": ["a", "b"]})
    focus = store.create_run("focus", {}, inputs)
    store.append_results(focus, [(0, _focus_result()), (1, _focus_result((0.6, 0.5), 0.4))])
    ragas = store.create_run("ragas", {}, inputs)
    store.append_results(ragas, [(0, _result(sims=(0.5,))), (1, _result(sims=(0.7,)))])
    mixed = store.create_run("mixed", {}, inputs)
    store.append_results(mixed, [(0, _result(sims=(0.5,))), (1, _focus_result())])
    store.create_run("empty", {}, inputs)
    infos = {r.name: r for r in store.list_runs()}
    assert infos["focus"].modes == ("focus",) and infos["focus"].mode == "focus"
    assert infos["focus"].ragas_mean == pytest.approx((0.75 + 0.4) / 2)
    assert infos["focus"].mean != pytest.approx(infos["focus"].ragas_mean)
    assert infos["ragas"].mode == "ragas" and infos["ragas"].ragas_mean == pytest.approx(0.6)
    assert infos["mixed"].mode == "mixed"
    assert infos["empty"].modes == () and infos["empty"].mode == ""
    assert np.isnan(infos["empty"].ragas_mean)
    loaded = store.load_run(focus)
    assert loaded.results[0].parts == _focus_result().parts
    assert loaded.frame["mode"].tolist() == ["focus", "focus"]


def test_a_store_written_by_the_previous_code_is_migrated_whole(tmp_path):
    path = _v1_copy(tmp_path)
    with sqlite3.connect(path) as db:  # what was there, straight from the old JSON texts
        old = {
            (run, idx): (json.loads(i), json.loads(r) if r else None)
            for run, idx, i, r in db.execute("SELECT run_id, idx, input, result FROM rows")
        }
    store = RunStore(path)
    infos = {r.id: r for r in store.list_runs()}
    assert [(r.name, r.n_rows, r.n_scored) for r in infos.values()] == [
        ("v1 run, partial", 4, 2),
        ("v1 run, complete", 6, 6),
    ]
    assert infos[1].columns == (
        "id",
        "variant",
        "user_input",
        "response",
        "answer_type",
        "language",
        "kind",
    )
    assert store.get_meta("demo_imported")  # meta kept: the demo is not imported twice
    for (run, idx), (inputs, result) in old.items():
        row = store.inputs(run, [idx]).iloc[0].to_dict()
        assert row == {k: v for k, v in inputs.items()}
        if result is None:
            assert idx in store.pending_rows(run)
            continue
        migrated = store.result(run, idx)
        assert migrated.value == pytest.approx(result["value"])
        assert migrated.ragas_value == pytest.approx(result["ragas_value"])
        assert [q.question for q in migrated.questions] == [
            q["question"] for q in result["questions"]
        ]
        assert np.allclose(migrated.question_embeddings, result["question_embeddings"], atol=1e-6)
        assert migrated.noncommittal_detail == result["noncommittal_detail"]
    with sqlite3.connect(path) as db:
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert "rows" not in tables and {"inputs", "results", "questions"} <= tables
    assert RunStore(path).list_runs() == store.list_runs()  # a second open changes nothing


def test_results_saved_before_modes_migrate_as_ragas(tmp_path):
    path = _v1_copy(tmp_path)
    with sqlite3.connect(path) as db:
        db.execute("UPDATE rows SET result = json_remove(result, '$.mode', '$.ragas_value')")
    store = RunStore(path)
    info = store.get_run(1)
    assert info.mode == "ragas" and info.ragas_mean == pytest.approx(info.mean)
    frame = store.load_run(1).frame
    assert frame["ragas_value"].tolist() == pytest.approx(frame["score"].tolist())


def test_shipped_demo_loads_as_a_ragas_run(store):
    run_id = import_demo(store)
    info = store.get_run(run_id)
    assert info.mode == "ragas" and info.ragas_mean == pytest.approx(info.mean)
    frame = store.load_run(run_id).frame
    assert set(frame["mode"]) == {"ragas"}
    assert frame["ragas_value"].tolist() == pytest.approx(frame["score"].tolist(), nan_ok=True)


def test_summary_table_and_report_name_the_mode(store):
    from relevancy.analysis.summary import frame_modes, summary_table
    from relevancy.report.html import build_report

    inputs = pd.DataFrame(
        {"user_input": ["q1", "q2"], "response": ["a", "b"], "variant": ["A", "B"]}
    )
    run_id = store.create_run("focus run", {}, inputs)
    store.append_results(run_id, [(0, _focus_result()), (1, _focus_result((0.6, 0.5), 0.4))])
    data = store.load_run(run_id)
    assert frame_modes(data.frame) == ["focus"]
    stats = summary_table(data.frame, threshold=0.5, by="variant")
    assert list(stats["mode"]) == ["focus"] * 3
    assert stats["ragas_mean"].tolist() == pytest.approx([0.575, 0.75, 0.4])
    html = build_report(store, run_id, threshold=0.5)
    assert "Scores are in <b>focus</b> mode" in html and "<th>Ragas value</th>" in html
    assert "<th>sentences (similarity to the question)</th>" in html
    assert "<li class='low'>Sentence &lt;1&gt; here." in html
    # a ragas run: no Ragas column, the Ragas wording
    plain = store.create_run("ragas run", {}, inputs)
    store.append_results(plain, [(0, _result(sims=(0.5,))), (1, _result(sims=(0.7,)))])
    ragas_data = store.load_run(plain)
    assert "ragas_mean" not in summary_table(ragas_data.frame, threshold=0.5).columns
    html = build_report(store, plain, threshold=0.5)
    assert "Scores are in <b>ragas</b> mode" in html and "<th>Ragas value</th>" not in html
    # a frame written before modes existed has no mode column: it was Ragas
    assert frame_modes(ragas_data.frame.drop(columns=["mode"])) == ["ragas"]


def test_pairs_carry_each_sides_mode_and_ragas_value():
    from relevancy import results_to_frame

    a = results_to_frame([_result("q1", sims=(0.5,)), _result("q2", sims=(0.6,))])
    b = results_to_frame([_focus_result(question="q1"), _focus_result(question="q2")])
    paired = pair_runs(a, b)
    assert list(paired["mode_a"]) == ["ragas"] * 2 and list(paired["mode_b"]) == ["focus"] * 2
    assert paired["ragas_value_b"].tolist() == pytest.approx([0.75, 0.75])


# --- the Dataset page's filters and grid, and what compares across modes ------------------
def test_store_filters_sorts_and_pages_in_sql(store):
    from relevancy.dashboard.views.datasets import results_table
    from relevancy.runs import RowQuery

    results = [
        _result("Where is Paris?", "In France.", (0.9,)),
        _result("Where is Rome?", "I do not know.", (0.4,), noncommittal=True),
        _result("Where is Oslo?", "Norway, by a FJORD.", (0.3,)),
        _result("Where is Bern?", "Switzerland.", (), value=float("nan")),
    ]
    results[3].error = "all 3 generations failed: boom"
    inputs = pd.DataFrame(
        {
            "user_input": [r.user_input for r in results],
            "response": [r.response for r in results],
            "variant": ["A", "B", "A", "B"],
            "kind": ["good", "evasive", "good", "broken"],
        }
    )
    run_id = store.create_run("filters", {}, inputs)
    store.append_results(run_id, enumerate(results))

    def rows(**kw) -> list[int]:
        return store.columns(run_id, ["score"], query=RowQuery(**kw))["row"].tolist()

    assert rows() == [3, 1, 2, 0]  # lowest first, NaN before everything
    assert rows(sort="score ↓") == [0, 2, 1, 3] and rows(sort="row") == [0, 1, 2, 3]
    assert rows(status="scored") == [1, 2, 0] and rows(status="NaN / errors") == [3]
    assert rows(noncommittal="yes") == [1] and rows(noncommittal="no", status="scored") == [2, 0]
    assert rows(search="fjord") == [2] and rows(search="WHERE IS") == [3, 1, 2, 0]
    assert rows(variants=("B",)) == [3, 1]
    assert rows(below=0.5) == [1, 2]
    assert rows(score_range=(0.2, 0.5)) == [3, 2]  # NaN rows stay unless status says
    assert rows(columns=(("kind", ("good",)),)) == [2, 0]
    assert store.count(run_id, RowQuery(status="scored")) == 3
    page = store.query(run_id, RowQuery(sort="row"), limit=2, offset=1)
    assert page["row"].tolist() == [1, 2] and page["kind"].tolist() == ["evasive", "good"]
    assert page["generated_questions"][0] == "What is generated question 0?"
    table = results_table(page, inputs=["variant", "kind"], with_ragas=True)
    assert list(table.columns[:7]) == [
        "row",
        "variant",
        "kind",
        "score",
        "reason",
        "Ragas value",
        "mode",
    ]
    assert table["row"].tolist() == [2, 3]  # shown 1-based
    assert "Ragas value" not in results_table(page, inputs=[], with_ragas=False)
    assert store.result(run_id, 2).response == "Norway, by a FJORD."
    with pytest.raises(InputError, match="no column 'nope'"):
        store.columns(run_id, ["nope"])


def test_comparable_value_and_mode_label():
    from relevancy import results_to_frame
    from relevancy.analysis.summary import comparable_value, mode_label

    ragas = results_to_frame([_result(sims=(0.5,))])
    focus = results_to_frame([_focus_result()])
    assert comparable_value(ragas, ragas) == "score"
    assert comparable_value(focus, focus) == "score"
    assert comparable_value(focus, focus, prefer="ragas_value") == "ragas_value"
    assert comparable_value(ragas, focus) == "ragas_value"  # modes differ: the Ragas value
    assert comparable_value(pd.concat([ragas, focus])) == "ragas_value"  # mixed in one table
    assert comparable_value(ragas.drop(columns=["ragas_value"]), focus) == "score"
    assert mode_label([]) == "" and mode_label(["focus"]) == "focus"
    assert mode_label(["ragas", "focus", "ragas"]) == "mixed"


def test_histogram_counts_whole_rows():
    from relevancy.report import charts

    frame = pd.DataFrame({"score": [0.1, 0.5, 0.52, 0.9], "user_input": list("abcd")})
    fig = charts.score_histogram(frame)
    assert fig.layout.yaxis.dtick == 1  # few rows: a tick per row, never 0.5
    big = pd.DataFrame({"score": np.linspace(0, 1, 500), "user_input": ["q"] * 500})
    assert charts.score_histogram(big).layout.yaxis.dtick is None


# --- no live links from data in charts (issue 25) ----------------------------------------------
LINK = '<a href="https://evil.example/">x</a>'
_LIVE_LINK = re.compile(r"<\s*/?\s*a(?:[\s>/]|$)", re.IGNORECASE)


def _live_links(fig: go.Figure) -> list[str]:
    """The ``<a>`` tags plotly would render in a figure's text (data and layout)."""
    text = fig.to_json().replace("\\u003c", "<").replace("\\u003e", ">")
    return _LIVE_LINK.findall(text)


def test_charts_escape_names_and_leave_no_live_link():
    frame = pd.DataFrame(
        {
            "user_input": [f"q {LINK}", "q2", "q3", "q4"],
            "score": [0.2, 0.6, 0.8, 0.5],
            "variant": [LINK, LINK, "<A HREF='https://evil.example/'>B</A>", "B"],
        }
    )
    figures = [
        charts.score_histogram(frame, by="variant"),
        charts.score_box(frame, by="variant"),
        charts.score_box(frame, by="variant", kind="violin"),
        charts.score_ecdf(frame, by="variant"),
        charts.layout(go.Figure(go.Bar(x=[LINK], y=[1], name=LINK)), title=LINK),
    ]
    paired = pair_variants(
        frame.assign(variant=[LINK, "B", LINK, "B"], id=["1", "1", "2", "2"]), LINK, "B"
    )
    figures.append(compare_charts.ab_scatter(paired, label_a=LINK, label_b="B"))
    for fig in figures:
        assert _live_links(fig) == [], fig.layout.title
    names = {t.name for t in figures[0].data}
    # shown as typed (plotly reads numeric quotes, not "&quot;"; a word joiner stops the address)
    assert "&lt;a href=&#34;https:\u2060//evil.example/&#34;&gt;x&lt;/a&gt;" in names
    # Vega draws text as text (no markup, no links): Compare's labels go in as typed
    paired = pd.DataFrame({"user_input": [LINK, "q"], "score_a": [0.9, 0.1], "score_b": [0.1, 0.9]})
    paired["diff"] = paired["score_b"] - paired["score_a"]
    paired["outcome"] = [outcome(d) for d in paired["diff"]]
    slash = 'ends with backslash\\ and "quotes" \\" ' + LINK
    data, spec = compare_vega.scatter_spec(paired, label_a=slash, label_b="B")
    assert LINK in set(data["question"])
    title = spec["layer"][-1]["encoding"]["x"]["title"]  # drawn as typed, its middle cut
    assert title.startswith("A: ends with backslash\\") and title.endswith(LINK[-20:])
    # a name is in no tooltip (an expression Vega-Lite writes without escaping a backslash)
    tips = [t for x in spec["layer"] for t in x["encoding"].get("tooltip") or []]
    assert tips and all(slash not in json.dumps(t) for t in tips)
    _, spec = compare_vega.histogram_spec(paired)
    assert all(slash not in json.dumps(x) for x in spec["layer"])


def test_report_has_no_link_from_data(store):
    inputs = pd.DataFrame(
        {
            "user_input": [f"q1 {LINK}", "q2", "q1 " + LINK, "q2"],
            "response": [LINK, "b", "c", "d"],
            "variant": [LINK, LINK, "B", "B"],
            "id": ["1", "2", "1", "2"],
        }
    )
    run_id = _four_row_run(store, f"run {LINK}", inputs)
    page = build_report(store, run_id, threshold=0.5)
    decoded = page.replace("\\u003c", "<").replace("\\u003e", ">")
    assert "evil.example" in decoded  # the names are there, as text
    assert not re.search(r"<a\s+href=[\"']?https://evil", decoded, re.IGNORECASE)
    # the report's own links: anchors to its rows (no dashboard address given)
    assert all("evil" not in m for m in re.findall(r"<a [^>]*>", decoded))


def test_compare_says_nothing_was_compared_when_a_side_never_scored():
    """A variant whose answers all failed pairs with the other only on NaN: no "B is never
    worse" all-clear, and the verdict says there is nothing to compare (found by a tester)."""
    from relevancy.analysis.compare import summarize_pairs
    from relevancy.dashboard.views.compare_table import no_regressions, verdict

    paired = pd.DataFrame(
        {"score_a": [0.8, 0.6, 0.7], "score_b": [np.nan] * 3, "diff": [np.nan] * 3}
    )
    s = summarize_pairs(paired)
    assert "Nothing to compare" in verdict(s, "A", "B")
    said = no_regressions(s, "A", "B")
    assert "No regressions" not in said and "nothing says whether B" in said
    some = summarize_pairs(
        pd.DataFrame({"score_a": [0.5, 0.6], "score_b": [0.7, np.nan], "diff": [0.2, np.nan]})
    )
    assert no_regressions(some, "A", "B").endswith(
        "on the 1 pair scored on both sides (1 of 2 pairs left out: a side failed)."
    )


def test_an_empty_answer_is_not_blamed_on_the_generated_questions():
    """A row whose answer came back empty generated nothing: its reason says why there is no
    score, not that no generated question was usable (found by a tester on an experiment)."""
    empty = RelevancyResult(
        user_input="What is 2+2?",
        response="",
        value=float("nan"),
        error="response is empty (''): give the text to score",
    )
    (reason,) = explain(empty)
    assert reason.title == "Not scored"
    assert reason.detail == "There is no score: response is empty (''): give the text to score"


def test_compare_win_rate_is_a_percentage_with_its_wilson_interval_and_the_pairs_download():
    """Issue 46's "also asked": B's win rate among the pairs that are not ties, with its 95%
    interval, and every pair to download as CSV (formulas defused, regressions first)."""
    from scipy.stats import binomtest

    from relevancy.analysis.compare import summarize_pairs
    from relevancy.dashboard.views.compare_table import pairs_csv, win_rate_text

    diffs = [0.3, 0.2, 0.1, -0.2, 0.0, 0.01, 0.25, np.nan]  # 4 wins, 1 loss, 2 ties, 1 NaN
    paired = pd.DataFrame(
        {
            "user_input": [f"q{i}" for i in range(7)] + ["=1+1"],
            "score_a": [0.5] * 8,
            "score_b": [0.5 + d for d in diffs],
            "diff": diffs,
        }
    )
    paired["outcome"] = [*(["win"] * 3), "loss", "tie", "tie", "win", "n/a"]
    s = summarize_pairs(paired)
    assert (s["wins"], s["losses"], s["ties"]) == (4, 1, 2)
    assert s["win_rate"] == pytest.approx(0.8)
    wilson = binomtest(4, 5).proportion_ci(method="wilson")
    assert (s["win_low"], s["win_high"]) == pytest.approx((wilson.low, wilson.high))
    text = win_rate_text(s, "A", "B")
    assert text.startswith("**B wins 80% of the pairs that are not ties**")
    assert f"95% CI {round(100 * wilson.low)}% to {round(100 * wilson.high)}%" in text
    assert "4 of 5, A the other 1; 2 ties left out" in text
    ties = summarize_pairs(paired.assign(diff=[0.0] * 8, outcome="tie"))
    assert "no side wins one" in win_rate_text(ties, "A", "B")
    csv = pairs_csv(
        paired, label_a="A", label_b="B", on_ragas=False, mode_a="ragas", mode_b="ragas"
    )()
    lines = csv.decode("utf-8").splitlines()
    assert lines[0] == "question,A,B,B − A,outcome" and len(lines) == 9
    assert lines[1].startswith("q3,") and "'=1+1" in csv.decode("utf-8")  # worst first; defused
