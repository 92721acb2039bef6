"""The Embeddings page's row picker after a click on the map: the clicked point's row opens,
and a row picked afterwards in the picker stays picked (the chart sends its selection again on
every rerun; only a new selection may move the picker). Issue 46, item 8.

AppTest cannot click a plotly chart, so the browser's part is played here: every run after the
click sends the chart's selection as its widget state, as the browser does."""

from __future__ import annotations

import json

from streamlit.proto.WidgetStates_pb2 import WidgetStates

from helpers import DEMO, app, ok, visit

KEY = f"emb_row_{DEMO}"


def _chart_id(at) -> str:
    return next(c.proto.id for c in at.get("plotly_chart") if c.proto.id.endswith("emb_chart"))


def _run(at, rows: list[int]):
    """Rerun ``at`` with the widgets' values and the chart's selection of ``rows``' points (a
    click on one point, a lasso round several)."""
    states = at._tree.get_widget_states()
    state = states.widgets.add()
    state.id = _chart_id(at)
    points = [
        {"point_index": i, "curve_number": 1, "customdata": [r, 0]} for i, r in enumerate(rows)
    ]
    state.string_value = json.dumps(
        {
            "selection": {
                "points": points,
                "point_indices": list(range(len(rows))),
                "box": [],
                "lasso": [],
            }
        }
    )
    return ok(at._run(WidgetStates(widgets=list(states.widgets))))


def _drilled_row(at) -> int:
    return at.selectbox(key=KEY).value


def test_a_row_picked_after_a_click_stays_picked():
    at = visit(app(), "3_Embeddings.py")
    assert _drilled_row(at) == 0
    _run(at, [7])  # a click on a point of row 8
    assert _drilled_row(at) == 7
    at.selectbox(key=KEY).set_value(12)
    _run(at, [7])  # the chart still holds the click
    assert _drilled_row(at) == 12
    assert any("row 13" in c.value for c in at.caption)  # the drill-down is row 12's
    _run(at, [7])  # a rerun of anything else: still row 12
    assert _drilled_row(at) == 12
    _run(at, [20])  # a new click moves the picker
    assert _drilled_row(at) == 20


def test_a_lasso_offers_its_rows_and_keeps_the_one_picked_among_them():
    at = visit(app(), "3_Embeddings.py")
    _run(at, [3, 9, 14])
    picker = at.selectbox(key=KEY)
    assert picker.value == 3 and [o.split(" · ")[0] for o in picker.options] == [
        "row 4",
        "row 10",
        "row 15",
    ]
    at.selectbox(key=KEY).set_value(14)
    _run(at, [3, 9, 14])
    assert _drilled_row(at) == 14
