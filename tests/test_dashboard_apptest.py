"""Every dashboard page under Streamlit's AppTest: widgets set, files uploaded, runs scored.

Most tests use the precomputed demo run (imported into the per-test store on first start);
one scores an uploaded CSV with the real embedded models, one drives the OpenAI-compatible
backend against the local fake server with a recognisable key and checks it never shows up.
"""

from __future__ import annotations

import base64
import json
import re
import sqlite3

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from streamlit.testing.v1 import AppTest

from relevancy import bootstrap_ci
from relevancy.core.stats import NORMAL_ABOVE
from relevancy.paths import default_store_path
from relevancy.report.charts import DOTS_UP_TO
from relevancy.runs import DEMO_RUN_NAME, RunStore
from relevancy.scoring.judge import load_check_set
from relevancy.scoring.metric import API_CONCURRENCY, EMBEDDED_CONCURRENCY
from relevancy.testing.synthetic import write_synthetic_run

from helpers import DEMO, ROOT, app, choose_toy_backend, metrics, ok, store_bytes, visit

FAKE_KEY = "sk-FAKE-dashboard-key-0123456789-DO-NOT-SHOW"


def _charts(at: AppTest) -> list[dict]:
    return [json.loads(c.proto.spec) for c in at.get("plotly_chart")]


def _vega(at: AppTest) -> list[tuple[dict, pd.DataFrame]]:
    """The page's Vega-Lite charts: each spec and the frame it was sent."""
    out = []
    for chart in at.get("vega_lite_chart"):
        table = (
            pa.ipc.open_stream(chart.proto.data.data).read_all() if chart.proto.data.data else None
        )
        out.append((json.loads(chart.proto.spec), table.to_pandas() if table else pd.DataFrame()))
    return out


def _question_bars(at: AppTest) -> list[list[str]]:
    """Each drill-down's generated-question bars: the similarity written beside each bar."""
    tables = [m.value for m in at.markdown if 'class="rel-sent rel-questions"' in m.value]
    return [re.findall(r'class="rel-qtrack">.*?<td class="num"><b>([^<]*)</b>', t) for t in tables]


def _values(v) -> list:
    """A plotly array from a chart spec (plotly 6+ sends numpy arrays as base64 ``bdata``)."""
    if isinstance(v, dict) and "bdata" in v:
        return np.frombuffer(base64.b64decode(v["bdata"]), dtype=v["dtype"]).tolist()
    return list(v)


def _table(at: AppTest, key: str, index: int = 0):
    """A selectable dataframe by its key; a plain one (no id) by its position on the page."""
    for d in at.dataframe:
        if d.proto.id.endswith(f"-{key}"):
            return d.value
    return [d for d in at.dataframe if not d.proto.id][index].value


def _sentence_tables(at: AppTest) -> list[str]:
    """The HTML of every focus sentence table on the page."""
    return [m.value for m in at.markdown if 'class="rel-sent"' in m.value]


def _element_texts(at: AppTest) -> str:
    """Every rendered element's protobuf, as text (sidebar and main)."""
    out: list[str] = []

    def walk(node) -> None:
        proto = getattr(node, "proto", None)
        if proto is not None:
            out.append(str(proto))
        for child in getattr(node, "children", {}).values():
            walk(child)

    walk(at._tree)
    return "\n".join(out)


# --- home ---------------------------------------------------------------------------------
def _demo_mean() -> str:
    """The shipped demo's mean score, from its results file (not copied from a page)."""
    from relevancy.runs import demo_results

    values = [r.value for r in demo_results() if r.ok]
    return f"{sum(values) / len(values):.3f}"


def test_home_shows_demo_overview_and_precomputed_example():
    at = app()
    assert any("Active run" in m.value for m in at.markdown)
    figures = metrics(at)
    assert figures["Mean score"] == _demo_mean()
    assert any("for trying the tool offline" in c.value for c in at.caption)
    assert any("precomputed" in c.value for c in at.caption)
    # the page's words read the library's constants, not copies of them
    shown = _element_texts(at)
    pairs = len(load_check_set())
    assert f"models on {pairs} labelled pairs" in shown and f"score {pairs} questions" in shown
    assert f"Run the judge check ({2 * pairs} answers)" in shown
    # how long it should take, said before it starts (the embedded models' benchmark here)
    assert "Estimate: about 2 min for 80 rows (1.75 s/row, the embedded models" in shown.replace(
        "\\", ""
    )
    assert f"(default {EMBEDDED_CONCURRENCY})" in shown and f"(default {API_CONCURRENCY}):" in shown
    bars = _question_bars(at)
    assert len(bars) == 2  # one table of similarity bars per answer variant
    assert all(len(b) == 3 for b in bars)  # a bar per generated question
    assert not _charts(at)  # drawn as HTML: no chart library loaded for them
    # picking another example refills the question and both answers
    at.selectbox(key="home_example").set_value("When was the first super bowl?").run()
    ok(at)
    assert at.text_area(key="home_question").value == "When was the first super bowl?"
    assert "1967" in at.text_area(key="home_answer_0").value
    assert len(_question_bars(at)) == 2


