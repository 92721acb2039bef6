"""The small disagreements of issue 24, item 4: two numbers or two statuses on the pages that
must say the same thing (or say what each counts), and what the pages show while a user waits.
Each test opens the real dashboard under AppTest (reached from ``app.py``)."""

from __future__ import annotations

import re

import pytest

from relevancy.paths import default_store_path
from relevancy.runs import RunStore
from relevancy.scoring.estimate import estimate, record_speed

from helpers import app, choose_toy_backend, metrics, toy_metric, visit, write_rows

pytestmark = pytest.mark.slow


def test_distributions_labels_both_medians():
    at = visit(app(), "2_Distributions.py")
    shown = metrics(at)
    assert "Median" not in shown  # an unlabelled median beside another one
    card = shown["Median, all scored rows"]
    text = " ".join(m.value for m in at.markdown)
    assert "Chance level" in text  # the demo has its chance level
    assert "median Ragas value of its " in text and "answered rows" in text
    assert card  # both are there, each saying what it counts


def test_home_and_the_sidebar_give_the_same_judge_check():
    at = app()  # the embedded default, no check run on this machine yet
    home = next(c.value for c in at.main.caption if "judge check" in c.value)
    side = next(c.value for c in at.sidebar.caption if "udge check" in c.value)
    figure = "judge check 0.68 on 40 pairs, measured for the embedded default"
    assert figure in home and figure.capitalize() in side
    assert "not yet run on this machine" in home and "not yet run on this machine" in side
    assert "not run for these models yet" not in side


def _estimate(at) -> str:
    return next(c.value for c in at.caption if "**Estimate:**" in c.value)


def test_the_estimate_learns_from_the_last_run_and_counts_cached_rows(tmp_path, toy_server):
    src = write_rows(
        tmp_path / "twelve.csv",
        [
            {"question": f"What is fact number {i}?", "answer": f"Fact {i} is a fact."}
            for i in range(12)
        ],
    )
    at = visit(choose_toy_backend(app(), toy_server), "1_Dataset.py")
    at.file_uploader(key="ds_upload").upload("twelve.csv", src.read_bytes(), "text/csv").run()
    before = _estimate(at)
    assert "time unknown" in before and "rough" in before and "in the cache" not in before
    at.button(key="ds_score").click().run()
    assert any("Scored 12 rows" in s.value for s in at.success)
    # the same file again, as a user uploads it a second time
    again = visit(choose_toy_backend(app(), toy_server), "1_Dataset.py")
    again.file_uploader(key="ds_upload").upload("twelve.csv", src.read_bytes(), "text/csv").run()
    after = _estimate(again)
    assert "12 rows are in the cache already" in after
    assert "measured on 12 rows" in after and "rough" not in after


def test_a_run_store_remembers_the_speed_for_another_cache(tmp_path, toy_server):
    store = RunStore(tmp_path / "runs.sqlite3")
    first = toy_metric(toy_server, cache=tmp_path / "one")
    record_speed(first, rows=10, seconds=30.0, store=store)
    other = toy_metric(toy_server, cache=tmp_path / "two")  # a fresh cache, the same machine
    assert "time unknown" in estimate(other, 4).describe()
    plan = estimate(other, 4, store=store)
    assert plan.seconds_per_row == 3.0 and "measured on 10 rows" in plan.describe()


def test_progress_moves_from_the_first_row_on(tmp_path, toy_server, monkeypatch):
    from streamlit.delta_generator import DeltaGenerator

    texts: list[str] = []
    original = DeltaGenerator.progress

    def progress(self, value, text=None):
        texts.append(str(text))
        return original(self, value, text=text)

    monkeypatch.setattr(DeltaGenerator, "progress", progress)
    src = write_rows(
        tmp_path / "six.csv",
        [{"question": f"What is fact {i}?", "answer": f"Fact {i} is true."} for i in range(6)],
    )
    at = visit(choose_toy_backend(app(), toy_server), "1_Dataset.py")
    at.file_uploader(key="ds_upload").upload("six.csv", src.read_bytes(), "text/csv").run()
    at.button(key="ds_score").click().run()
    assert any("Scored 6 rows" in s.value for s in at.success)
    counted = [int(t.split()[1]) for t in texts if t.startswith("Scored ")]
    assert counted[0] == 1 and set(counted) == {1, 2, 3, 4, 5, 6}  # each row, not by chunks


def _scrolls(at) -> list[str]:
    return [h.proto.body for h in at.get("html") if "scrollIntoView" in h.proto.body]


def test_a_row_link_scrolls_to_the_drill_down():
    at = app("1_Dataset.py", query={"run": "1", "row": "30"})
    (script,) = _scrolls(at)
    assert 'getElementById("drill-down")' in script
    heading = next(h for h in at.subheader if h.value == "Drill down")
    assert heading.proto.anchor == "drill-down"
    at.selectbox(key="ds_inspect_1").set_value(3).run()  # a row picked by hand: no jump
    assert not _scrolls(at)


def test_the_upload_score_button_says_score_again_once_scored(tmp_path, toy_server):
    src = write_rows(
        tmp_path / "three.csv",
        [{"question": f"What is fact {i}?", "answer": f"Fact {i} is true."} for i in range(3)],
    )
    at = visit(choose_toy_backend(app(), toy_server), "1_Dataset.py")
    at.file_uploader(key="ds_upload").upload("three.csv", src.read_bytes(), "text/csv").run()
    assert at.button(key="ds_score").label == "Score 3 rows"
    at.button(key="ds_score").click().run()
    assert any("Scored 3 rows" in s.value for s in at.success)
    again = at.button(key="ds_score")
    assert again.label == "Score again" and again.proto.type == "secondary"
    assert "scored as run #2" in again.help


def test_agreement_warns_when_the_labels_are_too_few():
    at = app()
    store = RunStore(default_store_path())
    demo = store.load_run(1)
    few = store.create_run("four labels", {}, demo.inputs.iloc[[0, 1, 4, 5]].reset_index(drop=True))
    store.append_results(few, enumerate([demo.results[i] for i in (0, 1, 4, 5)]))
    at.session_state["active_run"] = few
    visit(at, "6_Agreement.py")
    (warning,) = [w.value for w in at.warning if "too few" in w.value]
    assert "**4 labelled rows**" in warning and "Label more rows" in warning
    at.session_state["active_run"] = 1  # the demo: 48 labels, from 24 questions
    visit(at, "6_Agreement.py")
    assert not any("too few" in w.value or "could be anywhere" in w.value for w in at.warning)


def test_a_first_umap_says_it_has_no_estimate_yet_and_learns(monkeypatch):
    import time

    from relevancy.analysis import projection

    def slow(matrix, method="pca", dims=2):  # the first UMAP's minutes, in seconds
        time.sleep(2.5)
        return projection.pca(matrix, dims)

    monkeypatch.setattr(projection, "project", slow)
    at = visit(app(), "3_Embeddings.py")
    at.segmented_control(key="emb_method").set_value("umap").run()
    (first,) = [c.value for c in at.caption if "UMAP projection of" in c.value]
    # no measurement here yet: no figure it could not back ("about 2 min" took 23 s)
    assert "expected about" not in first and "no UMAP measured on this machine yet" in first
    assert "compiles its code" in first
    at.segmented_control(key="emb_dims").set_value(3).run()  # another projection: measured now
    (second,) = [c.value for c in at.caption if "UMAP projection of" in c.value]
    # the first one's measured time: its 2.5 s, and whatever a loaded machine adds
    took = re.search(r"the last one here took (\d+) s", second)
    assert took and 2 <= int(took[1]) < 90, second
