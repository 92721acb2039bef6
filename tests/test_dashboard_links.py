"""Links to a run and a row under Streamlit's AppTest: the URL follows the pages as a user moves
through them, and a URL opened in a fresh session (``at.query_params``) opens the same run and
drill-down, or says in one line what is wrong with it.
"""

from __future__ import annotations

import html
import re

import pytest
from streamlit.testing.v1 import AppTest

from relevancy.paths import default_store_path
from relevancy.runs import RowQuery, RunStore, demo_results

from helpers import DEMO, app, ok, visit

pytestmark = pytest.mark.slow


def _copy_box(at) -> list[str]:
    """The addresses in the page's "Link to this row" boxes (their copy buttons' data)."""
    bodies = [h.proto.body for h in at.get("html")]
    return [html.unescape(u) for b in bodies for u in re.findall(r'data-url="([^"]*)"', b)]


def _link_warnings(at: AppTest) -> list[str]:
    return [w.value for w in at.warning if w.icon == "🔗"]


def _drilled(at: AppTest) -> tuple[str, str, str]:
    """The drill-down's row (its caption's first part), question and score, as drawn."""
    caption = next(c.value for c in at.caption if c.value.startswith("row "))
    question = at.text[0].value  # the first text on the page: the drill-down's question
    score = next(m.value for m in at.metric if m.label == "Score")
    return caption.split(" · ")[0], question, score


def test_the_url_follows_the_run_and_the_row_as_a_user_moves():
    at = app()
    assert at.query_params == {"run": str(DEMO)}  # Home: the active run
    visit(at, "1_Dataset.py")
    shown = at.selectbox(key=f"ds_inspect_{DEMO}").value  # the first row of the grid
    assert at.query_params == {"run": str(DEMO), "row": str(shown + 1)}  # 1-based, as on screen
    at.selectbox(key=f"ds_inspect_{DEMO}").set_value(36).run()
    ok(at)
    assert at.query_params == {"run": str(DEMO), "row": "37"}
    assert _drilled(at)[0] == "row 37"
    # the copy box: relative without the browser's address, absolute with it
    assert _copy_box(at) == [f"Dataset?run={DEMO}&row=37"]
    assert any("Link to this row" in c.value for c in at.caption)
    at.context["url"] = "http://localhost:8501/Dataset"
    at.run()
    assert _copy_box(at) == [f"http://localhost:8501/Dataset?run={DEMO}&row=37"]
    # no drill-down: no row in the URL
    at.text_input(key="ds_search").input("no-such-words-anywhere").run()
    ok(at)
    assert at.query_params == {"run": str(DEMO)}
    at.text_input(key="ds_search").input("").run()
    assert at.query_params == {"run": str(DEMO), "row": "37"}  # the picked row is kept
    # other pages carry the run only
    visit(at, "2_Distributions.py")
    assert at.query_params == {"run": str(DEMO)}
    assert not _link_warnings(at)


def test_a_copied_row_link_opens_the_same_drill_down_in_a_new_session():
    at = app("1_Dataset.py")
    at.selectbox(key=f"ds_inspect_{DEMO}").set_value(36).run()
    ok(at)
    copied = dict(at.query_params)
    before = _drilled(at)
    opened = app("1_Dataset.py", query=copied)
    assert opened.selectbox(key=f"ds_inspect_{DEMO}").value == 36
    assert _drilled(opened) == before
    expected = demo_results()[36]
    assert before[1] == expected.user_input and before[2] == f"{expected.value:.3f}"
    assert opened.query_params == copied and not _link_warnings(opened)


def test_a_link_opens_its_run_as_the_active_run_on_any_page():
    store = RunStore(default_store_path())
    app()  # the demo is imported on first start
    from relevancy.runs import import_demo

    newer = import_demo(store, force=True)
    assert newer is not None and newer > DEMO
    # without a link the newest run is active; the link opens the older one
    assert app("2_Distributions.py").query_params == {"run": str(newer)}
    at = app("2_Distributions.py", query={"run": str(DEMO)})
    assert at.session_state["active_run"] == DEMO
    assert at.selectbox(key="_w_active_run").value == DEMO  # the sidebar shows it
    assert at.query_params == {"run": str(DEMO)} and not _link_warnings(at)
    # a row means nothing here: ignored without a word, and dropped from the URL
    at = app("4_Compare.py", query={"run": str(DEMO), "row": "3"})
    assert at.query_params == {"run": str(DEMO)} and not _link_warnings(at)
    # picking another run in the sidebar updates the URL
    at.selectbox(key="_w_active_run").set_value(newer).run()
    ok(at)
    assert at.query_params == {"run": str(newer)}


@pytest.mark.parametrize("page", ["2_Distributions.py", "5_Runs.py"])
def test_a_page_without_a_drill_down_opens_no_row(page):
    default = app("1_Dataset.py").selectbox(key=f"ds_inspect_{DEMO}").value
    # a row out of range, or not a number, is ignored without a word here
    for row in ("49", "x"):
        at = app(page, query={"run": str(DEMO), "row": row})
        assert not _link_warnings(at) and at.query_params == {"run": str(DEMO)}
    # a good row is not held for the Dataset page either: it opens on its own first row
    row = 40 if default != 39 else 41
    at = app(page, query={"run": str(DEMO), "row": str(row)})
    assert "link_row" not in at.session_state
    visit(at, "1_Dataset.py")
    assert at.selectbox(key=f"ds_inspect_{DEMO}").value == default
    assert at.query_params == {"run": str(DEMO), "row": str(default + 1)}