# --- dataset ------------------------------------------------------------------------------
def test_dataset_results_filters_and_drilldown():
    at = visit(app(), "1_Dataset.py")
    table = _table(at, f"ds_table_{DEMO}")
    assert len(table) == 48
    assert table["score"].is_monotonic_increasing  # lowest first by default
    at.toggle(key="ds_only_low").set_value(True).run()
    low = _table(at, f"ds_table_{DEMO}")
    assert 0 < len(low) < 48 and (low["score"] < 0.5).all()
    at.toggle(key="ds_only_low").set_value(False)
    at.text_input(key="ds_search").input("SUPERBOWL").run()  # case-insensitive, answers too
    found = _table(at, f"ds_table_{DEMO}")
    assert list(found["question"]) == ["When was the first super bowl?"]
    at.text_input(key="ds_search").input("no-such-words-anywhere").run()
    assert any("No row matches" in i.value for i in at.info)
    at.text_input(key="ds_search").input("")
    at.multiselect(key="ds_variants").set_value(["prompt-B"]).run()
    assert set(_table(at, f"ds_table_{DEMO}")["variant"]) == {"prompt-B"}
    at.selectbox(key="ds_nc").set_value("yes").run()
    ok(at)
    flagged = _table(at, f"ds_table_{DEMO}")  # B's two evasive answers, zeroed
    assert len(flagged) == 2 and (flagged["score"] == 0).all()
    assert set(flagged["variant"]) == {"prompt-B"}
    at.selectbox(key="ds_nc").set_value("all")
    at.multiselect(key="ds_variants").set_value([]).run()  # none chosen: all variants
    at.selectbox(key=f"ds_inspect_{DEMO}").set_value(0).run()  # row 0: the France partial answer
    ok(at)
    assert [len(b) for b in _question_bars(at)] == [3]  # a bar per generated question
    # the partial answer passes the threshold, and says first that it is partial
    assert any("**Main reason:** partial" in m.value for m in at.markdown)
    assert any("Above the threshold" in w.value and "partial" in w.value for w in at.warning)
    assert any("Part of the question is not answered" in w.value for w in at.warning)
    # a ragas score is explained sentence by sentence too (it is stored with every row)
    (sentences,) = _sentence_tables(at)
    assert ">similarity</th>" in sentences and ">without it</th>" not in sentences
    assert any("the score does not use these sentences" in c.value for c in at.caption)
    # rows by main reason, and the reason filter
    from relevancy.runs import demo_results

    partial = sum(r.reason == "partial" for r in demo_results())
    assert any(f"{partial} partial" in c.value for c in at.caption)
    at.multiselect(key="ds_reasons").set_value(["partial"]).run()
    ok(at)
    kept = _table(at, f"ds_table_{DEMO}")
    assert len(kept) == partial and set(kept["reason"]) == {"partial"}


def test_dataset_validation_messages_for_a_bad_upload():
    at = visit(app(), "1_Dataset.py")
    at.file_uploader(key="ds_upload").upload("notes.csv", b"title,body\nx,y\n", "text/csv").run()
    ok(at)
    assert any("Choose the column that holds the question" in e.value for e in at.error)
    assert at.button(key="ds_score").disabled
    # map the columns by hand: the errors go away
    at.selectbox(key="ds_map_user_input").set_value("title")
    at.selectbox(key="ds_map_response").set_value("body").run()
    ok(at)
    assert not any("Choose the column" in e.value for e in at.error)
    assert not at.button(key="ds_score").disabled
    at.file_uploader(key="ds_upload").upload("bad.json", b"{not json", "application/json").run()
    assert any("Cannot read this file" in e.value for e in at.error)
    # a JSONL file with one unreadable line: the others are read, that line is named
    lines = b'{"question": "q1?", "answer": "a1"}\n{oops}\n{"question": "q2?", "answer": "a2"}\n'
    at.file_uploader(key="ds_upload").upload("some.jsonl", lines, "application/json").run()
    ok(at)
    assert any("line 2 skipped: not valid JSON" in w.value.replace("\\", "") for w in at.warning)


@pytest.mark.models
@pytest.mark.slow
def test_dataset_upload_and_score_with_the_embedded_models():
    at = visit(app(), "1_Dataset.py")
    csv = (
        b"question,answer,variant\n"
        b'When was the first super bowl?,"The first superbowl was held on Jan 15, 1967",v1\n'
        b"What is the capital of Japan?,Tokyo is the capital of Japan.,v1\n"
        b"How do vaccines work?,I don't know.,v1\n"
    )
    at.file_uploader(key="ds_upload").upload("three.csv", csv, "text/csv").run()
    ok(at)
    assert len(_table(at, "ds_preview")) == 3
    at.text_input(key="ds_run_name").input("three rows")
    at.button(key="ds_score").click().run()
    ok(at)
    assert any("Scored 3 rows" in s.value for s in at.success)
    table = _table(at, "ds_table_2")
    assert len(table) == 3 and table["score"].notna().all()
    assert table["score"].min() < 0.3  # "I don't know." is noncommittal (or far off topic)
    runs = RunStore(default_store_path()).list_runs()
    assert [r.name for r in runs] == ["three rows", DEMO_RUN_NAME]
    assert runs[0].complete and runs[0].settings["backend"] == "embedded"
    # the new run is the active one everywhere
    assert at.selectbox(key="_w_active_run").value == runs[0].id


