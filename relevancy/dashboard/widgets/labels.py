"""Human labels and the chance level in the dashboard: cached figures, the drill-down's label
control, and the Agreement page's parts.

Labels set here go to the run store (``RunStore.set_label``, with the time; no accounts) and
win over the input's label column. Every cache keyed on the run's version is refreshed by a
label change (the version counts label changes), so the Agreement figures move at once.
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any

import pandas as pd
import streamlit as st

from relevancy.analysis.agreement import Interval, label_kind
from relevancy.analysis.chance import ChanceLevel
from relevancy.dashboard.views import agreement as agreement_view
from relevancy.dashboard.views import reference
from relevancy.dashboard.views.agreement import AgreementView
from relevancy.dashboard.views.format import esc, fmt, grid_style
from relevancy.dashboard.widgets.state import get_store
from relevancy.runs import RunStore

__all__ = [
    "run_agreement",
    "run_chance",
    "chance_for",
    "label_scale",
    "label_control",
    "agreement_metrics",
    "disagreement_tables",
    "chance_caption",
    "NO_LABELS",
]

NO_LABELS = (
    "No human labels in this run yet. Map a label column when scoring (a column named label, "
    "human_score, rating or relevant is found by name: 1/0, yes/no, relevant/irrelevant, "
    "good/bad, or numbers for graded labels), re-import an export that has one, or set labels "
    "row by row in the drill-down (**Dataset** page)."
)
_BINARY_NAMES = {1.0: "👍 relevant", 0.0: "👎 not relevant"}


@st.cache_data(show_spinner="Computing the agreement with the labels…", max_entries=8)
def _agreement(path: str, run_id: int, version: str, cut: float | None) -> AgreementView:
    return agreement_view.load(RunStore(path), run_id, cut=cut)


def run_agreement(run_id: int, *, cut: float | None = None) -> AgreementView:
    """The Agreement page's figures for a run (cached until its scores or labels change)."""
    store = get_store()
    return _agreement(str(store.path), int(run_id), store.version(run_id), cut)


@st.cache_data(show_spinner="Measuring the chance level…", max_entries=8)
def _chance(path: str, run_id: int, key: str) -> dict[str, ChanceLevel]:
    return reference.run_chance(RunStore(path), run_id)


def run_chance(run_id: int) -> dict[str, ChanceLevel]:
    """The chance level of each embedder of a run (cached until its results change; a label
    change leaves it alone)."""
    store = get_store()
    info = store.get_run(run_id)
    return _chance(str(store.path), int(run_id), f"{info.updated}|{info.n_scored}")


def chance_for(run_id: int, embedder: str) -> ChanceLevel | None:
    """The chance level of the embedder that scored a row (None when it cannot be measured)."""
    return run_chance(run_id).get(embedder)


@st.cache_data(show_spinner=False, max_entries=16)
def _scale(path: str, run_id: int, version: str) -> tuple[str, tuple[float, ...]]:
    # the labels table alone: a run without labels reads nothing (not a column of every row)
    labels = RunStore(path).labels(run_id)["label"].dropna()
    return label_kind(labels.to_numpy()), tuple(sorted(set(labels.tolist())))


def label_scale(run_id: int) -> tuple[str, tuple[float, ...]]:
    """The run's labels: their kind ("binary", "graded", "none") and distinct values."""
    store = get_store()
    return _scale(str(store.path), int(run_id), store.version(run_id))


#: session key: a label was just saved (a drill-down drawn in a fragment reruns the page, so
#: that a grid beside it shows the new label)
LABEL_SAVED = "label_saved"


def _save(run_id: int, row: int, key: str) -> None:
    value = st.session_state.get(key)
    get_store().set_label(run_id, row, None if value is None else float(value))
    st.session_state[LABEL_SAVED] = True


def _when(stamp: str) -> str:
    try:
        return datetime.fromisoformat(stamp).strftime("%d %b %Y %H:%M UTC")
    except ValueError:
        return stamp


def label_control(run_id: int, row: int, *, key: str) -> None:
    """The row's human label, settable: a choice of the run's label values (relevant / not
    relevant when the run has none or binary ones), or a number for finely graded labels.
    Saved in the run store at once, with the time."""
    store = get_store()
    found = store.labels(run_id, [row])
    current = None if found.empty else float(found["label"].iloc[0])
    kind, values = label_scale(run_id)
    widget = f"{key}_label_{run_id}_{row}"
    if kind in ("none", "binary") and set(values) <= {0.0, 1.0}:
        options: list[float] = [1.0, 0.0]
        names = _BINARY_NAMES
    elif len(values) <= 11:
        options = list(values)[::-1]
        good = max(values) if kind == "binary" else None
        names = {v: f"{v:g}" + (" (good)" if v == good else "") for v in options}
    else:
        options, names = [], {}
    c1, c2 = st.columns([2, 3], vertical_alignment="center")
    with c1:
        if options:
            st.segmented_control(
                "Human label",
                options,
                format_func=lambda v: names.get(v, f"{v:g}"),
                default=current if current in options else None,
                key=widget,
                on_change=_save,
                args=(run_id, row, widget),
                help="Your judgement of this answer, saved with the run (click again to clear). "
                "The Agreement page compares the scores with these labels.",
            )
        else:
            st.number_input(
                "Human label",
                min_value=float(min(values)),
                max_value=float(max(values)),
                value=current,
                key=widget,
                on_change=_save,
                args=(run_id, row, widget),
                help="Your graded judgement of this answer, saved with the run (empty: none).",
            )
    with c2:
        if found.empty:
            st.caption("No label yet: a label adds this row to the **Agreement** page.")
        else:
            where = (
                "set in the dashboard"
                if found["source"].iloc[0] == "dashboard"
                else ("from the input's label column")
            )
            st.caption(f"Label {current:g}, {where} · {_when(found['set_at'].iloc[0])}")


