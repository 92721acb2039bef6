"""Scoring a run inside a Streamlit script run, with a progress bar, an ETA and a Cancel button.

Rows are scored in small chunks; each result is written to the store the moment it finishes,
so a Cancel (which makes Streamlit stop this script run at its next call) keeps every row
scored so far, and the run can be resumed later: only rows without a result are scored again.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import streamlit as st

from relevancy.dashboard.views.format import esc
from relevancy.dashboard.widgets.state import set_active_run
from relevancy.runs import RunStore
from relevancy.scoring.collectors import StoreSink, Tally, TokenPoints
from relevancy.scoring.estimate import duration, record_speed, record_usage
from relevancy.scoring.pipeline import score_chunks

__all__ = ["stopped_notice", "JOB_KEY", "Outcome", "score_run", "interrupted_job"]

JOB_KEY = "ds_job"


@dataclass
class Outcome:
    scored: int
    total: int
    seconds: float
    errors: int


def score_run(store: RunStore, run_id: int, metric: Any, *, chunk: int | None = None) -> Outcome:
    """Score the run's rows that have no result yet; draws progress in the current container.

    The rows go through the one scoring loop (:func:`relevancy.scoring.pipeline.score_chunks`)
    a few at a time; each result is saved and counted on the progress bar the moment it
    finishes."""
    pending = store.pending_rows(run_id)
    info = store.get_run(run_id)
    total, already = info.n_rows, info.n_scored
    chunk = chunk or max(2, int(getattr(metric, "concurrency", 4)))
    st.session_state[JOB_KEY] = {"run_id": run_id, "started_with": already}
    top = st.columns([5, 1], vertical_alignment="center")
    with top[0]:
        bar = st.progress(
            already / max(total, 1),
            text=f"Starting: {len(pending)} rows to score; the bar moves as each row finishes",
        )
    with top[1]:
        st.button(
            "Cancel",
            key="ds_cancel",
            icon="⏹️",
            help="Stop after the rows in flight; everything scored so far is kept.",
        )
    tally, sink, points = Tally(), StoreSink(store, run_id, results=False), TokenPoints()
    chunks = (
        (rows, store.inputs(run_id, rows)[["user_input", "response"]])
        for rows in (pending[i : i + chunk] for i in range(0, len(pending), chunk))
    )
    started = time.perf_counter()
    done = finished = 0
    stops: list[BaseException] = []

    def show(n: int) -> None:
        elapsed = time.perf_counter() - started
        left = elapsed / max(n, 1) * (len(pending) - n)
        rate = metric.rate_status() if hasattr(metric, "rate_status") else None
        bar.progress(
            (already + n) / max(total, 1),
            text=f"Scored {already + n} of {total} rows · {duration(elapsed)} elapsed · "
            f"about {duration(left)} left" + (f" · {rate}" if rate else ""),
        )

    def on_result(row: int, result: Any) -> None:
        """Each row as it finishes: saved, then counted on the bar (not a chunk at a time)."""
        nonlocal finished
        sink.on_result(row, result)
        finished += 1
        if stops:
            return
        try:
            show(finished)
        except Exception:
            raise
        except BaseException as stop:  # Cancel: acted on after the rows in flight
            stops.append(stop)

    try:
        for scored in score_chunks(metric, chunks, [tally, sink, points], on_result=on_result):
            done += len(scored.rows)
            del scored  # not held while the next chunk is scored
            if stops:
                raise stops[0]
            show(done)
    finally:  # a Cancel too: the rows scored so far are in the cache, estimates made are stale
        store.set_meta("last_scored", time.strftime("%Y-%m-%dT%H:%M:%S"))
    st.session_state.pop(JOB_KEY, None)
    elapsed = time.perf_counter() - started
    # cached rows cost ~0; the next estimate (here or in the CLI) learns from this run
    record_speed(metric, rows=done - tally.cached, seconds=elapsed, store=store)
    record_usage(metric, points.points)
    bar.progress(1.0, text=f"Done: {total} rows in {duration(elapsed)}")
    errors = sum(tally.errors.values())
    return Outcome(scored=done, total=total, seconds=elapsed, errors=errors)


def interrupted_job() -> dict[str, Any] | None:
    """The job a previous script run left unfinished (Cancel, or leaving the page), if any."""
    return st.session_state.pop(JOB_KEY, None)


def stopped_notice(store: RunStore) -> bool:
    """Say so when the last scoring was stopped (its run kept, made the active one) and whether
    a Score click may start a run now: never in the script run right after a stop (a click
    while scoring, Cancel..., is sent again)."""
    stopped = interrupted_job()
    if stopped:
        info = store.get_run(stopped["run_id"])
        st.warning(
            f"Scoring stopped. Run **{esc(info.name)}** keeps every row scored so far "
            f"({info.n_scored} of {info.n_rows} now; rows that were in flight finish in the "
            "background and are kept too). Resume it below to score the rest.",
            icon="⏹️",
        )
        set_active_run(info.id)
    return stopped is None and not st.session_state.get("ds_cancel")