def test_resume_a_partial_run(monkeypatch):
    """A run cut short keeps its rows; Resume scores only the missing ones."""
    at = app()
    store = RunStore(default_store_path())
    demo = store.load_run(store.list_runs()[0].id)
    run_id = store.create_run("partial", {"backend": "embedded"}, demo.inputs.head(4))
    store.append_results(run_id, [(0, demo.results[0]), (2, demo.results[2])])

    class FakeMetric:
        concurrency = 2
        calls: list[list[str]] = []

        def score_many(self, frame, on_result=None, **_):
            FakeMetric.calls.append(list(frame["user_input"]))
            out = []
            for i, (u, r) in enumerate(zip(frame["user_input"], frame["response"])):
                result = next(x for x in demo.results if x.user_input == u and x.response == r)
                on_result(i, result)
                out.append(result)
            return out

    import relevancy.dashboard.widgets.models as models

    monkeypatch.setattr(models, "_build_metric", lambda *a, **k: FakeMetric())
    at.session_state["active_run"] = run_id
    visit(at, "1_Dataset.py")
    assert any("partial: 2 of 4 rows" in i.value for i in at.info)
    at.button(key="ds_resume").click().run()
    ok(at)
    assert FakeMetric.calls == [[demo.inputs["user_input"][1], demo.inputs["user_input"][3]]]
    assert store.get_run(run_id).complete
    assert len(_table(at, f"ds_table_{run_id}")) == 4


# --- distributions ------------------------------------------------------------------------
def _histogram(at: AppTest) -> tuple[dict, pd.DataFrame]:
    """The Distributions histogram (Vega-Lite): its spec and its bins."""
    (chart,) = _vega(at)
    return chart


def _threshold(spec: dict) -> float:
    """Where the histogram's dashed threshold line is."""
    (rule,) = [
        layer
        for layer in spec["layer"]
        if layer["mark"]["type"] == "rule" and layer["mark"].get("strokeDash")
    ]
    return rule["data"]["values"][0]["start"]


def test_distributions_charts_and_summary():
    at = visit(app(), "2_Distributions.py")
    # the open tab's chart alone; each tab draws its own when opened. The histogram (the tab
    # a visit opens on) is Vega-Lite's: no plotly script on a visit
    assert not _charts(at)
    spec, bins = _histogram(at)
    assert not [w for w in at.radio if w.key == "dist_kind"]  # drawn with the box
    for tab, kind in (("📦 Box / violin", "box"), ("📈 ECDF", "scatter")):
        at.session_state["dist_tab"] = tab
        assert [c["data"][0]["type"] for c in _charts(at.run())] == [kind]
        assert not _vega(at)
    at.session_state["dist_tab"] = "📊 Histogram"
    spec, bins = _histogram(at.run())
    assert sorted(bins["group"].unique()) == ["prompt-A", "prompt-B"]
    assert bins.groupby("group")["rows"].sum().to_dict() == {"prompt-A": 24, "prompt-B": 24}
    assert np.allclose(bins["end"] - bins["start"], 0.05)  # bins of 0.05
    assert _threshold(spec) == 0.5
    summary = _table(at, "dist_table")
    assert list(summary["group"]) == ["all rows", "prompt-A", "prompt-B"]
    assert list(summary["rows"]) == [48, 24, 24]
    captions = " ".join(c.value for c in at.caption)
    n_boot = bootstrap_ci.__kwdefaults__["n_boot"]
    assert f"({n_boot:,} resamples; the normal interval above {NORMAL_ABOVE:,} rows)" in captions
    at.session_state["dist_tab"] = "📦 Box / violin"
    box_captions = " ".join(c.value for c in at.run().caption)
    assert f"more than {DOTS_UP_TO:,} rows shows its outliers only" in box_captions
    at.session_state["dist_tab"] = "📊 Histogram"
    at.run()
    at.segmented_control(key="dist_split").set_value("none").run()
    assert set(_histogram(at)[1]["group"]) == {"all rows"}
    at.session_state["dist_tab"] = "📦 Box / violin"
    at.run().radio(key="dist_kind").set_value("violin").run()
    ok(at)
    assert _charts(at)[0]["data"][0]["type"] == "violin"
    at.session_state["dist_tab"] = "📊 Histogram"
    at.run()
    at.sidebar.slider(key="_w_sb_threshold").set_value(0.7).run()
    ok(at)
    assert _threshold(_histogram(at)[0]) == 0.7
    assert "below 0.70" in _table(at, "dist_table").columns


