"""Every figure a page states comes from a measurement the repository reproduces: each sentence
of ``relevancy.dashboard.views.claims.CLAIMS`` is checked against the data it states, worked
out here again from the shipped files, and no page or widget types a decimal figure into its
prose."""

from __future__ import annotations

import ast
import json
import re
import statistics
from pathlib import Path

import pandas as pd
import pytest

from relevancy.dashboard.views.claims import CLAIMS, demo_scale, embedded_judge, judge_balance

from helpers import ROOT, app, ok, visit

DATA = ROOT / "relevancy" / "data"


def test_the_demo_scale_states_the_shipped_demo():
    labels = pd.read_csv(DATA / "demo.csv")["answer_type"].tolist()
    rows = [json.loads(line) for line in (DATA / "demo_results.jsonl").read_text().splitlines()]
    good = [r["value"] for label, r in zip(labels, rows) if label == "on-topic"]
    bad = [r["value"] for label, r in zip(labels, rows) if label in ("off-topic", "evasive")]
    claim = demo_scale()
    assert (
        f"its {len(good)} direct, complete answers have a median of "
        f"{statistics.median(good):.2f}" in claim.text
    )
    assert f"its {len(bad)} off-topic or evasive ones {statistics.median(bad):.2f}" in claim.text
    # the figure the page used to type ("good answers usually score above 0.7") was not so
    assert statistics.median(good) < 0.7


def test_the_judge_check_sentences_state_the_check_set_and_its_record():
    pairs = [json.loads(line) for line in (DATA / "judge_check.jsonl").read_text().splitlines()]
    longer = sum(len(p["better"]) > len(p["worse"]) for p in pairs) / len(pairs)
    assert f"gets **{longer:.2f}**" in judge_balance().text
    record = json.loads((ROOT / "tests" / "data" / "judge_embedded_default.json").read_text())
    agreement = record.get("agreement", record.get("summary", {}).get("agreement"))
    if agreement is None:  # the record lists pairs: the agreement is their share of wins
        found = record["pairs"]
        agreement = sum(p["better_score"] > p["worse_score"] for p in found) / len(found)
    assert f"**{agreement:.2f}**" in embedded_judge().text


@pytest.mark.parametrize("name", list(CLAIMS))
def test_every_claim_states_each_of_its_figures(name):
    claim = CLAIMS[name]()
    for figure, value in claim.figures.items():
        shown = f"{value:.0f}" if float(value).is_integer() else f"{value:.2f}"
        assert shown in claim.text, (name, figure, value)


#: decimal figures a page may type: definitions, not measurements
DEFINITIONS = {
    "0.5 is a coin",  # AUROC's chance level, by definition
}
_FIGURE = re.compile(r"(?<![\w.#%{:])\d+\.\d+(?![\w%])")


def _prose(path: Path) -> list[str]:
    """The string literals of a module that read as prose (spaces, letters), docstrings aside;
    an f-string counts as the text around its fields."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            found.append(" ".join(v.value for v in node.values if isinstance(v, ast.Constant)))
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docstrings
        ):
            found.append(node.value)
    css = re.compile(r"[\w-]+:\s*[^;]*;")  # style attributes and rules are not prose
    return [s for s in found if " " in s and re.search(r"[a-z]{3}", s) and not css.search(s)]


def test_no_page_types_a_measured_figure():
    files = [
        ROOT / "app.py",
        *sorted((ROOT / "pages").glob("*.py")),
        *sorted((ROOT / "relevancy" / "dashboard").rglob("*.py")),
    ]
    typed = []
    for path in files:
        if path.name == "claims.py":
            continue
        for text in _prose(path):
            if _FIGURE.search(text) and not any(d in text for d in DEFINITIONS):
                typed.append(f"{path.relative_to(ROOT)}: {text}")
    assert typed == []


@pytest.mark.slow
def test_the_pages_show_the_claims():
    at = app()
    shown = " ".join(m.value for m in at.markdown)
    assert judge_balance().text in shown and embedded_judge().text in shown
    ok(visit(at, "2_Distributions.py"))
    assert any(demo_scale().text in c.value for c in at.caption)
