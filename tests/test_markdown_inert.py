"""Text from data is shown as text on every page: a run name, a variant, a column value, a
question or an answer holding Markdown or a URL is never a live link, a heading or emphasis.

A run is scored from rows whose every text carries Markdown, HTML and bare URLs; every page is
opened as a user does (from ``app.py``, through ``switch_page``) with that run active, and every
element that Streamlit renders as Markdown (markdown, captions, headings, alerts, expander,
metric and widget labels, help texts) is checked: the payloads may appear only escaped."""

from __future__ import annotations

import re

import pandas as pd
import pytest

from relevancy.cli import main
from relevancy.paths import default_store_path
from relevancy.runs import RunStore

from helpers import app, cli_backends, ok, visit

NAME = "u3 <i>inject</i> [run](https://example.com/run)"
QUESTION = "What does https://example.com/q) say about **resets** and [links](https://x.io)?"
ANSWER = "See https://example.com/a and _this_ [page](https://example.com/p) # heading"
VARIANTS = ["[A](https://example.com/va)", "**B** https://example.com/vb"]
TEAM = "<b>team</b> [t](https://example.com/t) `code`"
PAGES = [
    "1_Dataset.py",
    "2_Distributions.py",
    "3_Embeddings.py",
    "4_Compare.py",
    "5_Runs.py",
    "6_Agreement.py",
    "7_Over_time.py",
]
#: a live link, a bare URL GitHub-flavoured Markdown would link, emphasis or HTML from the data
LIVE = re.compile(
    r"\]\(https?:|(?<!\\)https?:|(?<![\\*])\*\*(resets|B)\*\*|(?<!\\)<(i|b)>|(?<!\\)_this_"
)
#: a bare address as Streamlit's Markdown finds it once the escapes are read (escaping is not
#: enough: remark-gfm links ``https\://x\.io``)
BARE = re.compile(r"https?://|www\.|[\w.+-]@[\w-]+\.", re.IGNORECASE | re.ASCII)


def _live(text: str) -> bool:
    return bool(LIVE.search(text) or BARE.search(re.sub(r"\\(.)", r"\1", text)))


def shown_markdown(at) -> list[str]:
    """Every string of the page Streamlit renders as Markdown."""
    found = []
    for kind in (
        "markdown",
        "caption",
        "title",
        "header",
        "subheader",
        "success",
        "info",
        "warning",
        "error",
        "latex",
    ):
        found += [str(e.value) for e in getattr(at, kind)]
    for element in at.expander:
        found.append(str(element.label))
    for element in at.metric:
        found.append(str(element.label))
    for kind in (
        "selectbox",
        "multiselect",
        "radio",
        "text_input",
        "slider",
        "checkbox",
        "button",
        "toggle",
        "number_input",
        "select_slider",
        "text_area",
    ):
        for widget in getattr(at, kind):
            found.append(str(getattr(widget, "label", "")))
            found.append(str(getattr(widget, "help", "") or ""))
    for tab in at.tabs:
        found.append(str(tab.label))
    return found


@pytest.fixture
def hostile_run(tmp_path, toy_server):
    rows = [
        {
            "id": f"q{i}",
            "variant": VARIANTS[i % 2],
            "team": TEAM,
            "user_input": f"{QUESTION} ({i // 2})",
            "response": f"{ANSWER} {i}",
        }
        for i in range(8)
    ]
    path = tmp_path / "hostile.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    args = [
        "score",
        str(path),
        "-o",
        str(tmp_path / "out.csv"),
        "--save-run",
        NAME,
        "-q",
        *cli_backends(toy_server),
    ]
    assert main(args) == 0
    return next(r for r in RunStore(default_store_path()).list_runs() if r.name == NAME)


@pytest.mark.slow
def test_text_from_data_is_never_live_markdown_on_any_page(hostile_run):
    at = app()
    at.session_state["active_run"] = hostile_run.id
    ok(at.run())
    pages = {"app.py": shown_markdown(at)}
    for page in PAGES:
        visit(at, page)
        pages[page] = shown_markdown(at)
    # the drill-down of a row, as its link opens it
    at = app("1_Dataset.py", query={"run": str(hostile_run.id), "row": "1"})
    pages["drill-down"] = shown_markdown(at)
    # an HTML block (the sentence table) is not Markdown: its data must be HTML-escaped
    html = [t for texts in pages.values() for t in texts if t.lstrip().startswith("<")]
    assert html and not [t for t in html if "<i>inject" in t or "<b>team" in t]
    pages = {p: [t for t in texts if not t.lstrip().startswith("<")] for p, texts in pages.items()}
    live = {page: [t for t in texts if _live(t)] for page, texts in pages.items()}
    assert {p: t for p, t in live.items() if t} == {}
    # and the data is there, escaped, where the pages name it
    everything = " ".join(t for texts in pages.values() for t in texts)
    assert "u3 \\<i\\>inject\\</i\\> \\[run\\]\\(https\\:\u2060//example\\.com/run\\)" in everything


def test_a_direction_control_in_the_data_stays_inside_its_text():
    """A variant named with a right-to-left override (U+202E) turned the rest of Compare's
    sentences backwards ("…sniw %23"): the controls are taken out and the text isolated."""
    from relevancy.core.inert import inert

    for control in ("\u202e", "\u202b", "\u2067", "\u2069"):
        for html in (False, True):
            shown = inert(f"{control}RTL name", html=html)
            assert shown.startswith("\u2068") and shown.endswith("\u2069")
            assert control not in shown[1:-1] and "RTL name" in shown
    assert inert("مرحبا") == "مرحبا"  # right-to-left words alone: left as they are
