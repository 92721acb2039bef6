"""Every sentence a page states a measured figure in, built from the measurement itself.

A figure on a page ("good answers score about ...") is only as true as the data behind it, so
no such figure is typed into a page: each sentence that states one is built here, from data the
repository ships and can reproduce (the bundled demo scored with the embedded models, the judge
check's set and its recorded result), and :data:`CLAIMS` lists them all. A test goes through
the list and checks each sentence against the data it states; another fails on a decimal figure
typed into the prose of a page.

Each function returns a :class:`Claim`: the sentence (Markdown, no user text) and the figures
it states, by name.
"""

from __future__ import annotations

import functools
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import resources

import pandas as pd

from relevancy.runs import demo_results
from relevancy.scoring.judge import EMBEDDED_DEFAULT, load_check_set

__all__ = ["Claim", "CLAIMS", "demo_scale", "judge_balance", "embedded_judge"]

#: the demo's hand labels read as good (a direct, complete answer) or as not answering
GOOD, NOT_ANSWERING = ("on-topic",), ("off-topic", "evasive")


@dataclass(frozen=True)
class Claim:
    """A sentence that states figures, and the figures (name -> value) it states."""

    text: str
    figures: dict[str, float] = field(default_factory=dict)


@functools.lru_cache(maxsize=1)
def _demo_by_label() -> dict[str, list[float]]:
    """The shipped demo's scores (embedded models) by the hand label of each answer."""
    labels = pd.read_csv(resources.files("relevancy") / "data" / "demo.csv")["answer_type"]
    scores: dict[str, list[float]] = {}
    for label, result in zip(labels, demo_results()):
        if result.ok:
            scores.setdefault(str(label), []).append(float(result.value))
    return scores


def demo_scale() -> Claim:
    """What good and non-answers score on the bundled demo with the embedded models: the scale
    a Ragas value is read on (the Distributions page)."""
    by_label = _demo_by_label()
    good = [v for k in GOOD for v in by_label.get(k, [])]
    bad = [v for k in NOT_ANSWERING for v in by_label.get(k, [])]
    figures = {
        "good_n": float(len(good)),
        "good_median": statistics.median(good),
        "bad_n": float(len(bad)),
        "bad_median": statistics.median(bad),
    }
    text = (
        f"On the bundled demo, scored with the embedded models, its {len(good)} direct, complete "
        f"answers have a median of {figures['good_median']:.2f} and its {len(bad)} off-topic or "
        f"evasive ones {figures['bad_median']:.2f}: read a score against such a scale (and the "
        "chance band), not against 1. An API model has a scale of its own: the judge check "
        "(Home) measures how well it separates complete answers from worse ones."
    )
    return Claim(text, figures)


def judge_balance() -> Claim:
    """What a judge that only prefers long answers gets on the check set: the share of pairs
    whose complete answer is the longer one."""
    pairs = load_check_set()
    longer = sum(len(p.better) > len(p.worse) for p in pairs) / len(pairs)
    text = (
        "The set is balanced for length, so a judge that just prefers long (or short) answers "
        f"gets **{longer:.2f}**"
    )
    return Claim(text, {"share_longer": longer})


def embedded_judge() -> Claim:
    """The embedded default's recorded judge check (``EMBEDDED_DEFAULT``, held to its record
    in ``tests/data/judge_embedded_default.json`` by the tests)."""
    e = EMBEDDED_DEFAULT
    text = f"the embedded default gets **{e['agreement']:.2f}** on its {e['pairs']} pairs"
    return Claim(text, {"agreement": float(e["agreement"]), "pairs": float(e["pairs"])})


#: every figure-stating sentence of the pages, by the place it is shown
CLAIMS: dict[str, Callable[[], Claim]] = {
    "Distributions: the scale of a Ragas value": demo_scale,
    "Home, judge check: what a length-only judge gets": judge_balance,
    "Home, judge check: the embedded default's figure": embedded_judge,
}