# --- embeddings ---------------------------------------------------------------------------
def test_embeddings_projection_and_row_selection():
    at = visit(app(), "3_Embeddings.py")
    assert not _charts(at)  # a 2-D map of a few thousand points: a canvas, no plotly script
    ((spec, points),) = _vega(at)
    assert [layer["mark"]["type"] for layer in spec["layer"]] == ["rule", "circle", "point"]
    assert spec["layer"][2]["mark"]["shape"] == "diamond"
    assert (points["kind"] == "question").sum() == 24  # one diamond per distinct question
    # each generated question's link ends at an original question's place (two variants'
    # rows share their question's diamond)
    gen, orig = points[points["kind"] == "generated"], points[points["kind"] == "question"]
    places = {(x, y) for x, y in orig[["x", "y"]].itertuples(index=False)}
    assert {(x, y) for x, y in gen[["px", "py"]].itertuples(index=False)} <= places
    assert spec["layer"][1]["encoding"]["color"]["field"] == "score"
    params = [p["name"] for p in spec["layer"][1]["params"]]
    assert params[:2] == ["pick", "box"]
    at.segmented_control(key="emb_color").set_value("variant").run()
    colour = _vega(at)[0][0]["layer"][1]["encoding"]["color"]
    assert colour["field"] == "variant" and colour["scale"]["domain"] == ["prompt-A", "prompt-B"]
    at.segmented_control(key="emb_dims").set_value(3).run()
    ok(at)
    assert not _vega(at)  # 3-D: plotly's WebGL
    assert {t["type"] for t in _charts(at)[0]["data"]} == {"scatter3d"}
    at.segmented_control(key="emb_dims").set_value(2)
    at.segmented_control(key="emb_method").set_value("tsne").run()
    ok(at)
    assert len(_vega(at)[0][1]) == len(points) and not _charts(at)
    at.selectbox(key=f"emb_row_{DEMO}").set_value(5).run()
    ok(at)
    assert any("row 6" in c.value for c in at.caption)  # the run's row 5, shown 1-based
    assert [len(b) for b in _question_bars(at)] == [3]


def test_embeddings_shades_every_row_beneath_a_sample():
    """Above the drawn sample, the 2-D PCA fitted on the sample places every row's vectors
    (read a chunk at a time) as shaded bins beneath the dots, and the caption counts them."""
    at = app()
    store = RunStore(default_store_path())
    run_id = write_synthetic_run(store, 1600, name="bigger than the sample")
    at.session_state["active_run"] = run_id
    visit(at, "3_Embeddings.py")
    assert "A sample of 500 of 1,600 rows" in at.caption[0].value
    assert _vega(at)[0][0]["layer"][0]["mark"]["type"] == "rule"  # nothing shaded yet
    at.toggle(key=f"emb_density_{run_id}").set_value(True).run()
    ok(at)
    ((spec, data),) = _vega(at)
    # the bins beneath the links and dots, in the same frame (each layer takes its kind)
    assert [layer["mark"]["type"] for layer in spec["layer"]] == ["rect", "rule", "circle", "point"]
    assert spec["resolve"] == {"scale": {"color": "independent"}}
    assert (data["kind"] == "generated").sum() == 1500  # the sample's, drawn over the bins
    on_grid = int(data.loc[data["kind"] == "shade", "points"].sum())
    caption = next(c.value for c in at.caption if "Shaded:" in c.value)
    off = re.search(r"; ([\d,]+) fall outside the frame", caption)
    outside = int(off.group(1).replace(",", "")) if off else 0
    assert on_grid + outside == 1600 * 4  # each row's question and its three generated ones
    assert "all 6,400 points of the 1,600 rows" in caption
    # only a linear map can place every row: in 3-D (or UMAP, t-SNE) the toggle is off
    at.segmented_control(key="emb_dims").set_value(3).run()
    ok(at)
    assert at.toggle(key=f"emb_density_{run_id}").disabled
    assert {t["type"] for t in _charts(at)[0]["data"]} == {"scatter3d"}
    # every one of the 1,600 rows (6,400 points, more than a canvas is given): plotly's WebGL,
    # with its lasso
    at.segmented_control(key="emb_dims").set_value(2)
    at.toggle(key=f"emb_all_{run_id}").set_value(True).run()
    ok(at)
    assert not _vega(at) and _charts(at)[0]["data"][-1]["type"] == "scattergl"
    assert "pick the lasso" in at.caption[0].value


