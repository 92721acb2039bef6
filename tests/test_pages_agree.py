"""The small disagreements of issue 24, item 4: two numbers or two statuses on the pages that
must say the same thing (or say what each counts), and what the pages show while a user waits.
Each test opens the real dashboard under AppTest (reached from ``app.py``)."""

from __future__ import annotations

import pytest

from helpers import app, metrics, visit

pytestmark = pytest.mark.slow


def test_distributions_labels_both_medians():
    at = visit(app(), "2_Distributions.py")
    shown = metrics(at)
    assert "Median" not in shown  # an unlabelled median beside another one
    card = shown["Median, all scored rows"]
    text = " ".join(m.value for m in at.markdown)
    assert "Chance level" in text  # the demo has its chance level
    assert "median Ragas value of its " in text and "answered rows" in text
    assert card  # both are there, each saying what it counts


def test_home_and_the_sidebar_give_the_same_judge_check():
    at = app()  # the embedded default, no check run on this machine yet
    home = next(c.value for c in at.main.caption if "judge check" in c.value)
    side = next(c.value for c in at.sidebar.caption if "udge check" in c.value)
    figure = "judge check 0.68 on 40 pairs, measured for the embedded default"
    assert figure in home and figure.capitalize() in side
    assert "not yet run on this machine" in home and "not yet run on this machine" in side
    assert "not run for these models yet" not in side
