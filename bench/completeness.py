"""Completeness candidates (issue 19): offline scores that reward complete answers, measured on
both development sets without letting answer length do the work.

Every candidate is built from signals the library computes offline with the embedder alone
(MiniLM): the answer's sentences and clauses, the question's parts (``relevancy._text``), their
cosines, the noncommittal verdict of the exemplar detector; and, where a run's generations are
at hand, the generated questions and the Ragas value (``bench/agreement_out``). No question is
generated here.

Both sets are split by question, fixed and committed: HaluQuestQA ``bench/haluquestqa_split.json``
(dev 232 / heldout 466), MedQuAD/LiveQA ``bench/medquad_split.json`` (made here, see
:func:`make_medquad_split`). Candidates and their constants were chosen on ``dev``; the figures
that decide are those on ``heldout``.

    python bench/completeness.py --json bench/results/completeness.json
    python bench/completeness.py --make-split      # (re)write bench/medquad_split.json
"""

from __future__ import annotations

import collections
import json
import random
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _agreement_stats import load_rows  # noqa: E402

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
SHARED_DATA = ROOT.parent / "shared" / "data"
MEDQUAD_SPLIT = BENCH / "medquad_split.json"
MEDQUAD_SPLIT_SEED = 20261203


def make_medquad_split(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """MedQuAD/LiveQA split by question into two halves, stratified and seeded.

    Stratum of a question: (has a grade 4 vs 3 pair, has a grade 2 vs 1 pair, has an answer of
    grade 3 or 4). Within a stratum the questions are ordered by their number of within-question
    pairs (4 vs 3 and 2 vs 1), then answers, then id, and taken two at a time; a seeded coin
    sends one of each two to ``dev`` and the other to ``heldout`` (an odd one out: the coin
    alone). So both halves get about as many questions, pairs and completeness pairs.
    """
    grades: dict[str, list[int]] = collections.defaultdict(list)
    for r in rows:
        grades[r["qid"]].append(int(r["label"]))
    strata: dict[tuple[bool, bool, bool], list[tuple[int, int, str]]] = collections.defaultdict(
        list
    )
    for qid, g in grades.items():
        c = collections.Counter(g)
        n43, n21 = c[4] * c[3], c[2] * c[1]
        key = (n43 > 0, n21 > 0, c[3] + c[4] > 0)
        strata[key].append((n43 + n21, len(g), qid))
    rng = random.Random(MEDQUAD_SPLIT_SEED)
    halves: dict[str, list[str]] = {"dev": [], "heldout": []}
    for key in sorted(strata):
        ordered = [qid for *_, qid in sorted(strata[key])]
        for k in range(0, len(ordered), 2):
            two = ordered[k : k + 2]
            first, second = ("dev", "heldout") if rng.random() < 0.5 else ("heldout", "dev")
            halves[first].append(two[0])
            if len(two) > 1:
                halves[second].append(two[1])
    return {
        "description": (
            "MedQuAD/LiveQA split by question (qid) into halves: dev (used to choose candidates "
            "and constants), heldout (reported). Stratified by (has a grade 4 vs 3 pair, has a "
            "grade 2 vs 1 pair, has an answer graded 3 or 4); within a stratum questions sorted "
            "by (within-question pairs, answers, qid) and taken two at a time, "
            f"random.Random({MEDQUAD_SPLIT_SEED}) deciding which of the two is dev; made by "
            "bench/completeness.py --make-split."
        ),
        "seed": MEDQUAD_SPLIT_SEED,
        "qids": {k: sorted(v, key=lambda q: int(q.lstrip("TQ"))) for k, v in halves.items()},
    }


def write_split(data: Path) -> None:
    split = make_medquad_split(load_rows(data))
    if MEDQUAD_SPLIT.exists() and json.loads(MEDQUAD_SPLIT.read_text()) == split:
        print(f"{MEDQUAD_SPLIT.name} is up to date")
        return
    MEDQUAD_SPLIT.write_text(json.dumps(split) + "\n")
    print(f"wrote {MEDQUAD_SPLIT}")