# --- compare ------------------------------------------------------------------------------
def test_compare_variants_and_regressions():
    at = visit(app(), "4_Compare.py")
    figures = metrics(at)
    assert figures["Pairs"] == "24"
    wins, ties, losses = (
        int(figures["prompt-B better"]),
        int(figures["Ties"]),
        int(figures["prompt-A better"]),
    )
    assert wins + ties + losses == 24 and losses > 0
    # B's win rate among the pairs that are not ties, with its interval, and every pair to take
    won = next(m.value for m in at.markdown if "of the pairs that are not ties" in m.value)
    share = round(100 * wins / (wins + losses))
    assert won.startswith(f"**prompt\\-B wins {share}% of the pairs")  # Markdown-escaped
    assert f"{wins} of {wins + losses}" in won and f"; {ties} tie" in won
    (download,) = at.get("download_button")
    assert download.proto.label == "All 24 pairs (CSV)"
    assert not _charts(at)  # Vega-Lite here: plotly's script is not loaded for this page
    (scatter, dots), (hist, bins) = _vega(at)
    assert set(dots["outcome"]) >= {"B better", "A better"} and len(dots) == 24
    assert scatter["layer"][-1]["encoding"]["x"]["title"] == "A: prompt-A"
    assert scatter["layer"][-1]["mark"]["type"] == "circle"
    assert hist["layer"][1]["mark"]["type"] == "bar" and bins["pairs"].sum() == 24
    pairs = _table(at, "cmp_table")
    assert len(pairs) == 24 and pairs["B − A"].is_monotonic_increasing
    assert len(at.expander) >= 5  # the biggest regressions, side by side

    # the first is open and drawn; the others are drawn once opened (a rerun each)
    def regressions():
        return [e for e in at.expander if re.match(r"\d+\. ", e.label)][:5]

    assert [bool(e.markdown) for e in regressions()] == [True, False, False, False, False]
    at.session_state["cmp_open_3"] = True
    at.run()
    ok(at)
    assert [bool(e.markdown) for e in regressions()] == [True, False, True, False, False]
    assert any("[row " in m.value for m in regressions()[2].markdown)
    # swapping A and B swaps wins and losses: B's wins become A's, the mean difference flips
    before = list(metrics(at).items())
    at.selectbox(key="cmp_a").set_value("prompt-B")
    at.selectbox(key="cmp_b").set_value("prompt-A").run()
    ok(at)
    after = list(metrics(at).items())
    assert after[1] == ("prompt-A better", str(losses)) and after[1] == before[3]
    assert after[3] == ("prompt-B better", str(wins)) and after[3] == before[1]
    assert after[2] == ("Ties", str(ties))
    assert float(after[4][1]) == pytest.approx(-float(before[4][1]), abs=1e-3)
    # a wider tie margin turns small differences into ties
    at.number_input(key="cmp_margin").set_value(0.2).run()
    assert int(metrics(at)["Ties"]) > ties
    # another column of the user's splits the run too (the demo's answer_type)
    at.selectbox(key="cmp_column").set_value("answer_type").run()
    ok(at)
    assert at.selectbox(key="cmp_a").options[:2] == ["evasive", "off-topic"]
    at.segmented_control(key="cmp_mode").set_value("runs").run()
    assert any("Only one run" in i.value for i in at.info)


def test_compare_two_runs():
    at = app()
    store = RunStore(default_store_path())
    demo = store.load_run(store.list_runs()[0].id)
    run_id = store.create_run("copy", {"backend": "embedded"}, demo.inputs)
    store.append_results(run_id, enumerate(demo.results))
    at = visit(at, "4_Compare.py")
    at.segmented_control(key="cmp_mode").set_value("runs").run()
    ok(at)
    figures = metrics(at)
    assert figures["Pairs"] == "48" and figures["Ties"] == "48"
    assert any("No regressions" in s.value for s in at.success)


# --- runs ---------------------------------------------------------------------------------
def test_runs_rename_export_delete():
    at = visit(app(), "5_Runs.py")
    runs = _table(at, "runs_table")
    assert list(runs["name"]) == [DEMO_RUN_NAME]
    run_id = int(runs["id"][0])
    labels = [b.proto.label for b in at.get("download_button")]
    assert labels == ["CSV", "JSON", "PARQUET", "HTML report"]  # each built when clicked
    at.text_input(key=f"runs_name_{run_id}").input("Renamed <b>demo</b>")
    at.button(key="runs_rename").click().run()
    ok(at)
    assert list(_table(at, "runs_table")["name"]) == ["Renamed <b>demo</b>"]
    assert any("Renamed run" in s.value for s in at.success)
    assert at.button(key="runs_delete").disabled
    at.checkbox(key=f"runs_sure_{run_id}").check().run()
    at.button(key="runs_delete").click().run()
    ok(at)
    assert any("No saved runs" in i.value for i in at.info)
    at.button(key="runs_demo").click().run()
    assert len(_table(at, "runs_table")) == 1


