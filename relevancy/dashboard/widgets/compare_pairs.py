"""The Compare page's pairs, kept between reruns: pairing a million rows' two sides takes a
second, and a tie margin changed, a regression opened or a visit again changes no pair. The
pairs are made once per pair of sides (their runs' versions, column, values and rows) and
value compared; each rerun only sets the outcomes at its tie margin."""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from relevancy.analysis.compare import ignored_ids, outcomes, pair_rows, pairing_keys
from relevancy.dashboard.widgets.state import get_store

__all__ = ["paired_sides", "pairing"]


@st.cache_resource(max_entries=4, show_spinner=False)
def _pairs(
    key: tuple[Any, ...], _a: pd.DataFrame, _b: pd.DataFrame, value: str, keys: tuple, text: bool
) -> pd.DataFrame:
    return pair_rows(_a, _b, value=value, keys=keys, text=text)


def _key(sides: Any) -> tuple[Any, ...]:
    """What the pairs depend on: both runs' versions, the column, its values and the rows."""
    store = get_store()
    return (
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


@st.cache_resource(max_entries=4, show_spinner=False)
def _pairing(
    key: tuple[Any, ...], _a: pd.DataFrame, _b: pd.DataFrame, within: bool, column: str
) -> tuple[tuple[str, ...], str | None]:
    keys = pairing_keys(_a, _b, within=within, column=column)
    return keys, ignored_ids(_a, _b, paired_on=keys)


def pairing(sides: Any, *, within: bool) -> tuple[tuple[str, ...], str | None]:
    """What ``sides`` pair on (:func:`~relevancy.analysis.compare.pairing_keys`) and the id
    column set aside, if one was (:func:`~relevancy.analysis.compare.ignored_ids`), kept
    between reruns (each reads every row's ids and questions: 0.4 s at a million rows)."""
    column = sides.column or "variant"
    return _pairing(_key(sides), sides.frame_a, sides.frame_b, within, column)


def paired_sides(
    sides: Any, *, tie_margin: float, value: str, keys: tuple[str, ...], text: bool
) -> pd.DataFrame:
    """:func:`relevancy.analysis.compare.pair_rows` of ``sides`` (a
    :class:`~relevancy.dashboard.widgets.compare_picker.Sides`) at ``tie_margin``."""
    paired = _pairs(_key(sides), sides.frame_a, sides.frame_b, value, tuple(keys), text)
    return paired.assign(outcome=outcomes(paired["diff"].to_numpy(dtype=float), tie_margin))