def _ci(x: Interval) -> str:
    if not (math.isfinite(x.low) and math.isfinite(x.high)):
        return "no interval"
    return f"95% CI {x.low:.3f}-{x.high:.3f}"


def agreement_metrics(view: AgreementView) -> None:
    """The headline figures with their intervals, one metric box each."""
    a = view.overall
    name, head = a.headline
    boxes: list[tuple[str, Interval | None, str, str]] = [
        ("Labelled rows", None, f"{a.rows:,}", f"{a.positives:,} good · {a.negatives:,} bad"),
        (name, head, fmt(head.value), _ci(head)),
    ]
    if a.kind == "graded":
        boxes.append(("AUROC", a.auroc, fmt(a.auroc.value), _ci(a.auroc)))
    boxes += [
        ("Best threshold", a.threshold, fmt(a.threshold.value), _ci(a.threshold)),
        ("Precision", a.precision, fmt(a.precision.value), _ci(a.precision)),
        ("Recall", a.recall, fmt(a.recall.value), _ci(a.recall)),
    ]
    helps = {
        "AUROC": "The chance that a good answer scores above a bad one (ties one half): 0.5 is "
        "a coin, 1 is perfect.",
        "Spearman": "Rank correlation of scores and graded labels: 0 is none, 1 perfect.",
        "Best threshold": "The score that best separates good from bad answers (highest "
        "recall minus false-positive rate): answers at or above it are called good.",
        "Precision": "Of the answers at or above the threshold, the share labelled good.",
        "Recall": "Of the answers labelled good, the share at or above the threshold.",
        "Labelled rows": "Scored rows with a human label (the dashboard's, else the input's).",
    }
    for col, (label, _, value, caption) in zip(st.columns(len(boxes)), boxes):
        col.metric(label, value, border=True, help=helps.get(label))
        col.caption(caption)


def disagreement_tables(view: AgreementView, *, key: str) -> int | None:
    """The two lists of disagreements (high score / bad label, low score / good label), each
    selectable; returns the row picked (None when none is)."""
    picked: int | None = None
    found = view.disagreements
    for col, kind, title in zip(
        st.columns(2),
        ("high score, bad label", "low score, good label"),
        ("High score, bad label", "Low score, good label"),
    ):
        part = found[found["kind"] == kind] if not found.empty else found
        with col:
            st.markdown(f"**{title}** · {len(part)}")
            if part.empty:
                st.caption("No such row: every one agrees with its label.")
                continue
            table = pd.DataFrame(
                {
                    "row": part["row"].astype(int) + 1,
                    "score": part["score"].astype(float),
                    "label": part["label"].map(lambda v: f"{v:g}"),
                    "question": part["user_input"].astype(str),
                    "answer": part["response"].astype(str),
                }
            )
            name = f"{key}_{kind.split(',')[0].replace(' ', '_')}"
            event: Any = st.dataframe(
                grid_style(table, {"score": "{:.3f}"}),
                hide_index=True,
                height=min(38 + 35 * len(table), 320),
                key=name,
                on_select="rerun",
                selection_mode="single-row",
                column_config={
                    "row": st.column_config.NumberColumn("row", width="small"),
                    "question": st.column_config.TextColumn("question", width="medium"),
                    "answer": st.column_config.TextColumn("answer", width="medium"),
                },
            )
            rows = event.selection.rows if event is not None else []
            if rows and rows[0] < len(part):
                picked = int(part["row"].iloc[rows[0]])
    return picked


def chance_caption(level: ChanceLevel, summary: dict[str, float]) -> str:
    """The Distributions page's sentence (markdown, static text and numbers)."""
    above = summary["above"]
    where = f"{above:.2f} above" if above >= 0 else f"{-above:.2f} below"
    return (
        f"**Chance level:** {esc(level.describe())} (the shaded band: 5th to 95th percentile of "
        f"{level.pairs:,} pairs of this run's rows with different questions). The median Ragas "
        f"value of its {summary['answered']:,} answered rows (noncommittal ones, 0 by rule, left "
        f"aside), {fmt(summary['median'], 2)}, is {where} that; **{summary['below']:,}** "
        f"of {summary['answered']:,} answered rows score below the 95th percentile "
        f"({level.p95:.2f}), no better than an answer to another question."
    )
