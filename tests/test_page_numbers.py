"""Numbers that say what the data says (issue 46, item 7), on every page of a big synthetic run
in which a few rows in a thousand score at or above the threshold: no share rounded to 0 % or
100 % that is not so, no card value long enough to be cut off, every count of a thousand or
more with separators, and no "None" or "nan" for a failed score or a missing label."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from relevancy.core.numbers import MISSING, cell_text, percent, short_duration
from relevancy.dashboard.views.format import fmt

from helpers import app, ok

PAGES = [
    "1_Dataset.py",
    "2_Distributions.py",
    "3_Embeddings.py",
    "4_Compare.py",
    "5_Runs.py",
    "6_Agreement.py",
    "7_Over_time.py",
]
#: a million rows with 1,999 at or above the threshold, made smaller with the same share
ROWS, ABOVE, FAILED = 20_000, 39, (5, 10_005)
#: the longest card value that fits a card a quarter of the page wide ("1,000,000")
CARD_CHARS = 9


def test_shares_never_round_to_none_or_all():
    assert [percent(x) for x in (0.0, 1.0, 0.5)] == ["0%", "100%", "50%"]
    assert percent(1 - 1999 / 1_000_000) == "99.8%"
    assert percent(1999 / 1_000_000) == "0.2%"
    assert percent(1 - 1 / 1_000_000) == ">99.9%" and percent(1e-6) == "<0.1%"
    assert percent(0.9996, 1) == "99.96%" and percent(0.99999, 1) == ">99.99%"
    for share in np.linspace(0.0001, 0.9999, 997):
        text = percent(share)
        assert text not in ("0%", "100%", "0.0%", "100.0%"), share


def test_missing_values_and_durations_in_one_way():
    for missing in (None, float("nan"), np.nan, pd.NA, pd.NaT, "", "  "):
        assert cell_text(missing) == MISSING
    assert cell_text(0) == "0" and cell_text("x") == "x"
    assert fmt(-0.0001) == "0.000" and fmt(-0.0006) == "-0.001"
    assert short_duration(277 * 3600 + 47 * 60) == "11.6 days"
    assert all(len(short_duration(s)) <= CARD_CHARS for s in (5, 600, 40_000, 1e6, 1e9))


def _store_run() -> int:
    """The synthetic run in the tests' run store: ABOVE rows of ROWS at 0.75, the others under
    0.5, two failed rows, a label on one row in 100 (missing on the others), and question and
    answer texts without numbers (so the digits on the page are the page's own)."""
    from relevancy.paths import default_store_path
    from relevancy.runs import RunStore
    from relevancy.testing.synthetic import synthetic_inputs, synthetic_results

    def inputs():
        for frame in synthetic_inputs(ROWS, labelled_every=100):
            frame["user_input"] = "What happens in the synthetic topic?"
            frame["response"] = frame["variant"].map(lambda v: f"Something happens ({v}).")
            yield frame

    store = RunStore(default_store_path())
    run_id = store.create_run("scale", {"backend": "embedded"}, inputs())
    step = ROWS // ABOVE
    for batch in synthetic_results(ROWS):
        out = []
        for i, r in batch:
            r.value = 0.75 if i % step == 0 and i // step < ABOVE else 0.2 + 0.002 * (i % 100)
            if i in FAILED:
                r.value, r.error = float("nan"), "the judge timed out"
            r.user_input_embedding = r.user_input_embedding[:8]  # small: a quick store
            r.question_embeddings = r.question_embeddings[:, :8]
            out.append((i, r))
        store.append_results(run_id, out)
    return run_id


def _texts(at) -> list[str]:
    out = []
    for kind in ("markdown", "caption", "info", "warning", "success", "error", "text"):
        out += [str(e.value) for e in at.get(kind)]
    for m in at.metric:
        out += [m.label, m.value, m.help or "", m.proto.delta]
    for s in [*at.selectbox, *at.sidebar.selectbox]:
        out += [str(o) for o in s.options[:50]]
    out += [e.label for e in at.get("expander")]
    out = [re.sub(r"<style>.*?</style>", " ", t, flags=re.S) for t in out if t]
    out = [re.sub(r"<[^>]+>", " ", t) for t in out]  # the text of HTML, not its attributes
    return [re.sub(r"\\(.)", r"\1", t) for t in out]  # markdown escapes off


#: a bare integer of four digits or more: not part of a date, a time, a name or an address
_BARE = re.compile(r"(?<![\w.,:/#=\-])\d{4,}(?![\w.,:/\-])")


def _grid_missing(at) -> list[str]:
    """Grids with missing cells that Streamlit would draw as "None" (no Styler text)."""
    bad = []
    for d in at.dataframe:
        if d.value.isna().to_numpy().any() and not d.proto.arrow_data.styler.display_values:
            bad.append(str(list(d.value.columns)))
    return bad


@pytest.mark.slow
def test_every_page_of_a_big_run_says_its_numbers_as_they_are():
    run_id = _store_run()
    at = app(query={"run": str(run_id)})
    seen: dict[str, list[str]] = {"app.py": _texts(at)}
    cards: dict[str, list[str]] = {"app.py": [m.value for m in at.metric]}
    grids: dict[str, list[str]] = {"app.py": _grid_missing(at)}
    for page in PAGES:
        at.switch_page(f"pages/{page}")
        ok(at.run())
        seen[page] = _texts(at)
        cards[page] = [m.value for m in at.metric]
        grids[page] = _grid_missing(at)
    for page, texts in seen.items():
        joined = "\n".join(texts)
        # 1,999 of a million (here 39 of 20,000) at or above 0.50: not "100%" below it
        assert not re.findall(r".{60}(?<![\d.])100(?:\.0+)?\s?%", joined), page
        for card in cards[page]:
            assert "…" not in card and len(card) <= CARD_CHARS, (page, card)
        # row numbers name rows (as the CLI does); "07 Dec 2026" is a date
        counts = re.sub(r"\brow \d+|\b\d{1,2} [A-Z][a-z]{2} \d{4}\b", "", joined)
        assert not _BARE.findall(counts), (page, _BARE.findall(counts))
        assert not re.search(r"\bNone\b|\bnan\b", joined), (
            page,
            re.findall(r".{40}(?:None|nan).{20}", joined),
        )
        assert not grids[page], (page, grids[page])
    home = "\n".join(seen["app.py"])
    for page in ("app.py", "1_Dataset.py", "2_Distributions.py"):
        assert "99.8%" in seen[page], page
    assert "(20,000 rows)" in home
    dataset = "\n".join(seen["1_Dataset.py"])
    assert "19,998 of 20,000 rows scored, 2 failed" in dataset
    assert "label: —" in dataset


def test_the_html_report_shows_a_failed_score_and_similarity_as_a_dash(tmp_path):
    from relevancy.core.result import QuestionScore, RelevancyResult
    from relevancy.report.html import build_report
    from relevancy.runs import RunStore

    store = RunStore(tmp_path / "runs.sqlite3")
    inputs = pd.DataFrame({"user_input": ["Where?", "When?"], "response": ["Here.", "Now."]})
    failed = RelevancyResult(
        user_input="When?",
        response="Now.",
        value=float("nan"),
        questions=[QuestionScore("", None, None), QuestionScore("When is it?", 0.4, None)],
        error="the judge timed out",
    )
    fine = RelevancyResult(
        user_input="Where?",
        response="Here.",
        value=0.8,
        questions=[QuestionScore("Where is it?", 0.8, None)],
    )
    run_id = store.create_run("r", {"backend": "embedded"}, inputs)
    store.append_results(run_id, [(0, fine), (1, failed)])
    page = build_report(store, run_id, threshold=0.5)
    text = re.sub(r"<(script|style)\b.*?</\1>", " ", page, flags=re.S)  # plotly's own code
    text = re.sub(r"<[^>]+>", " ", text)
    assert "judge timed out" in text
    assert not re.findall(r".{60}(?:\bNone\b|\bnan\b).{20}", text)
