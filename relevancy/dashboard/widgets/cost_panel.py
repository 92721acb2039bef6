"""Tokens, time and cost on the pages: the sidebar's price table, a run's totals and the
estimate shown before a run starts. The sums and the formula are in :mod:`relevancy.analysis.cost`.

The price table lives in ``st.session_state["sb_prices"]`` (a DataFrame: model, input, output in
dollars per 1M tokens); it starts as :data:`relevancy.analysis.cost.DEFAULT_PRICES` and every page's
sidebar edits the same table.
"""

from __future__ import annotations

import math

import pandas as pd
import streamlit as st

from relevancy.analysis.cost import (
    DEFAULT_PRICES,
    PRICES_AS_OF,
    PRICES_SOURCE,
    Price,
    UsageTotals,
    describe_prices,
    money,
    prices_from_rows,
    usage_totals,
)
from relevancy.core.numbers import short_duration
from relevancy.dashboard.views.format import esc
from relevancy.dashboard.widgets.models import Settings, estimate_for, measure_for
from relevancy.dashboard.widgets.state import get_store
from relevancy.runs import RunInfo, RunStore
from relevancy.scoring.estimate import Estimate, duration

__all__ = [
    "PRICES_KEY",
    "current_prices",
    "price_editor",
    "run_totals",
    "usage_metrics",
    "usage_caption",
    "estimate_caption",
    "estimate_panel",
    "compact",
]
MEASURE_ROWS = 20

PRICES_KEY = "sb_prices"
_COLUMNS = ["model", "input", "output"]


def _default_frame() -> pd.DataFrame:
    rows = [{"model": m, "input": p.input, "output": p.output} for m, p in DEFAULT_PRICES.items()]
    return pd.DataFrame(rows, columns=_COLUMNS)


def _table() -> pd.DataFrame:
    if PRICES_KEY not in st.session_state:
        st.session_state[PRICES_KEY] = _default_frame()
    return st.session_state[PRICES_KEY]


def current_prices() -> dict[str, Price]:
    """The sidebar's price table as :func:`relevancy.analysis.cost.usage_totals` takes it."""
    return prices_from_rows(_table().to_dict("records"))


def _apply_edits(widget: str) -> None:
    """Fold the editor's edits into the table (the editor is keyed by a version that moves on,
    so it always starts from the table, on every page)."""
    edits = st.session_state.get(widget) or {}
    frame = _table().copy().reset_index(drop=True)
    for i, change in (edits.get("edited_rows") or {}).items():
        for column, value in change.items():
            frame.loc[int(i), column] = value
    added = [row for row in edits.get("added_rows") or [] if row]
    if added:
        frame = pd.concat([frame, pd.DataFrame(added, columns=_COLUMNS)], ignore_index=True)
    frame = frame.drop(index=[int(i) for i in edits.get("deleted_rows") or []], errors="ignore")
    frame["model"] = frame["model"].fillna("").astype(str).str.strip()
    for column in ("input", "output"):
        frame[column] = pd.to_numeric(frame[column], errors="coerce").clip(lower=0)
    st.session_state[PRICES_KEY] = frame[frame["model"] != ""].reset_index(drop=True)
    st.session_state["sb_prices_version"] = st.session_state.get("sb_prices_version", 0) + 1


def _reset() -> None:
    st.session_state[PRICES_KEY] = _default_frame()
    st.session_state["sb_prices_version"] = st.session_state.get("sb_prices_version", 0) + 1


def price_editor() -> None:
    """The editable price table (draw it inside the sidebar's expander)."""
    widget = f"_w_sb_prices_{st.session_state.get('sb_prices_version', 0)}"
    st.data_editor(
        _table(),
        key=widget,
        on_change=_apply_edits,
        args=(widget,),
        num_rows="dynamic",
        hide_index=True,
        width="stretch",
        column_config={
            "model": st.column_config.TextColumn("model", help="As in openai:MODEL"),
            "input": st.column_config.NumberColumn(
                "$ in / 1M", min_value=0.0, format="%.3f", help="Prompt (or embedded) tokens"
            ),
            "output": st.column_config.NumberColumn(
                "$ out / 1M", min_value=0.0, format="%.3f", help="Completion tokens"
            ),
        },
    )
    st.caption(
        f"Defaults: {PRICES_SOURCE} as of {PRICES_AS_OF}. Edit them for your contract or add a "
        "model (a self-hosted one at 0). The embedded models cost nothing."
    )
    st.button("Reset to the defaults", key="sb_prices_reset", on_click=_reset)


@st.cache_data(show_spinner=False, max_entries=64)
def _usage(path: str, run_id: int, version: str) -> pd.DataFrame:
    return RunStore(path).usage(run_id)


