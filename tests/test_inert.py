"""The one function that makes text from the data safe to show (``relevancy.core.inert``), over
made-up hostile strings: after it, no Markdown markup, no HTML and no bare address that
Streamlit's Markdown (remark-gfm's autolink literals) or plotly would make live is left, and
the text reads the same (only escapes and invisible word joiners are added).

The browser test ``tests/browser/test_hostile_text.py`` checks the pages that use it."""

from __future__ import annotations

import html
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from relevancy.core.inert import WORD_JOINER, inert
from relevancy.dashboard.views.format import esc
from relevancy.report.charts import hover_text, label

PROPERTY = settings(
    max_examples=400,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)

#: pieces of text that Markdown, HTML or an autolinker would read as markup
PIECES = [
    "[x](https://evil.example)",
    "https://evil.example/a",
    "HTTP://EVIL.EXAMPLE",
    "http://x.io?a=1&b=2",
    "ftp://evil.example",
    "www.evil.example",
    "WWW.Evil.Example/p",
    "wwww.evil.example",
    "mail@evil.example",
    "first.last+tag@sub.evil.example",
    "mailto:a@evil.example",
    "<https://evil.example/angle>",
    "<b>bold</b>",
    "<a href='https://evil.example'>a</a>",
    '<img src="x" onerror="alert(1)">',
    "javascript:alert(1)",
    "[j](javascript:alert(1))",
    "![img](https://evil.example/i.png)",
    "**bold**",
    "__bold__",
    "*em*",
    "_em_",
    "~~gone~~",
    "`code`",
    "```\nblock\n```",
    "# heading",
    "\n## heading",
    "> quote",
    "- item",
    "1. item",
    "| a | b |",
    "$x^2$",
    "$$\\sum$$",
    ":red[red]",
    ":material/home:",
    ":smile:",
    "[ref]: https://evil.example",
    "&lt;b&gt;",
    "&amp;",
    "%{x}",
    "\\*not\\*",
    "a\r\nb",
    "https\\://evil\\.example",
    "é ü 東京 🙂",
    " ",
    ".",
    ":",
    "//",
    "@",
]

# remark-gfm's autolink literals (mdast-util-gfm-autolink-literal), as Streamlit's Markdown
# finds them in the text once escapes are read; JavaScript's \w is ASCII
_URL = re.compile(r"(https?://|www(?=\.))([-.\w]+)", re.IGNORECASE | re.ASCII)
_EMAIL = re.compile(r"([-.\w+]+)@([-\w]+(?:\.[-\w]+)+)", re.ASCII)
_MD_SPECIAL = set("\\`*_{}[]()#+-.!|>~<$:")

texts = st.lists(
    st.one_of(st.sampled_from(PIECES), st.text(max_size=8)), min_size=1, max_size=8
).map("".join)


def _read_markdown(shown: str) -> str:
    """What Markdown reads from an escaped string: each backslash escape as its character.
    Asserts that every character Markdown would read as markup is escaped."""
    out, i = [], 0
    while i < len(shown):
        c = shown[i]
        if c == "\\":
            assert i + 1 < len(shown) and shown[i + 1] in _MD_SPECIAL, shown
            out.append(shown[i + 1])
            i += 2
            continue
        assert c not in _MD_SPECIAL, f"unescaped {c!r} in {shown!r}"
        out.append(c)
        i += 1
    return "".join(out)


def _no_live_address(text: str) -> None:
    assert not _URL.search(text), text
    assert not _EMAIL.search(text), text


def _one_line(text: str) -> str:
    return re.sub(r"\r\n|[\r\n]", " ", text)


@PROPERTY
@given(texts)
def test_markdown_escapes_every_markup_character_and_no_address_links(text):
    shown = inert(text)
    assert "\n" not in shown and "\r" not in shown
    read = _read_markdown(shown)
    _no_live_address(read)
    assert read.replace(WORD_JOINER, "") == _one_line(text).replace(WORD_JOINER, "")


@PROPERTY
@given(texts)
def test_html_leaves_no_tag_quote_or_template_and_no_address_links(text):
    shown = inert(text, html=True)
    assert not set("<>\"'\n\r") & set(shown) and "%{" not in shown
    # every & starts a reference that browsers and plotly read (plotly knows few names)
    assert re.fullmatch(r"([^&]|&(amp|lt|gt|#\d+);)*", shown, re.DOTALL), shown
    read = html.unescape(shown)
    _no_live_address(read)
    assert read.replace(WORD_JOINER, "") == _one_line(text).replace(WORD_JOINER, "")


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("https://evil.example/a", "https\\:\u2060//evil\\.example/a"),
        ("www.evil.example", "www\u2060\\.evil\\.example"),
        ("mail@evil.example", "mail@\u2060evil\\.example"),
        ("[x](https://e.x)", "\\[x\\]\\(https\\:\u2060//e\\.x\\)"),
        ("<b>bold</b> **b** `c`", "\\<b\\>bold\\</b\\> \\*\\*b\\*\\* \\`c\\`"),
        ("javascript:alert(1)", "javascript\\:alert\\(1\\)"),
        ("plain words stay", "plain words stay"),
    ],
)
def test_markdown_examples(text, shown):
    assert inert(text) == shown == esc(text)


def test_html_examples_and_the_chart_helpers_use_it():
    text = "<b>x</b> & \"q\" 'a' https://e.x %{y}"
    shown = "&lt;b&gt;x&lt;/b&gt; &amp; &#34;q&#34; &#39;a&#39; https:\u2060//e.x &#37;{y}"
    assert inert(text, html=True) == shown == label(text) == hover_text(text, width=200)
    assert label(None) == "" and inert(None) == "None"
    # a long text is wrapped into lines, each made safe
    assert hover_text("www.e.x " * 20, width=30).count("<br>") >= 4
    assert "www\u2060.e.x" in hover_text("www.e.x " * 20, width=30)