# --- secrets ------------------------------------------------------------------------------
def test_api_key_from_env_is_never_rendered_or_stored(monkeypatch):
    from relevancy.testing.openai_server import OpenAICompatServer

    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    with OpenAICompatServer(api_key=FAKE_KEY) as srv:
        at = choose_toy_backend(app(), srv)
        assert any("OPENAI_API_KEY" in c.value for c in at.sidebar.caption)
        # score on Home with the API backend
        at.button(key="home_score").click().run()
        ok(at)
        assert len(_question_bars(at)) == 2
        assert FAKE_KEY not in _element_texts(at)
        # score the bundled demo on the Dataset page, then visit every page
        visit(at, "1_Dataset.py")
        at.segmented_control(key="_w_ds_source").set_value("Bundled demo").run()
        at.button(key="ds_score").click().run()
        ok(at)
        assert any("Scored 48 rows" in s.value for s in at.success)
        assert FAKE_KEY not in _element_texts(at)
        for page in ("2_Distributions.py", "3_Embeddings.py", "4_Compare.py", "5_Runs.py"):
            visit(at, page)
            assert FAKE_KEY not in _element_texts(at), page
    store = RunStore(default_store_path())
    newest = store.list_runs()[0]
    assert newest.settings["backend"] == "compatible"
    assert newest.settings["key_source"] == "environment"
    assert FAKE_KEY.encode() not in store_bytes(store)  # its segments' columns too
    with sqlite3.connect(store.path) as db:
        dump = "\n".join(db.iterdump())
    assert FAKE_KEY not in dump
    for fmt in ("csv", "json", "parquet"):
        assert FAKE_KEY.encode() not in store.export_bytes(newest.id, fmt)
    from relevancy.report.html import build_report

    assert FAKE_KEY not in build_report(store, newest.id)


def test_typed_api_key_is_kept_out_of_thevisit():
    typed = "sk-TYPED-in-the-password-field-987654321"
    at = app()
    at.sidebar.radio(key="_w_sb_backend").set_value("openai").run()
    assert any("needs an API key" in w.value for w in at.sidebar.warning)
    at.sidebar.text_input(key="sb_api_key_input").input(typed).run()
    ok(at)
    assert at.sidebar.text_input(key="sb_api_key_input").value == ""  # the field is emptied
    assert any("entered in this session" in c.value for c in at.sidebar.caption)
    assert typed not in _element_texts(at)
    visit(at, "5_Runs.py")
    assert any("entered in this session" in c.value for c in at.sidebar.caption)
    assert typed not in _element_texts(at)
    at.sidebar.button(key="sb_forget_key").click().run()
    assert any("needs an API key" in w.value for w in at.sidebar.warning)


# --- scoring modes ------------------------------------------------------------------------
Q = "Where is France?"
ON, ON2, OFF = "France is in western Europe.", "Its capital is Paris.", "I like bananas."
VECTORS = {
    Q: [1.0, 0.0, 0.0],
    "Where is France located?": [0.9, 0.43589, 0.0],
    ON: [0.8, 0.6, 0.0],
    ON2: [0.7, 0.0, 0.71414],
    OFF: [0.0, 1.0, 0.0],
}


def _fake_backends():
    from relevancy import Generation
    from relevancy.testing.fakes import FakeEmbedder, FakeGenerator

    def script(response, n):
        return [Generation("Where is France located?", False)] * n

    return FakeGenerator(script), FakeEmbedder(VECTORS)


def _fake_metric(mode: str):
    from relevancy import AnswerRelevancy

    llm, emb = _fake_backends()
    return AnswerRelevancy(llm=llm, embeddings=emb, cache=False, mode=mode, noncommittal="llm")


def _focus_run(store: RunStore, name: str = "focus run") -> int:
    """A saved run scored in focus mode (fake backends): one answer per row, some padded."""
    import pandas as pd

    answers = [f"{ON} {OFF} {ON2}", f"{ON} {ON2}", OFF]
    inputs = pd.DataFrame({"user_input": [Q] * 3, "response": answers, "id": ["1", "2", "3"]})
    results = _fake_metric("focus").score_many(inputs)
    assert all(r.mode == "focus" and r.parts for r in results)
    run_id = store.create_run(name, {"backend": "embedded", "mode": "auto"}, inputs)
    store.append_results(run_id, enumerate(results))
    return run_id


def test_scoring_mode_control_reaches_the_metric(monkeypatch):
    import relevancy

    llm, emb = _fake_backends()
    monkeypatch.setattr(relevancy.scoring.config, "make_generator", lambda *a, **k: llm)
    monkeypatch.setattr(relevancy.scoring.config, "make_embedder", lambda *a, **k: emb)
    at = app()
    control = at.sidebar.segmented_control(key="_w_sb_mode")
    assert control.value == "auto" and control.options == ["auto", "ragas", "focus", "blend"]
    assert any("**ragas** (auto)" in c.value for c in at.sidebar.caption)
    assert any("**ragas** mode" in c.value for c in at.caption)
    # the home example shows the precomputed demo, made with the default (ragas), and says so
    assert any("ragas mode); press **Score**" in c.value for c in at.caption)
    at.text_area(key="home_question").input(Q)
    at.number_input(key="home_n").set_value(1)
    at.text_area(key="home_answer_0").input(f"{ON} {OFF}")
    control.set_value("focus").run()
    at.button(key="home_score").click().run()
    ok(at)
    assert any("**Mode:** focus" in m.value for m in at.markdown)
    (sentences,) = _sentence_tables(at)
    assert sentences.count("<tr class=") == 2 and "I like bananas." in sentences
    # another mode builds another metric (the cached one is keyed on the mode)
    at.sidebar.segmented_control(key="_w_sb_mode").set_value("ragas").run()
    assert any("New scores: **ragas**" in c.value for c in at.sidebar.caption)
    at.button(key="home_score").click().run()
    ok(at)
    assert any("**Mode:** ragas" in m.value for m in at.markdown)
    # the sentence view stays (every result carries it), without the focus score's columns
    (sentences,) = _sentence_tables(at)
    assert "I like bananas." in sentences and ">without it</th>" not in sentences
    # blend: the score's arithmetic under its sentences
    at.sidebar.segmented_control(key="_w_sb_mode").set_value("blend").run()
    at.button(key="home_score").click().run()
    ok(at)
    assert any("**Mode:** blend" in m.value for m in at.markdown)
    assert any(c.value.startswith("Score = 0.5 × (") for c in at.caption)
    # the mode survives a page switch
    visit(at, "5_Runs.py")
    assert at.sidebar.segmented_control(key="_w_sb_mode").value == "blend"


