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

from relevancy.estimate import duration, record_speed
from relevancy.store import RunStore

__all__ = ["JOB_KEY", "Outcome", "score_run", "interrupted_job"]

JOB_KEY = "ds_job"


@dataclass
class Outcome:
    scored: int
    total: int
    seconds: float
    errors: int


def score_run(store: RunStore, run_id: int, metric: Any, *, chunk: int | None = None) -> Outcome:
    """Score the run's rows that have no result yet; draws progress in the current container."""
    pending = store.pending_rows(run_id)
    info = store.get_run(run_id)
    total, already = info.n_rows, info.n_scored
    chunk = chunk or max(2, int(getattr(metric, "concurrency", 4)))
    st.session_state[JOB_KEY] = {"run_id": run_id, "started_with": already}
    top = st.columns([5, 1], vertical_alignment="center")
    with top[0]:
        bar = st.progress(already / max(total, 1), text=f"Starting: {len(pending)} rows to score")
    with top[1]:
        st.button(
            "Cancel",
            key="ds_cancel",
            icon="⏹️",
            help="Stop after the rows in flight; everything scored so far is kept.",
        )
    started = time.perf_counter()
    done = errors = fresh = 0
    for start in range(0, len(pending), chunk):
        rows = pending[start : start + chunk]
        part = store.inputs(run_id, rows)[["user_input", "response"]].reset_index(drop=True)

        def on_result(i: int, result: Any, rows: list[int] = rows) -> None:
            store.append_results(run_id, [(rows[i], result)])

        results = metric.score_many(part, on_result=on_result)
        errors += sum(1 for r in results if r.error)
        fresh += sum(not r.cached for r in results)
        done += len(rows)
        elapsed = time.perf_counter() - started
        left = elapsed / done * (len(pending) - done)
        bar.progress(
            (already + done) / total,
            text=f"Scored {already + done} of {total} rows · {duration(elapsed)} elapsed · "
            f"about {duration(left)} left",
        )
    st.session_state.pop(JOB_KEY, None)
    elapsed = time.perf_counter() - started
    record_speed(metric, rows=fresh, seconds=elapsed)  # cached rows cost ~0
    bar.progress(1.0, text=f"Done: {total} rows in {duration(elapsed)}")
    return Outcome(scored=done, total=total, seconds=elapsed, errors=errors)


def interrupted_job() -> dict[str, Any] | None:
    """The job a previous script run left unfinished (Cancel, or leaving the page), if any."""
    return st.session_state.pop(JOB_KEY, None)
