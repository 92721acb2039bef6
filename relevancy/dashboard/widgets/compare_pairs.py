"""The Compare page's pairs, kept between reruns: pairing a million rows' two sides takes a
second, and a tie margin changed, a regression opened or a visit again changes no pair. The
pairs are made once per pair of sides (their runs' versions, column, values and rows) and
value compared; each rerun only sets the outcomes at its tie margin."""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from relevancy.analysis.compare import outcomes, pair_rows
from relevancy.dashboard.widgets.state import get_store

__all__ = ["paired_sides"]


@st.cache_resource(max_entries=4, show_spinner=False)
def _pairs(
    key: tuple[Any, ...], _a: pd.DataFrame, _b: pd.DataFrame, value: str, keys: tuple, text: bool
) -> pd.DataFrame:
    return pair_rows(_a, _b, value=value, keys=keys, text=text)


def paired_sides(
    sides: Any, *, tie_margin: float, value: str, keys: tuple[str, ...], text: bool
) -> pd.DataFrame:
    """:func:`relevancy.analysis.compare.pair_rows` of ``sides`` (a
    :class:`~relevancy.dashboard.widgets.compare_picker.Sides`) at ``tie_margin``."""
    store = get_store()
    key = (
        str(store.path),
        sides.run_a,
        store.version(sides.run_a),
        sides.run_b,
        store.version(sides.run_b),
        sides.column,
        sides.label_a,
        sides.label_b,
        st.session_state.get("cmp_run_variant"),
        len(sides.frame_a),
        len(sides.frame_b),
    )
    paired = _pairs(key, sides.frame_a, sides.frame_b, value, tuple(keys), text)
    return paired.assign(outcome=outcomes(paired["diff"].to_numpy(dtype=float), tie_margin))