def test_a_link_to_a_deleted_run_says_so_and_the_page_still_works():
    app()
    store = RunStore(default_store_path())
    gone = store.create_run("soon gone", {"backend": "embedded"}, store.inputs(DEMO).head(3))
    store.delete(gone)
    at = app("1_Dataset.py", query={"run": str(gone), "row": "2"})
    (warning,) = _link_warnings(at)
    assert f"Run #{gone} from the link is not in this run store" in warning
    assert "Active run" in warning  # what to do
    # the page shows the active run and its drill-down, and the URL says so
    assert at.selectbox(key="_w_active_run").value == DEMO
    row = at.selectbox(key=f"ds_inspect_{DEMO}").value
    assert at.query_params == {"run": str(DEMO), "row": str(row + 1)}
    # the warning stays while the page shows what it showed for the link (a rerun, a filter
    # that keeps the row)...
    at.run()
    at.selectbox(key="ds_sort").set_value(at.selectbox(key="ds_sort").value).run()
    ok(at)
    assert len(_link_warnings(at)) == 1
    # ...and goes once the user picks another row
    at.selectbox(key=f"ds_inspect_{DEMO}").set_value(row + 1).run()
    ok(at)
    assert not _link_warnings(at)


@pytest.mark.parametrize(
    ("params", "says"),
    [
        ({"run": "abc", "row": "3"}, "is not a run number"),
        ({"run": str(DEMO), "row": "49"}, "Run #1 has 48 rows, so there is no row 49"),
        ({"run": str(DEMO), "row": "x"}, "is not a row number"),
        ({"run": str(DEMO), "row": "0"}, "there is no row 0"),
    ],
)
def test_a_bad_link_gives_one_line_and_the_page_still_works(params, says):
    at = app("1_Dataset.py", query=params)
    (warning,) = _link_warnings(at)
    assert says in warning
    row = at.selectbox(key=f"ds_inspect_{DEMO}").value  # the drill-down still shows a row
    assert at.query_params == {"run": str(DEMO), "row": str(row + 1)}
    assert _drilled(at)[0] == f"row {row + 1}"


def test_a_link_to_a_row_not_scored_yet_says_resume():
    app()
    store = RunStore(default_store_path())
    demo = store.load_run(DEMO)
    run_id = store.create_run("partial", {"backend": "embedded"}, demo.inputs.head(4))
    store.append_results(run_id, [(0, demo.results[0]), (2, demo.results[2])])
    at = app("1_Dataset.py", query={"run": str(run_id), "row": "2"})
    (warning,) = _link_warnings(at)
    assert f"Row 2 of run #{run_id} is not scored yet (2 of 4 rows are)" in warning
    assert at.session_state["active_run"] == run_id
    assert at.selectbox(key=f"ds_inspect_{run_id}").value in (0, 2)
    assert (
        app("1_Dataset.py", query={"run": str(run_id), "row": "3"})
        .selectbox(key=f"ds_inspect_{run_id}")
        .value
        == 2
    )


def test_a_linked_row_off_the_grids_page_is_offered_until_another_is_picked():
    from relevancy.testing.synthetic import write_synthetic_run

    app()
    store = RunStore(default_store_path())
    run_id = write_synthetic_run(store, 1200, name="three pages")
    grid = store.columns(run_id, ["score"], query=RowQuery(), limit=500)  # as the grid sorts
    first_page = set(grid["row"].astype(int))
    row = next(r for r in range(1200) if r not in first_page)
    at = app("1_Dataset.py", query={"run": str(run_id), "row": str(row + 1)})
    assert not _link_warnings(at)
    picker = at.selectbox(key=f"ds_inspect_{run_id}")
    assert picker.value == row and picker.options[0].endswith("(from the link)")
    assert _drilled(at)[0] == f"row {row + 1}"
    assert at.query_params == {"run": str(run_id), "row": str(row + 1)}
    # picking a row of the grid lets the linked one go
    other = sorted(first_page)[3]
    picker.set_value(other).run()
    ok(at)
    assert at.query_params == {"run": str(run_id), "row": str(other + 1)}
    at.run()
    assert not any(
        o.endswith("(from the link)") for o in at.selectbox(key=f"ds_inspect_{run_id}").options
    )


def test_back_and_forward_reopen_the_row_in_the_url():
    """The browser's history sends an earlier URL in the same session: its row opens again."""
    at = app("1_Dataset.py")
    at.selectbox(key=f"ds_inspect_{DEMO}").set_value(10).run()
    at.selectbox(key=f"ds_inspect_{DEMO}").set_value(20).run()
    assert at.query_params == {"run": str(DEMO), "row": "21"}
    at.query_params["row"] = "11"  # Back
    at.run()
    ok(at)
    assert at.selectbox(key=f"ds_inspect_{DEMO}").value == 10
    assert _drilled(at)[0] == "row 11" and not _link_warnings(at)


def test_embeddings_and_compare_link_their_rows_to_the_dataset_drill_down():
    at = app("3_Embeddings.py")
    at.selectbox(key=f"emb_row_{DEMO}").set_value(5).run()
    ok(at)
    assert _copy_box(at) == [f"Dataset?run={DEMO}&row=6"]
    at = app("4_Compare.py")
    links = [
        (int(m.group(1)), int(m.group(2)))
        for md in at.markdown
        for m in re.finditer(r"\[row (\d+)\]\(Dataset\?run=\d+&row=(\d+)\)", md.value)
    ]
    assert links and all(shown == linked for shown, linked in links)
    # the first regression's rows are the rows of its question
    question = at.expander[0].label.split(" · ", 1)[1]
    for _, row in links[:2]:
        assert demo_results()[row - 1].user_input.startswith(question[:60])