def run_totals(run_id: int, prices: dict[str, Price] | None = None) -> UsageTotals:
    """A run's tokens, time and cost at the sidebar's prices (cached until the run changes)."""
    store = get_store()
    frame = _usage(str(store.path), int(run_id), store.version(run_id))
    return usage_totals(frame, current_prices() if prices is None else prices)


def compact(n: float) -> str:
    """``"840"``, ``"12.3k"``, ``"3.41M"``."""
    if n < 1000:
        return f"{n:,.0f}"
    if n < 1_000_000:
        return f"{n / 1000:,.1f}k"
    return f"{n / 1_000_000:,.2f}M"


def usage_metrics(info: RunInfo) -> None:
    """Tokens billed, cost, cache savings and time of a run, as a row of metrics."""
    prices = current_prices()
    t = run_totals(info.id, prices)
    c = st.columns(4)
    c[0].metric(
        "Tokens billed",
        compact(t.billed_tokens),
        border=True,
        help=f"{t.describe_tokens()}.",
    )
    cost = t.describe_cost()
    c[1].metric(
        "Cost",
        money(t.cost) if not math.isnan(t.cost) else "unknown",
        border=True,
        help=(
            f"{cost}: add the model to the sidebar's **Prices** table."
            if math.isnan(t.cost)
            else f"At {describe_prices(t.models, prices) or 'the embedded models: free'}."
        ),
    )
    c[2].metric(
        "Rows from cache",
        f"{t.cached_rows:,}",
        border=True,
        help="Rows whose generated questions came from the cache cost 0 generation tokens.",
    )
    c[3].metric(
        "Row time",
        short_duration(t.seconds),  # "277 h 47 min" was cut off in the card: the detail in help
        border=True,
        help=f"The rows' scoring times added up: {duration(t.seconds)} (rows run several at a "
        f"time, so the run took less). {t.seconds / max(t.rows, 1):.2f} s per row.",
    )
    usage_caption(info, t, prices)


def usage_caption(
    info: RunInfo, totals: UsageTotals | None = None, prices: dict[str, Price] | None = None
) -> None:
    """One line: the run's tokens, what the cache saved, and the cost with its prices."""
    prices = current_prices() if prices is None else prices
    t = run_totals(info.id, prices) if totals is None else totals
    saved = (
        f" · {t.cached_rows:,} rows from cache: 0 generation tokens (saved {t.saved_tokens:,})"
        if t.cached_rows
        else ""
    )
    where = describe_prices(t.models, prices)
    cost = t.describe_cost()
    st.caption(
        f"💲 Tokens: generation {t.prompt_tokens:,} in + {t.completion_tokens:,} out, "
        f"{t.embedded_text}{saved} · cost {esc(cost)}"
        + (f" at {esc(where)}" if where and not cost.startswith("$0") else "")
    )


def estimate_caption(plan: Estimate, prices: dict[str, Price] | None = None) -> str:
    """The estimate before a run, in one paragraph: time, tokens, cost."""
    prices = current_prices() if prices is None else prices
    lines = [f"⏱️ **Estimate:** {esc(plan.describe())}."]
    if plan.tokens:
        lines.append(f"🔢 Tokens: {esc(plan.describe_tokens())}.")
        cost = plan.describe_cost(prices)
        where = describe_prices((plan.llm, plan.embeddings), prices)
        if cost.startswith("unknown"):
            cost += " (add it to the sidebar's Prices table)"
        elif where and not cost.startswith("$0"):
            cost += f" at {where}"
        lines.append(f"💲 Cost: {esc(cost)}.")
    return "  \n".join(lines)


def estimate_panel(settings: Settings, questions: list[str], answers: list[str]) -> None:
    """Before a run: its time, tokens and cost, and a button that measures them on a sample."""
    plan = estimate_for(settings, questions, answers)
    if plan is None:
        return
    c1, c2 = st.columns([4, 1], vertical_alignment="center")
    c1.caption(estimate_caption(plan))
    todo = plan.rows - plan.cached
    if todo >= 5 and c2.button(
        f"Measure on {min(MEASURE_ROWS, todo)} rows",
        key="ds_measure",
        icon="📏",
        width="stretch",
        help="Score a few rows drawn from this file now, to measure these models' speed and "
        "tokens; they go to the cache, so the run does not score them again.",
    ):
        with st.spinner(f"Scoring {min(MEASURE_ROWS, todo)} rows to measure the models..."):
            measured = measure_for(settings, questions, answers, MEASURE_ROWS)
        st.session_state["ds_flash"] = (
            f"Measured on {measured} rows: the estimate now uses these models' own speed and "
            "tokens."
        )
        st.rerun()
