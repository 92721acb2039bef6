"""Human labels and the chance level in the dashboard, under Streamlit's AppTest: the Agreement
page reached from app.py, a label set in the drill-down moving its figures, the label mapping of
an upload, the chance band on Distributions, and the figures on HaluQuestQA (../shared)."""

from __future__ import annotations

import json
import sys

import pytest
from streamlit.testing.v1 import AppTest

from relevancy.analysis.agreement import BINNED_BINS, BOOT_BINS, BOOT_ROWS, agreement
from relevancy.dashboard.views.reference import run_chance
from relevancy.paths import default_store_path
from relevancy.runs import RunStore
from relevancy.testing.synthetic import synthetic_inputs, synthetic_results

from helpers import DEMO, ROOT, app, metrics, ok, visit

HALU = ROOT.parent / "shared" / "data" / "haluquestqa"


def _figures(at: AppTest):
    """The figures table (the page's one plain, non-selectable dataframe)."""
    return [d for d in at.dataframe if not d.proto.id][0].value


def _expected(store: RunStore, run: int):
    cols = store.columns(run, ["score", "label", "user_input"])
    return agreement(cols["score"], cols["label"].to_numpy(), groups=cols["user_input"].tolist())


def test_agreement_page_shows_the_figures_and_a_label_set_in_the_drill_down_moves_them():
    at = visit(app(), "6_Agreement.py")
    store = RunStore(default_store_path())
    before = _expected(store, DEMO)  # the demo: on-topic answers are good (20 of 48)
    figures = metrics(at)
    assert figures["Labelled rows"] == "48"
    assert figures["AUROC"] == f"{before.auroc.value:.3f}"
    assert figures["Best threshold"] == f"{before.threshold.value:.3f}"
    assert figures["Precision"] == f"{before.precision.value:.3f}"
    captions = [c.value for c in at.caption]
    assert f"95% CI {before.auroc.low:.3f}-{before.auroc.high:.3f}" in captions
    assert "20 good · 28 bad" in captions
    table = _figures(at)
    assert list(table["rows"]) == ["all labelled rows", "prompt-A", "prompt-B"]
    assert table["AUROC"].iloc[0] == before.auroc.format()
    assert not at.get("plotly_chart")  # Vega-Lite: plotly's script is not loaded here
    chart = json.loads(at.get("vega_lite_chart")[0].proto.spec)
    marks = [layer["mark"]["type"] for layer in chart["layer"]]
    assert marks[0] == "rect"  # the chance band, beneath the rest
    assert marks[3:7] == ["circle", "rule", "bar", "tick"]  # dots; over them whiskers, boxes
    for layer in chart["layer"]:  # only dots and boxes have tooltips (a title is an expression)
        has_tip = layer["mark"].get("tooltip") is not False
        assert has_tip == (layer["mark"]["type"] in ("circle", "bar")), layer["mark"]
        assert has_tip == ("tooltip" in layer["encoding"])
    boxes = chart["layer"][4]["data"]["values"]
    assert [b["group"] for b in boxes] == ["bad label (28)", "good label (20)"]
    # the drill-down opens on the worst disagreement: a bad label with a high score
    row = at.selectbox(key=f"agr_inspect_{DEMO}").value
    control = at.segmented_control(key=f"agr_drill_label_{DEMO}_{row}")
    assert control.value == 0.0
    assert any("from the input's label column" in c for c in captions)
    control.set_value(1.0).run()  # the analyst says it is a good answer after all
    ok(at)
    saved = store.labels(DEMO).set_index("row").loc[row]
    assert saved["label"] == 1.0 and saved["source"] == "dashboard"
    after = _expected(store, DEMO)
    assert after.auroc.value != before.auroc.value
    assert metrics(at)["AUROC"] == f"{after.auroc.value:.3f}"
    assert "21 good · 27 bad" in [c.value for c in at.caption]
    # the relabelled row is no longer a disagreement, and stays open
    assert at.selectbox(key=f"agr_inspect_{DEMO}").value == row
    assert any("set in the dashboard" in c.value for c in at.caption)
    # cleared: the row leaves the labelled rows
    at.segmented_control(key=f"agr_drill_label_{DEMO}_{row}").set_value(None).run()
    ok(at)
    assert metrics(at)["Labelled rows"] == "47"


