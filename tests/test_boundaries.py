"""The boundaries a one-character change would move, each pinned where it sits: a score at the
threshold is ``relevant`` in write-backs and ``ok`` in the triage (a score below it is neither);
a difference of exactly the tie margin is a tie; a row that failed is not counted as scored
from fewer questions than asked.
"""

from __future__ import annotations

import math

import pandas as pd

from relevancy.analysis.compare import outcome
from relevancy.core.result import Generation
from relevancy.core.triage import triage
from relevancy.io.exporters import label_of
from relevancy.scoring.files import score_file
from relevancy.scoring.metric import AnswerRelevancy
from relevancy.testing.fakes import FakeEmbedder, FakeGenerator

from helpers import toy_metric, write_rows


def test_a_score_at_the_threshold_is_labelled_relevant() -> None:
    assert label_of(0.5, 0.5) == "relevant"
    assert label_of(math.nextafter(0.5, 0.0), 0.5) == "irrelevant"
    assert label_of(0.73, 0.73) == "relevant"


def test_a_difference_of_exactly_the_tie_margin_is_a_tie() -> None:
    assert outcome(0.02, 0.02) == "tie"
    assert outcome(-0.02, 0.02) == "tie"
    assert outcome(math.nextafter(0.02, 1.0), 0.02) == "win"
    assert outcome(math.nextafter(-0.02, -1.0), 0.02) == "loss"
    assert outcome(0.25, 0.25) == "tie" and outcome(0.0, 0.0) == "tie"


def test_a_score_at_the_threshold_is_ok_and_just_below_it_drifts(toy_server) -> None:
    result = toy_metric(toy_server, cache=False).score(
        user_input="Where is the Eiffel Tower?",
        response="The Eiffel Tower is in Paris, France.",
    )
    assert result.flags == [] and result.reason == "ok"  # nothing else to say of this row
    assert triage(result, threshold=result.value).reason == "ok"
    below = triage(result, threshold=math.nextafter(result.value, 1.0))
    assert below.reason == "drifting"


def test_a_failed_row_is_not_counted_as_incomplete(tmp_path) -> None:
    # three rows: every generation fails (NaN), one of three fails (incomplete), none fails
    def script(response: str, n: int) -> list[Generation]:
        if response.startswith("Fails"):
            return [Generation("", None, "generation failed: HTTP 500")] * n
        good = [Generation(f"What is {response} {j}?", False) for j in range(n)]
        if response.startswith("Short"):
            good[-1] = Generation("", None, "cut off after 20 s")
        return good

    metric = AnswerRelevancy(llm=FakeGenerator(script), embeddings=FakeEmbedder(), cache=False)
    rows = [
        {"question": "What fails?", "answer": "Fails every time."},
        {"question": "What is short?", "answer": "Short of one question."},
        {"question": "What is whole?", "answer": "Whole and sound."},
    ]
    src = write_rows(tmp_path / "rows.csv", rows)
    run = score_file(metric, src, tmp_path / "out.csv")
    frame = pd.read_csv(tmp_path / "out.csv")
    assert frame["score"].isna().tolist() == [True, False, False]
    assert frame["questions_used"].tolist() == [0, 2, 3]
    assert run.incomplete == 1  # the short row only: the failed one is NaN, not incomplete