def test_focus_run_table_and_drilldown_explain_the_sentences():
    at = app()
    run_id = _focus_run(RunStore(default_store_path()))
    at.session_state["active_run"] = run_id
    visit(at, "1_Dataset.py")
    table = _table(at, f"ds_table_{run_id}")
    assert list(table.columns[:7]) == [
        "row",
        "id",
        "score",
        "reason",
        "Ragas value",
        "mode",
        "question",
    ]
    assert sorted(table["row"]) == [1, 2, 3]  # shown 1-based (lowest score first)
    assert set(table["mode"]) == {"focus"}
    assert (table["Ragas value"] != table["score"]).any()
    assert any("**focus** mode" in c.value for c in at.caption)
    assert "Ragas mean" in {m.label for m in at.metric}
    at.selectbox(key=f"ds_inspect_{run_id}").set_value(0).run()  # the padded answer
    ok(at)
    (sentences,) = _sentence_tables(at)
    rows = sentences.split("<tr class=")[1:]
    assert [ON in rows[0], OFF in rows[1], ON2 in rows[2]] == [True] * 3
    assert [r.split('"')[1] for r in rows] == ["", "off", ""]  # the banana row is marked
    assert "<b>0.80</b>" in rows[0] and "<b>0.00</b>" in rows[1] and "<b>0.70</b>" in rows[2]
    assert 'rel-flag off">off topic, lowers the score</span>' in rows[1]
    assert "<th" in sentences and ">without it</th>" in sentences
    assert any("Of 3 sentences: 1 off topic" in c.value for c in at.caption)
    assert any(c.value.startswith("Score = 0.7 × (") for c in at.caption)
    assert any(c.value.startswith("Ragas value = ") for c in at.caption)  # the questions' mean
    assert any("**Ragas value:**" in m.value for m in at.markdown)
    assert len(_question_bars(at)) == 1  # the generated questions are still there


def test_a_store_from_the_previous_version_opens_everywhere():
    """A store written before the typed-column store (one JSON per row, and results saved
    before modes existed) is migrated on first open and every page shows it."""
    import shutil

    path = default_store_path()
    shutil.copy(ROOT / "tests" / "data" / "store_v1.sqlite3", path)
    with sqlite3.connect(path) as db:
        db.execute("UPDATE rows SET result = json_remove(result, '$.mode', '$.ragas_value')")
    at = app()  # migrates; the store had the demo imported before, so it is not added again
    run = 1  # "v1 run, complete": 6 rows, two variants, a user column "kind"
    at.session_state["active_run"] = run
    visit(at, "1_Dataset.py")
    table = _table(at, f"ds_table_{run}")
    assert len(table) == 6 and set(table["mode"]) == {"ragas"}
    assert "Ragas value" not in table.columns and "kind" in table.columns
    assert any("**ragas** mode" in c.value for c in at.caption)
    at.selectbox(key=f"ds_inspect_{run}").set_value(0).run()
    ok(at)
    assert any("**Mode:** ragas" in m.value for m in at.markdown)
    assert any(c.value.startswith("Score = ") for c in at.caption)
    assert any("kind: good" in c.value for c in at.caption)  # the user's own column
    visit(at, "2_Distributions.py")
    assert list(_table(at, "dist_table")["mode"]) == ["ragas"] * 3
    visit(at, "3_Embeddings.py")
    assert _vega(at)[0][0]["layer"][0]["mark"]["type"] == "rule"  # the links
    visit(at, "5_Runs.py")
    runs = _table(at, "runs_table")
    assert list(runs["name"]) == ["v1 run, partial", "v1 run, complete"]
    assert list(runs["mode"]) == ["ragas", "ragas"] and "ragas_mean" not in runs.columns
    at.sidebar.selectbox(key="_w_active_run").set_value(run).run()
    ok(at)
    from relevancy.report.html import build_report

    assert "Lowest 6 rows" in build_report(RunStore(path), run)
    visit(at, "4_Compare.py")
    assert int({m.label: m.value for m in at.metric}["Pairs"]) == 3
    assert not any("mean different things" in w.value for w in at.warning)