def test_dataset_drill_down_sets_labels_and_says_where_the_score_sits_against_chance():
    at = visit(app(), "1_Dataset.py")
    row = at.selectbox(key=f"ds_inspect_{DEMO}").value
    store = RunStore(default_store_path())
    level = next(iter(run_chance(store, DEMO).values()))
    assert any(
        c.value.startswith(f"Chance level: a typical unrelated pair scores {level.median:.2f}")
        for c in at.caption
    )
    control = at.segmented_control(key=f"ds_drill_label_{DEMO}_{row}")
    control.set_value(1.0).run()
    ok(at)
    assert store.labels(DEMO).set_index("row").loc[row, "source"] == "dashboard"
    # a row below chance level is warned about (the demo has a few)
    result = store.results(DEMO)
    low = next(i for i, r in enumerate(result) if not r.noncommittal and level.below(r.ragas_value))
    at.selectbox(key="ds_sort").set_value("row").run()
    at.selectbox(key=f"ds_inspect_{DEMO}").set_value(low).run()
    ok(at)
    assert any("At chance level" in w.value for w in at.warning)


def test_distributions_draw_the_chance_band():
    at = visit(app(), "2_Distributions.py")
    level = next(iter(run_chance(RunStore(default_store_path()), DEMO).values()))
    text = next(m.value for m in at.markdown if m.value.startswith("**Chance level:**"))
    assert f"p95 {level.p95:.2f}".replace(".", "\\.") in text
    assert "answered rows score below the 95th percentile" in text
    # the histogram (Vega-Lite): the band's rectangle and the median's line, within the axis
    (histogram,) = (json.loads(c.proto.spec) for c in at.get("vega_lite_chart"))
    band, median = histogram["layer"][:2]
    low = max(level.p5, band["encoding"]["x"]["scale"]["domain"][0])
    edges = band["data"]["values"][0]
    assert [edges["start"], edges["end"]] == pytest.approx([low, level.p95])
    assert median["mark"]["type"] == "rule" and edges["median"] == pytest.approx(level.median)
    charts = []
    for tab in ("📦 Box / violin", "📈 ECDF"):  # one chart: the open tab's (plotly)
        at.session_state["dist_tab"] = tab
        (chart,) = (json.loads(c.proto.spec) for c in at.run().get("plotly_chart"))
        charts.append(chart)
    for chart, axis in zip(charts, "yx"):
        rects = [s for s in chart["layout"]["shapes"] if s["type"] == "rect"]
        low = max(level.p5, chart["layout"][f"{axis}axis"]["range"][0])  # within the axis
        assert [rects[0][f"{axis}0"], rects[0][f"{axis}1"]] == pytest.approx([low, level.p95])


def test_an_upload_maps_its_label_column_and_checks_it():
    at = visit(app(), "1_Dataset.py")
    csv = b"question,answer,rating\nq1,a1,yes\nq2,a2,no\nq3,a3,\n"
    at.file_uploader(key="ds_upload").upload("rated.csv", csv, "text/csv").run()
    ok(at)
    assert at.selectbox(key="ds_map_label").value == "rating"
    assert any("Human labels in 'rating': 2 row(s), binary" in i.value for i in at.info)
    # a column named label that holds no labels is not guessed; chosen by hand, it is an error
    csv = b"question,answer,label\nq1,a1,medical\nq2,a2,legal\n"
    at.file_uploader(key="ds_upload").upload("topics.csv", csv, "text/csv").run()
    ok(at)
    assert at.selectbox(key="ds_map_label").value == "(none)"
    assert not at.button(key="ds_score").disabled
    at.selectbox(key="ds_map_label").set_value("label").run()
    assert any("row 1: 'medical' is not a label" in e.value for e in at.error)
    assert at.button(key="ds_score").disabled


