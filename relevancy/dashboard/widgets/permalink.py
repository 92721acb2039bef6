"""The address bar in step with the page, links opened from it, and a row's link to copy.

Every page's URL carries ``?run=ID``, the active run; the Dataset page's adds ``&row=N``, the
row its drill-down shows (1-based, as on screen: see :mod:`relevancy.dashboard.views.links`). So a
copied URL opens the same run, and the same drill-down, in a new tab or on another machine
that reads the same run store.

A URL is *opened* (its run made the active run, its row the drill-down's) when it is not the
one this session last wrote: a link pasted into a new tab, or the browser's back and forward
buttons. Anything wrong with it (a deleted run, a row out of range, a value that is not a
number) gives one warning under the page's header, kept until the user picks another run or
row, and the page shows what it would have shown without the link.

Session keys (``link_*``): ``link_sent`` the parameters last written, ``link_row`` the row a
link opened as ``(run, row, fresh)``, ``link_notes`` the warnings of the last link opened,
``link_slot`` where this script run shows them.
"""

from __future__ import annotations

import html
from typing import Any

import streamlit as st

from relevancy.dashboard.views.links import (
    ROW,
    RUN,
    app_base,
    check_link,
    link_params,
    page_path,
    parse_link,
    row_url,
)
from relevancy.dashboard.widgets.sidebar import PAGES
from relevancy.dashboard.widgets.state import active_run, get_store, list_runs, set_active_run

__all__ = [
    "DRILL_ANCHOR",
    "open_link",
    "notes_slot",
    "sync_link",
    "linked_row",
    "dashboard_url",
    "row_link",
]

_SENT, _ROW, _NOTES, _SLOT = "link_sent", "link_row", "link_notes", "link_slot"


def _ours(params: dict[str, Any]) -> dict[str, str]:
    return {k: str(v) for k, v in params.items() if k in (RUN, ROW)}


def open_link(page: str, *, rows: bool) -> None:
    """Open the URL's run (and row, on a page with a drill-down, ``rows``) unless this session
    wrote that URL itself. Call before the sidebar, which shows the active run."""
    asked = _ours(st.query_params.to_dict())
    if not asked or asked == st.session_state.get(_SENT):
        return
    runs = list_runs()
    store = get_store()
    link = check_link(
        parse_link(asked),
        runs,
        fallback=active_run(runs),
        rows=rows,
        scored=lambda run, row: bool(store.results(run, [row], vectors=False)),
    )
    if link.run is not None:
        set_active_run(link.run)
    if link.row is not None:
        st.session_state[_ROW] = (link.run, link.row, True)
    st.session_state[_NOTES] = {"page": page, "notes": link.problems, "params": None}


def notes_slot(page: str) -> None:
    """Where the warnings of a link opened on this page go (under the header);
    :func:`sync_link` fills it."""
    st.session_state[_SLOT] = (page, st.empty())


def sync_link(run_id: int | None, row: int | None = None) -> None:
    """Put this run (and this 0-based row of its drill-down) in the URL, if it is not there
    (so the browser's history gets one entry per change), keeping any other parameter; show
    the last opened link's warnings until the run or row changes."""
    want = link_params(run_id, row)
    current = st.query_params.to_dict()
    if _ours(current) != want:
        st.query_params.from_dict(
            {**{k: v for k, v in current.items() if k not in (RUN, ROW)}, **want}
        )
    st.session_state[_SENT] = want
    notes, slot = st.session_state.get(_NOTES), st.session_state.get(_SLOT)
    if not notes:
        return
    if notes["params"] is None:
        notes["params"] = want  # what the page showed for the link
    if notes["params"] != want or slot is None or slot[0] != notes["page"]:
        st.session_state.pop(_NOTES)
        return
    with slot[1].container():
        for note in notes["notes"]:
            st.warning(note, icon="🔗")


#: the drill-down's heading anchor on the Dataset page (a link to a row scrolls to it)
DRILL_ANCHOR = "drill-down"

# polls for the heading (drawn later in the same script run), then scrolls it into view once
_SCROLL = """<script>
(() => {
  let tries = 0;
  const go = () => {
    const target = document.getElementById("%s");
    if (target) { target.scrollIntoView({block: "start"}); return; }
    if (++tries < 50) setTimeout(go, 100);
  };
  go();
})();
</script>"""


def linked_row(run_id: int, key: str) -> int | None:
    """The row (0-based) a link opened in this run, until the user picks another; the first
    time, it is also chosen in the row picker ``key`` (call before drawing it) and the page
    scrolls to the drill-down (its heading's anchor :data:`DRILL_ANCHOR`)."""
    held = st.session_state.get(_ROW)
    if not held or held[0] != run_id:
        return None
    run, row, fresh = held
    if fresh:
        st.session_state[key] = row
        st.session_state[_ROW] = (run, row, False)
        st.html(_SCROLL % DRILL_ANCHOR, unsafe_allow_javascript=True)
    elif st.session_state.get(key) != row:
        st.session_state.pop(_ROW)
        return None
    return row


def dashboard_url() -> str | None:
    """The dashboard's address as the browser sees it (``None`` when unknown: under AppTest)."""
    return app_base(st.context.url, [page_path(script) for script, *_ in PAGES])


#: the row's address and a button that copies it (plain HTML: a code box would load a syntax
#: highlighter, a fifth of a second of the browser's time on every page that shows a row)
_COPY = """<div class="rel-link"><code>{url}</code><button type="button" title="Copy the link"
data-url="{url}">Copy</button></div>
<script>
document.querySelectorAll(".rel-link button:not([data-bound])").forEach((b) => {{
  b.dataset.bound = "1";
  const done = (ok) => {{ b.textContent = ok ? "Copied" : "Select it and copy"; }};
  b.addEventListener("click", () => {{
    if (navigator.clipboard && window.isSecureContext) {{
      navigator.clipboard.writeText(b.dataset.url).then(() => done(true), () => done(false));
      return;
    }}
    // http://host:8501 (not localhost) is not a secure context: no clipboard API there; copy
    // the selected address the older way
    const range = document.createRange();
    range.selectNodeContents(b.previousElementSibling);
    const sel = window.getSelection();
    sel.removeAllRanges();
    sel.addRange(range);
    let ok = false;
    try {{ ok = document.execCommand("copy"); }} catch (e) {{ ok = false; }}
    done(ok);
  }});
}});
</script>"""


def row_link(run_id: int, row: int) -> None:
    """'Link to this row': the address of the row's drill-down, and a button that copies it."""
    st.caption("🔗 **Link to this row**: copy it to share or reopen this drill-down")
    url = html.escape(row_url(run_id, row, dashboard_url()), quote=True)
    st.html(_COPY.format(url=url), unsafe_allow_javascript=True)