def test_runs_distributions_and_compare_across_modes():
    at = app()
    store = RunStore(default_store_path())
    focus = _focus_run(store)
    ragas = store.create_run("ragas run", {"backend": "embedded"}, store.inputs(focus))
    store.append_results(ragas, enumerate(_fake_metric("ragas").score_many(store.inputs(focus))))
    visit(at, "5_Runs.py")
    runs = _table(at, "runs_table")
    assert list(runs["mode"]) == ["ragas", "focus", "ragas"]  # newest first, the demo last
    assert runs["ragas_mean"].notna().all()
    at.sidebar.selectbox(key="_w_active_run").set_value(focus).run()
    assert "Mean Ragas value" in {m.label for m in at.metric}
    # distributions of the focus run: mode and Ragas mean in the summary; switch to Ragas
    at.session_state["active_run"] = focus
    visit(at, "2_Distributions.py")
    summary = _table(at, "dist_table")
    assert list(summary["mode"]) == ["focus"] and summary["ragas_mean"].notna().all()
    at.segmented_control(key="dist_value").set_value("Ragas value").run()
    ok(at)
    assert "ragas_mean" not in _table(at, "dist_table").columns
    # the focus run against the ragas run: warned, and compared on the Ragas value
    at.session_state["active_run"] = ragas
    visit(at, "4_Compare.py")
    at.segmented_control(key="cmp_mode").set_value("runs").run()
    at.selectbox(key="cmp_run_a").set_value(focus)
    at.selectbox(key="cmp_run_b").set_value(ragas).run()
    ok(at)
    assert any("mean different things" in w.value for w in at.warning)
    pairs = _table(at, "cmp_table")
    assert f"#{focus} (Ragas value)" in pairs.columns
    assert list(pairs[f"#{focus} mode"]) == ["focus"] * 3
    assert (pairs["B − A"].abs() < 1e-9).all()  # same generations: the Ragas values agree
    # two runs in the same (focus) mode: no warning, a choice of what to compare
    again = _focus_run(store, "focus again")
    at.run()
    at.selectbox(key="cmp_run_b").set_value(again).run()
    ok(at)
    assert not any("mean different things" in w.value for w in at.warning)
    pairs = _table(at, "cmp_table")
    assert [f"#{focus}", f"#{again}", f"#{focus} Ragas value"] == list(pairs.columns[2:5])
    at.segmented_control(key="cmp_value").set_value("Ragas value").run()
    ok(at)
    assert f"#{focus} (Ragas value)" in _table(at, "cmp_table").columns


# --- rough edges a new user hit -----------------------------------------------------------
def test_compare_says_what_it_needs_and_offers_a_run_with_variants():
    at = app()
    store = RunStore(default_store_path())
    demo = store.load_run(DEMO)
    one = store.create_run(
        "one variant",
        {"backend": "embedded"},
        demo.inputs.head(4).drop(columns=["variant", "answer_type", "language"]),
    )
    store.append_results(one, enumerate(demo.results[:4]))
    at.session_state["active_run"] = one
    visit(at, "4_Compare.py")
    # no variants in the active run: it is compared with the newest other run on shared
    # questions (here the demo, 4 questions in common), not with nothing
    assert at.segmented_control(key="cmp_mode").value == "runs"
    assert {m.label: m.value for m in at.metric}["Pairs"] == "4"
    # asked for two variants, Compare says what it needs and offers the demo's
    at.segmented_control(key="cmp_mode").set_value("variants").run()
    assert any("no column with two values to compare" in i.value for i in at.info)
    at.button(key="cmp_switch").click().run()
    ok(at)
    assert at.session_state["active_run"] == DEMO
    assert {m.label: m.value for m in at.metric}["Pairs"] == "24"


def test_home_example_picker_follows_the_question():
    at = app()
    assert at.selectbox(key="home_example").value != "(your own question)"
    at.text_area(key="home_question").input("What is my own question?").run()
    ok(at)
    assert at.selectbox(key="home_example").value == "(your own question)"
    at.selectbox(key="home_example").set_value("When was the first super bowl?").run()
    assert at.text_area(key="home_question").value == "When was the first super bowl?"


def test_runs_page_acts_on_the_active_run():
    at = app()
    store = RunStore(default_store_path())
    copy = store.create_run("a copy", {"backend": "embedded"}, store.inputs(DEMO).head(2))
    at.session_state["active_run"] = DEMO
    visit(at, "5_Runs.py")
    # the run's heading: a subheader with no anchor (a Markdown heading's is a link named by it)
    headings = [h for h in at.subheader if h.value.startswith("#")]
    assert len(headings) == 1 and f"#{DEMO} ·" in headings[0].value
    assert "complete" in headings[0].value and headings[0].proto.hide_anchor
    at.sidebar.selectbox(key="_w_active_run").set_value(copy).run()
    ok(at)
    assert any(f"#{copy}" in h.value and "empty" in h.value for h in at.subheader)