def test_a_run_without_labels_says_how_to_get_them():
    at = app()
    store = RunStore(default_store_path())
    demo = store.load_run(DEMO)
    plain = store.create_run("no labels", {}, demo.inputs.drop(columns=["label"]).head(4))
    store.append_results(plain, enumerate(demo.results[:4]))
    at.session_state["active_run"] = plain
    visit(at, "6_Agreement.py")
    assert any("No human labels in this run yet" in i.value for i in at.info)
    # a label set in the Dataset drill-down brings the page its first labelled row
    visit(at, "1_Dataset.py")
    row = at.selectbox(key=f"ds_inspect_{plain}").value
    at.segmented_control(key=f"ds_drill_label_{plain}_{row}").set_value(0.0).run()
    visit(at, "6_Agreement.py")
    assert metrics(at)["Labelled rows"] == "1"


def test_a_run_with_more_labels_than_boot_rows_says_its_resamples_see_score_bins():
    """Every row of a 20,600-row run labelled: all rows' intervals are resampled on the scores
    in BOOT_BINS bins and each variant's (10,300 rows) 2,000 times on BINNED_BINS bins; the page
    says which, and its figures are the library's."""
    n = BOOT_ROWS + 600
    at = app()
    store = RunStore(default_store_path())
    inputs = synthetic_inputs(n, labelled_every=1)  # a label on every row
    run = store.create_run("all labelled", {"backend": "embedded"}, inputs)
    for batch in synthetic_results(n):
        store.append_results(run, batch)
    at.session_state["active_run"] = run
    visit(at, "6_Agreement.py")
    expected = _expected(store, run)
    assert (expected.rows, expected.bins, expected.n_boot) == (n, BOOT_BINS, 200)
    assert metrics(at)["AUROC"] == f"{expected.auroc.value:.3f}"
    captions = [c.value for c in at.caption]
    assert f"95% CI {expected.auroc.low:.3f}-{expected.auroc.high:.3f}" in captions
    # each variant has 10,300 labelled rows, under BOOT_ROWS: its line is resampled otherwise
    note = (
        f"all rows: 200 resamples, each on the scores in {BOOT_BINS:,} bins; by variant: 2,000 "
        f"resamples, each on the scores in {BINNED_BINS:,} bins"
    )
    assert any(f"{note})." in c for c in captions), captions[:3]


@pytest.mark.slow
@pytest.mark.skipif(not (HALU / "pairs.jsonl").exists(), reason=f"no development data at {HALU}")
def test_haluquestqa_figures_on_the_page_are_the_library_figures(tmp_path):
    """HaluQuestQA's answers (../shared) scored by their length, graded labels mapped: the page
    shows the Spearman and its CI that relevancy.analysis.agreement gives on those rows (and per
    answer source, with the binary labels, the AUROCs)."""
    sys.path.insert(0, str(ROOT / "tests"))
    from test_agreement import _halu_store

    at = app()
    for label in ("label", "label_binary"):
        store, run, rows, scores = _halu_store(tmp_path / label, label)
        at.session_state["sb_store"] = str(store.path)
        at.session_state["active_run"] = run
        visit(at, "6_Agreement.py")
        captions = [c.value for c in at.caption]
        if label == "label":
            spearman = _expected(store, run).spearman
            assert metrics(at)["Spearman"] == f"{spearman.value:.3f}"
            assert f"95% CI {spearman.low:.3f}-{spearman.high:.3f}" in captions
        else:
            table = _figures(at).set_index("rows")
            for role in ("human_answer", "model_answer"):
                mine = [i for i, r in enumerate(rows) if r["role"] == role]
                fig = agreement(
                    [scores[i] for i in mine],
                    [float(rows[i][label]) for i in mine],
                    groups=[rows[i]["user_input"] for i in mine],
                ).auroc
                assert table.loc[role, "AUROC"] == fig.format()
