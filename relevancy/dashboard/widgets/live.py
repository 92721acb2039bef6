"""A followed run (``relevancy score --follow``) on a page: where it reads from and how far, and,
while its follower is writing, the page drawn again as rows are added (no reload)."""

from __future__ import annotations

import streamlit as st

from relevancy.dashboard.views.format import esc, rows_scored
from relevancy.errors import RelevancyError
from relevancy.runs import RunInfo, RunStore

__all__ = ["follow_interval", "follow_notice", "follower_running"]


def follow_interval(info: RunInfo) -> float:
    """Seconds between a followed run's checks for new rows (its follower's own, 2 to 60)."""
    follow = info.settings.get("follow") or {}
    try:
        return min(max(float(follow.get("interval") or 5.0), 2.0), 60.0)
    except (TypeError, ValueError, AttributeError):
        return 5.0


def _code(text: str) -> str:
    """Text for a markdown code span, shown as it is (a backtick or a double quote, which could
    break out of the span or the command, becomes a single quote)."""
    return text.replace("`", "'").replace('"', "'").replace("\n", " ")


def follower_running(store: RunStore, info: RunInfo) -> bool:
    """Whether a follower holds this run now (:meth:`RunStore.follow_status`: its process
    lives, or its heartbeat is recent): the one notion every page uses."""
    try:
        return store.follow_status(info.id)
    except RelevancyError:
        return False


def follow_notice(store: RunStore, info: RunInfo) -> bool:
    """For a followed run: one line (its source, rows, how far it was read) and, while its
    follower runs, a watch that draws the page again when rows are added. True for a followed
    run (the page then offers no Resume: the follower scores its rows)."""
    follow = info.settings.get("follow")
    if not isinstance(follow, dict):
        return False
    try:
        cursor = store.follow_cursor(info.id)
    except RelevancyError:  # settings copied from a followed run, not one itself
        return False
    read = f", read up to {cursor.read_to:%Y-%m-%d %H:%M:%S} UTC" if cursor.read_to else ""
    figures = store.figures(info.id, threshold=0.5)  # the counts only: any threshold will do
    rows = rows_scored(figures.scored, info.n_rows, figures.nan) + read
    source = _code(str(follow.get("source") or info.source))
    if not follower_running(store, info):
        command = f'relevancy score --from {source} --follow --save-run "{_code(info.name)}"'
        st.info(
            f"Run **{esc(info.name)}** follows `{source}` ({rows}). Its follower is not "
            f"running: `{command}` goes on where it stopped.",
            icon="⏸️",
        )
        return True
    every = follow_interval(info)
    st.info(
        f"🔴 Run **{esc(info.name)}** follows `{source}` ({rows}): new rows appear here as "
        f"they are scored (checked every {every:g} s).",
        icon="📡",
    )
    seen = store.version(info.id)

    def watch() -> None:
        # new rows, or the follower stopped: the page is drawn again (without this watch)
        if store.version(info.id) != seen or not follower_running(store, info):
            st.rerun(scope="app")

    st.fragment(run_every=every)(watch)()
    return True
