"""The Embeddings page's row picker after a click on the map: the clicked point's row opens,
and a row picked afterwards in the picker stays picked (the chart sends its selection again on
every rerun; only a new selection may move the picker). Issue 46, item 8.

AppTest cannot click a chart, so the browser's part is played here: every run after the click
sends the chart's selection as its widget state, as the browser does: the 2-D map's (Vega-Lite:
a clicked point's ``row``, a dragged box's x and y ranges) and the 3-D map's (plotly: each
point's ``customdata``)."""

from __future__ import annotations

import json

import pyarrow as pa
from streamlit.proto.WidgetStates_pb2 import WidgetStates

from helpers import DEMO, app, ok, visit

KEY = f"emb_row_{DEMO}"


def _send(at, kind: str, key: str, selection: dict):
    """Rerun ``at`` with the widgets' values and the ``kind`` chart ``key``'s ``selection``."""
    states = at._tree.get_widget_states()
    state = states.widgets.add()
    state.id = next(c.proto.id for c in at.get(kind) if f"-{key}" in c.proto.id)
    state.string_value = json.dumps({"selection": selection})
    return ok(at._run(WidgetStates(widgets=list(states.widgets))))


def _click(at, row: int):
    """A click on a point of ``row`` on the 2-D map."""
    return _send(at, "vega_lite_chart", "emb_map", {"pick": [{"row": row}], "box": {}})


def _map(at):
    (chart,) = at.get("vega_lite_chart")
    return pa.ipc.open_stream(chart.proto.data.data).read_all().to_pandas()


def _drilled_row(at) -> int:
    return at.selectbox(key=KEY).value


def test_a_row_picked_after_a_click_stays_picked():
    at = visit(app(), "3_Embeddings.py")
    assert _drilled_row(at) == 0
    _click(at, 7)  # a click on a point of row 8
    assert _drilled_row(at) == 7
    at.selectbox(key=KEY).set_value(12)
    _click(at, 7)  # the chart still holds the click
    assert _drilled_row(at) == 12
    assert any("row 13" in c.value for c in at.caption)  # the drill-down is row 12's
    _click(at, 7)  # a rerun of anything else: still row 12
    assert _drilled_row(at) == 12
    _click(at, 20)  # a new click moves the picker
    assert _drilled_row(at) == 20
    _click(at, 0)  # the first row's point too
    assert _drilled_row(at) == 0


def test_a_box_offers_the_rows_of_the_points_inside_it_and_keeps_the_one_picked():
    at = visit(app(), "3_Embeddings.py")
    points = _map(at)
    # a box round the lower left quarter of the map: every row with a point inside is offered
    x0, x1 = float(points["x"].min()), float(points["x"].median())
    y0, y1 = float(points["y"].min()), float(points["y"].median())
    inside = points["x"].between(x0, x1) & points["y"].between(y0, y1)
    expected = list(dict.fromkeys(points.loc[inside, "row"].astype(int)))
    assert 1 < len(expected) < points["row"].nunique()
    box = {"pick": [], "box": {"x": [x1, x0], "y": [y0, y1]}}  # a box dragged right to left
    _send(at, "vega_lite_chart", "emb_map", box)
    picker = at.selectbox(key=KEY)
    assert picker.value == expected[0]
    assert [o.split(" · ")[0] for o in picker.options] == [f"row {r + 1}" for r in expected]
    assert any(f"{len(expected)} rows selected" in c.value for c in at.caption)
    at.selectbox(key=KEY).set_value(expected[-1])
    _send(at, "vega_lite_chart", "emb_map", box)
    assert _drilled_row(at) == expected[-1]
    # the box cleared (a double click): every row is offered again, the one picked kept
    _send(at, "vega_lite_chart", "emb_map", {"pick": [], "box": {}})
    assert _drilled_row(at) == expected[-1] and len(at.selectbox(key=KEY).options) == 48


def test_a_selection_on_the_3d_map_offers_its_rows():
    at = visit(app(), "3_Embeddings.py")
    at.segmented_control(key="emb_dims").set_value(3).run()
    points = [
        {"point_index": i, "curve_number": 1, "customdata": [r, 0]}
        for i, r in enumerate([3, 9, 14])
    ]
    _send(at, "plotly_chart", "emb_chart", {"points": points, "box": [], "lasso": []})
    picker = at.selectbox(key=KEY)
    assert picker.value == 3
    assert [o.split(" · ")[0] for o in picker.options] == ["row 4", "row 10", "row 15"]


def test_a_box_is_not_carried_to_another_projection_or_run():
    """A box drawn on one map is that map's: after another projection (or colouring, or
    run) the map is new, nothing is selected, and the row picked stays picked."""
    at = visit(app(), "3_Embeddings.py")
    points = _map(at)
    box = {"x": [float(points["x"].min()), float(points["x"].max())], "y": [-1e9, 1e9]}
    _send(at, "vega_lite_chart", "emb_map", {"pick": [], "box": box})
    assert any("rows selected" in c.value for c in at.caption)
    picked = _drilled_row(at)
    at.segmented_control(key="emb_method").set_value("tsne").run()
    ok(at)
    assert not any("rows selected" in c.value for c in at.caption)
    assert _drilled_row(at) == picked and len(at.selectbox(key=KEY).options) == 48
