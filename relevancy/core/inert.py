"""Text from the data made inert: shown as typed, never a link, emphasis, code, an image, HTML,
LaTeX or a heading, wherever a page or a chart shows it.

One function, :func:`inert`, for every place: ``inert(text)`` for anything Streamlit draws as
Markdown (markdown, captions, titles and headers, alerts, expander, metric, tab and widget
labels, radio and segmented-control options, help tooltips); ``inert(text, html=True)`` for
HTML (``st.html``, a plotly title, legend, tick, annotation or hover, an HTML attribute, an
``unsafe_allow_html`` block: one line that starts with a block tag such as ``<div>``, whose
inside Markdown leaves alone). The dashboard calls the first ``esc``
(:mod:`relevancy.dashboard.views.format`), the charts the second ``label`` and ``hover_text``
(:mod:`relevancy.report.charts`). Text Streamlit shows as it is (``st.text``, ``st.code``,
selectbox and multiselect options, grid cells, metric values) needs neither.

Escaping Markdown is not enough: Streamlit's Markdown (remark-gfm) turns bare addresses into
links *after* the escapes are read (``https\\://x\\.io`` is still ``https://x.io`` to it), as
"autolink literals": ``http://…``, ``https://…``, ``www.…`` and ``name@host.tld``. So a WORD
JOINER (U+2060, invisible, no line break) is put where such a link would start: between the
colon and the ``//`` of any ``scheme://``, between ``www`` and its dot, and after every ``@``.
The text reads the same and copies the same, but for those invisible characters: pasted into
an address bar, a copied address may need them taken out (the CSV download and the grid hold
the text as it is).

A direction control in the data (a right-to-left override U+202E, an embedding or an isolate)
would run on past the text into the page's own words ("…sniw %23" for "23% wins…"): such
controls are taken out, and the text is set in an isolate of its own (U+2068 … U+2069), so
right-to-left words still read right to left and nothing after them moves.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["WORD_JOINER", "inert"]

#: put where a bare address would start a link; invisible, and no line break at it
WORD_JOINER = "\u2060"

# the colon of "scheme://", the end of "www" before its dot, the end of an "@"
_LINK_START = re.compile(r"(?<=:)(?=//)|(?<=www)(?=\.)|(?<=@)", re.IGNORECASE)
# what Markdown (with Streamlit's LaTeX, colour and icon directives) or HTML reads as markup
_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|>~<$:])")
# what HTML (and plotly's subset of it) reads as markup; "%{" starts a plotly template field.
# Numeric references for quotes: plotly draws "&quot;" as it is written
_HTML_SPECIAL = re.compile(r"[&<>\"']|%(?=\{)")
_HTML_NAMED = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
_LINE_BREAK = re.compile(r"\r\n|[\r\n]")
# direction embeddings, overrides and isolates: they reach past the text they are in
_BIDI_CONTROL = re.compile("[\u202a-\u202e\u2066-\u2069]")


def inert(text: Any, *, html: bool = False) -> str:
    """``text`` (any value, shown as ``str``) made safe to show: on one line, with every
    character Markdown would read as markup escaped with a backslash (``html``: every character
    HTML would read as markup written as a character reference, which browsers and plotly draw
    as the character), and a :data:`WORD_JOINER` wherever a bare address would become a link.

    >>> inert("**hi** https://x.io")
    '\\\\*\\\\*hi\\\\*\\\\* https\\\\:\\u2060//x\\\\.io'
    >>> inert("<b>a@b</b>", html=True)
    '&lt;b&gt;a@\\u2060b&lt;/b&gt;'
    >>> inert("\u202eabc")  # a right-to-left override, kept to the text
    '\\u2068abc\\u2069'
    """
    s = _LINE_BREAK.sub(" ", str(text))
    if _BIDI_CONTROL.search(s):  # isolated: its direction stops where the text does
        s = "\u2068" + _BIDI_CONTROL.sub("", s) + "\u2069"
    s = _LINK_START.sub(WORD_JOINER, s)
    if html:
        return _HTML_SPECIAL.sub(lambda m: _HTML_NAMED.get(m[0]) or f"&#{ord(m[0])};", s)
    return _MD_SPECIAL.sub(r"\\\1", s)
