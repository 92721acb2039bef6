"""The Home page's one line when the installation or the embedded generator is not well.

The cheap checks of ``relevancy doctor`` (versions, CPU, models, folders, extras; no model is
run) are cached for a minute; whether this process's embedded-generator worker crashed is
read on every run. Nothing is drawn when all is well.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from relevancy.paths import default_cache_dir, default_store_path
from relevancy.scoring.doctor import Check, install_checks, summary_line, worker_check

__all__ = ["health_slot", "show_health"]


@st.cache_data(ttl=60, show_spinner=False)
def _install_problems(cache_dir: str, store: str) -> list[tuple[str, str, str]]:
    """The install checks that are not ok (keyed on the folders they look at)."""
    del cache_dir, store  # the cache key only: the checks read them from the environment
    return [(c.name, c.status, c.line) for c in install_checks() if c.status != "ok"]


def health_slot() -> Any:
    """A place near the top of the page for the line (filled by :func:`show_health`)."""
    return st.empty()


def show_health(slot: Any) -> None:
    """Put the worst problem in ``slot``, in one line (nothing when every check is ok).

    Called at the end of the page's script, so a crash during this run is already counted.
    """
    checks = [
        Check(*found)
        for found in _install_problems(str(default_cache_dir()), str(default_store_path()))
    ]
    crashed = worker_check()
    if crashed is not None:
        checks.append(crashed)
    found = summary_line(checks)
    if found is None:
        return
    status, line = found
    with slot.container():
        (st.error if status == "fail" else st.warning)(line, icon="🩺")
