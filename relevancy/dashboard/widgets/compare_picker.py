"""The Compare page's choice of what to compare: two values of a column of one run (variants,
or any column of the user's), or two saved runs; and what to say when there is nothing yet."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import streamlit as st

from relevancy.analysis.compare import QUESTION_ID_COLUMNS
from relevancy.dashboard.views.format import esc
from relevancy.dashboard.widgets.state import (
    run_columns,
    run_distinct,
    set_active_run,
    split_columns,
)
from relevancy.runs import RunInfo

__all__ = ["Sides", "choose_sides", "pair_frame"]


@dataclass
class Sides:
    """The two sides chosen: their rows, labels and runs; ``column`` when they are two values
    of one run's column (else two runs, maybe restricted to one ``variant``)."""

    frame_a: pd.DataFrame
    frame_b: pd.DataFrame
    label_a: str
    label_b: str
    run_a: int
    run_b: int
    column: str | None = None


#: runs looked at for the default baseline (the newest first)
LOOK_AT = 20


def _most_shared(run_b: int, ids: list[int]) -> int:
    """The run among ``ids`` (newest first) that shares the most questions with ``run_b``; the
    newest other run when none shares any."""
    others = [i for i in ids if i != run_b][:LOOK_AT]
    asked = set(run_distinct(run_b, "user_input"))
    shared = {i: len(asked & set(run_distinct(i, "user_input"))) for i in others}
    return max(others, key=lambda i: (shared[i], -others.index(i)))


def pair_frame(run: RunInfo, extra: list[str] | None = None) -> pd.DataFrame:
    """What pairing needs of a run's scored rows (and no more)."""
    roles = [c for c in ("id", "variant", *QUESTION_ID_COLUMNS) if c in run.columns]
    names = [
        "user_input",
        *roles,
        *(extra or []),
        "score",
        "mode",
        "ragas_value",
        "noncommittal",
        "error",
    ]
    return run_columns(run.id, list(dict.fromkeys(names)))


def _splittable(info: RunInfo) -> list[str]:
    """The run's columns that can split it into sides: variant first, then the user's own (not
    the human label: good and bad answers are not two variants)."""
    own = [c for c in split_columns(info) if c != "label"]  # of few values (not a time)
    return sorted(own, key=lambda c: c != "variant")


def choose_sides(info: RunInfo, runs: list[RunInfo], what: str, columns: list) -> Sides | None:
    """Draw the side pickers in ``columns`` (three ``st.columns``); None (with a message saying
    what is needed) when there is nothing to compare."""
    c1, c2, _ = columns
    if what == "variants":
        options = [c for c in _splittable(info) if len(run_distinct(info.id, c, limit=2)) == 2]
        if not options:
            with_variants = [r for r in runs if r.id != info.id and "variant" in r.columns]
            st.info(
                f"Run **{esc(info.name)}** has no column with two values to compare (such as a "
                "`variant` column naming the prompt or model of each answer). Score a table "
                "with one, or compare two saved runs.",
                icon="ℹ️",
            )
            if with_variants and st.button(
                f"Open run #{with_variants[0].id} ({esc(with_variants[0].name)}), which has "
                "variants",
                key="cmp_switch",
            ):
                set_active_run(with_variants[0].id)
                st.rerun()
            return None
        column = options[0]
        if len(options) > 1:
            column = st.selectbox(
                "Compare the values of",
                options,
                key="cmp_column",
                format_func=lambda c: esc(info.shown(c)),  # the input's own names (model...)
            )
        frame = pair_frame(info, [column])
        codes, names = pd.factorize(frame[column].astype(str))
        names = np.asarray(names, dtype=object)
        values = sorted(names)
        label_a = c1.selectbox("A (baseline)", values, index=0, key="cmp_a")
        # a value set by another page (Experiments' "Open in Compare") is kept, without the
        # warning a default index beside a set value would draw
        chosen = st.session_state.get("cmp_b") in values
        label_b = c2.selectbox(
            "B (candidate)", values, **({} if chosen else {"index": 1}), key="cmp_b"
        )

        def side(label: str) -> pd.DataFrame:  # rows by position: a third faster than a mask
            return frame.take(np.flatnonzero(codes == np.flatnonzero(names == label)[0]))

        return Sides(
            side(label_a),
            side(label_b),
            label_a,
            label_b,
            info.id,
            info.id,
            column,
        )
    if len(runs) < 2:
        st.info("Only one run has scored rows: score another dataset to compare runs.", icon="ℹ️")
        return None
    labels = {r.id: r.label for r in runs}
    ids = list(labels)
    # B: the active run; A: the other run that shares the most questions with it (the newest
    # of those): pairs match on the question text
    default_b = ids.index(info.id) if info.id in ids else 0
    default_a = ids.index(_most_shared(ids[default_b], ids))
    run_a = c1.selectbox(
        "A (baseline run)", ids, index=default_a, format_func=labels.get, key="cmp_run_a"
    )
    run_b = c2.selectbox(
        "B (candidate run)", ids, index=default_b, format_func=labels.get, key="cmp_run_b"
    )
    frame_a = pair_frame(next(r for r in runs if r.id == run_a))
    frame_b = pair_frame(next(r for r in runs if r.id == run_b))
    if "variant" in frame_a.columns and "variant" in frame_b.columns:
        common = sorted(set(frame_a["variant"].astype(str)) & set(frame_b["variant"].astype(str)))
        if len(common) > 1:
            pick = st.selectbox("Variant (in both runs)", ["(all)", *common], key="cmp_run_variant")
            if pick != "(all)":
                frame_a = frame_a[frame_a["variant"].astype(str) == pick]
                frame_b = frame_b[frame_b["variant"].astype(str) == pick]
    return Sides(frame_a, frame_b, f"#{run_a}", f"#{run_b}", run_a, run_b)
