"""Links to a run and to one of its rows: the dashboard's URLs built and read (no Streamlit).

A page's address carries ``?run=ID``, the run store's number of the run (``#ID`` in the Runs
table and the sidebar), and the Dataset page's adds ``&row=N`` for the row its drill-down
shows: ``/Dataset?run=12&row=37``. **Rows in links are 1-based**, as the grid, the row pickers
and the CLI's notes number them; everywhere else in the code a row is the run's 0-based index,
and the conversion happens here only (:func:`link_params` writes ``index + 1``,
:func:`parse_link` reads ``N - 1``).

:func:`parse_link` never raises: a value that is not a number is left out, with a line saying so;
:func:`check_link` then holds the link against the store (a deleted run, a row out of range or
not scored yet) and says what to do in one line each.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from relevancy.dashboard.views.format import esc
from relevancy.report.links import (
    ROW,
    ROW_PAGE,
    RUN,
    app_base,
    link_params,
    page_path,
    row_anchor,
    row_url,
)
from relevancy.runs import RunInfo

__all__ = [
    "RUN",
    "ROW",
    "ROW_PAGE",
    "Link",
    "parse_link",
    "check_link",
    "link_params",
    "page_path",
    "app_base",
    "row_url",
    "row_anchor",
]

_NUMBER = re.compile(r"[ \t]*\+?[0-9]{1,18}[ \t]*")  # ASCII digits only: "٣" is no run


@dataclass(frozen=True)
class Link:
    """What a URL asks for: a run id and a row (**0-based** here), the values that were not
    numbers (as given), and, once checked, what was wrong with it."""

    run: int | None = None
    row: int | None = None
    bad_run: str | None = None
    bad_row: str | None = None
    #: one line per problem, markdown (any text from the URL made inert); see :func:`check_link`
    problems: tuple[str, ...] = field(default=())

    @property
    def empty(self) -> bool:
        """Whether the URL names no run and no row, not even a bad one."""
        return all(v is None for v in (self.run, self.row, self.bad_run, self.bad_row))


def _shown(value: str, width: int = 40) -> str:
    """A value from the URL, shortened and made inert for markdown."""
    value = value if len(value) <= width else value[: width - 1] + "…"
    return f"“{esc(value)}”"


def _last(value: Any) -> str:
    """The last of a repeated parameter (as ``st.query_params`` reads it), as text whatever
    it is (a number, ``None``, bytes...)."""
    if isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, (list, tuple)):
        return _last(value[-1]) if value else ""
    return "" if value is None else str(value)


def parse_link(params: Mapping[str, str | Sequence[str]]) -> Link:
    """The run and row that a URL's query parameters ask for (other parameters are ignored).

    ``row=N`` becomes the index ``N - 1`` (``row=0`` gives ``-1``, which :func:`check_link`
    calls out of range). A run that is not a whole number from 1 up, or a row that is not a
    whole number, is kept apart as given (``bad_run``, ``bad_row``). Never raises.
    """
    try:
        return _parse(params)
    except Exception:  # not a mapping, or one whose keys cannot be looked up: no link
        return Link()


def _parse(params: Mapping[str, Any]) -> Link:
    run = row = bad_run = bad_row = None
    if RUN in params:
        text = _last(params[RUN])
        if _NUMBER.fullmatch(text) and int(text) >= 1:
            run = int(text)
        else:
            bad_run = text
    if ROW in params:
        text = _last(params[ROW])
        if _NUMBER.fullmatch(text):
            row = int(text) - 1
        else:
            bad_row = text
    return Link(run, row, bad_run, bad_row)


def check_link(
    link: Link,
    runs: Sequence[RunInfo],
    *,
    fallback: RunInfo | None,
    rows: bool,
    scored: Callable[[int, int], bool],
) -> Link:
    """``link`` with only what the store holds, and one line per problem saying what is wrong
    and what to do: a run that is not a number or not in the store (the page shows
    ``fallback`` instead), a row that is not a number, out of the run's range or not scored
    yet, a row without a run.

    ``rows`` says whether this page opens rows (elsewhere a row is ignored without a word);
    ``scored(run, row)`` whether that row (0-based) of the run has a result.
    """
    problems: list[str] = []
    instead = f"showing **{esc(fallback.label)}** instead" if fallback else "no run to show"
    pick_run = "Pick a run in the sidebar's **Active run**."
    info = next((r for r in runs if r.id == link.run), None)
    if link.bad_run is not None:
        problems.append(
            f"The link's run {_shown(link.bad_run)} is not a run number (runs are numbered "
            f"1, 2, 3… as on the **Runs** page): {instead}. {pick_run}"
        )
    elif link.run is not None and info is None:
        problems.append(
            f"Run #{link.run} from the link is not in this run store (deleted, or saved in "
            f"another store): {instead}. {pick_run}"
        )
    row = link.row if rows and info is not None else None
    if not rows or problems:  # no row without its run: one line is enough
        pass
    elif link.bad_row is not None:
        problems.append(
            f"The link's row {_shown(link.bad_row)} is not a row number (rows are numbered from "
            "1, as in the grid): pick a row in the drill-down below."
        )
    elif link.row is not None and link.run is None:
        problems.append(
            f"The link names row {link.row + 1} but no run (a link to a row reads "
            f"`?run=ID&row=N`): pick the run in the sidebar's **Active run** and the row below."
        )
    elif info is not None and row is not None and not 0 <= row < info.n_rows:
        problems.append(
            f"Run #{info.id} has {info.n_rows:,} rows, so there is no row {row + 1:,}: pick a "
            "row in the drill-down below."
        )
        row = None
    elif info is not None and row is not None and not scored(info.id, row):
        problems.append(
            f"Row {row + 1:,} of run #{info.id} is not scored yet ({info.n_scored:,} of "
            f"{info.n_rows:,} rows are): resume the run to score it, or pick a scored row in "
            "the drill-down below."
        )
        row = None
    return replace(link, run=info.id if info else None, row=row, problems=tuple(problems))
