"""The dashboard's addresses, built from a run and a row (no Streamlit): what the HTML report
links to and the dashboard's own links read back (:mod:`relevancy.dashboard.views.links`).

**Rows in links are 1-based**, as the grid, the row pickers and the CLI's notes number them;
everywhere else in the code a row is the run's 0-based index: :func:`link_params` writes
``index + 1``.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable
from pathlib import PurePosixPath
from urllib.parse import urlencode, urlsplit

__all__ = [
    "RUN",
    "ROW",
    "ROW_PAGE",
    "link_params",
    "page_path",
    "app_base",
    "row_url",
    "row_anchor",
]

#: the query parameters: the run's id, and a row (1-based)
RUN, ROW = "run", "row"
#: the page (its URL path) that opens a linked row in its drill-down
ROW_PAGE = "Dataset"


def link_params(run: int | None, row: int | None = None) -> dict[str, str]:
    """The query parameters of a run (and a row of it, **0-based** in, 1-based out)."""
    if run is None:
        return {}
    params = {RUN: str(int(run))}
    if row is not None:
        params[ROW] = str(int(row) + 1)
    return params


def page_path(script: str) -> str:
    """A page's URL path from its script, as Streamlit names it: ``pages/1_Dataset.py`` →
    ``Dataset``; the main script (``app.py``) → ``""``."""
    path = PurePosixPath(script.replace("\\", "/"))
    if path.parent.name != "pages":
        return ""
    return re.sub(r"^\d+[_ -]*", "", path.stem)


def app_base(url: str | None, pages: Iterable[str]) -> str | None:
    """The dashboard's own address from a page's (``st.context.url``): the page's path, a
    trailing slash, any query and fragment taken off. ``None`` for anything but an http(s) URL
    (a link is then relative)."""
    if not url:
        return None
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return None
    path = parts.path.rstrip("/")
    last = path.rsplit("/", 1)[-1]
    if last and last in {p for p in pages if p}:
        path = path[: -len(last)].rstrip("/")
    return f"{parts.scheme}://{parts.netloc}{path}"


def row_url(run: int, row: int, base: str | None = None) -> str:
    """The address that opens ``row`` (0-based) of ``run`` in the Dataset page's drill-down:
    ``{base}/Dataset?run=12&row=37``, or relative (``Dataset?run=12&row=37``, right from any page
    of the dashboard) without a base."""
    query = urlencode(link_params(run, row))
    return f"{base.rstrip('/')}/{ROW_PAGE}?{query}" if base else f"{ROW_PAGE}?{query}"


def row_anchor(row: int) -> str:
    """The HTML id of a row (0-based) in the report: ``row-37`` for the 37th row."""
    return html.escape(f"row-{int(row) + 1}")
