"""Reason codes against hand labels: the demo's ``answer_type`` and the judge check set's kinds.

Every result carries one main reason (``relevancy.core.triage.triage``: ok, partial, padded,
off_topic, noncommittal, language_mismatch, generator_suspect, error). Two labelled sets say
what it should be:

* the bundled demo (48 answers, ``relevancy/data/demo.csv``): its ``answer_type`` column,
  written with the demo (on-topic, partial, padded, off-topic, evasive); its shipped results
  (``demo_results.jsonl``) are read as they are;
* the judge check set (``relevancy/data/judge_check.jsonl``, 40 questions): each complete
  answer should be ``ok``, each worse one its kind (partial, padded, drifting -> off_topic,
  evasive -> noncommittal); scored here with the embedded default (cached).

Prints a confusion table per set (label x reason) and the share of rows whose reason matches
the label. Neither set was used to set the thresholds of the reasons.

    python bench/reasons.py --json bench/results/reasons.json
"""

from __future__ import annotations

import collections
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import emit, fmt, parser, table  # noqa: E402

#: what each hand label should come out as
EXPECTED = {
    "on-topic": "ok",
    "complete": "ok",
    "partial": "partial",
    "padded": "padded",
    "off-topic": "off_topic",
    "drifting": "off_topic",
    "evasive": "noncommittal",
}


def _confusion(pairs: list[tuple[str, str]]) -> dict[str, Any]:
    counts: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    for label, reason in pairs:
        counts[label][reason] += 1
    right = sum(EXPECTED.get(label) == reason for label, reason in pairs)
    return {
        "rows": len(pairs),
        "matched": right,
        "counts": {label: dict(c) for label, c in counts.items()},
        "per_label": {
            label: {"rows": sum(c.values()), "matched": c.get(EXPECTED.get(label, ""), 0)}
            for label, c in counts.items()
        },
    }


def measure(args: Any) -> dict[str, Any]:
    from relevancy import AnswerRelevancy
    from relevancy.core.triage import triage
    from relevancy.runs import demo_inputs, demo_results
    from relevancy.scoring.judge import load_check_set

    labels = demo_inputs()["answer_type"].tolist()
    demo = [(label, r.reason or triage(r).reason) for label, r in zip(labels, demo_results())]
    pairs = load_check_set()
    rows = [(p.user_input, text) for p in pairs for text in (p.better, p.worse)]
    results = AnswerRelevancy(cache=args.cache or True).score_many(rows)
    check = []
    for i, p in enumerate(pairs):
        check.append(("complete", results[2 * i].reason))
        check.append((p.kind, results[2 * i + 1].reason))
    return {"demo": _confusion(demo), "check_set": _confusion(check)}


def main() -> int:
    p = parser(__doc__.splitlines()[0], default_rows=0)
    p.add_argument("--cache", default=None, help="cache folder (default: the user's)")
    args = p.parse_args()
    emit(measure(args), args.json)
    return 0


def _table(fig: dict[str, Any]) -> str:
    reasons = ["ok", "partial", "padded", "off_topic", "noncommittal", "language_mismatch",
               "generator_suspect", "error"]  # fmt: skip
    rows = []
    for label, counts in fig["counts"].items():
        per = fig["per_label"][label]
        cells = [str(counts.get(r, "")) for r in reasons]
        rows.append([f"{label} (→ {EXPECTED.get(label, '?')})", *cells,
                     f"{per['matched']}/{per['rows']}"])  # fmt: skip
    return table(["hand label", *reasons, "matched"], rows)


def render(fig: dict[str, Any], record: dict[str, Any] | None = None) -> str:
    """The "Reason codes against hand labels" section of RESULTS.md."""
    demo, check = fig["demo"], fig["check_set"]
    return "\n".join(
        [
            "Each row's main reason (`relevancy.core.triage.triage`) against labels written by "
            "hand, on the bundled demo (its shipped results, `answer_type` column) and on the "
            "judge check set (the complete answers should be `ok`, the worse ones their kind; "
            "scored with the embedded default). Neither set chose a threshold.",
            "",
            f"**Demo**: {demo['matched']}/{demo['rows']} rows "
            f"({fmt(100 * demo['matched'] / max(1, demo['rows']), 0)}%) get the reason of their "
            "label.",
            "",
            _table(demo),
            "",
            f"**Judge check set**: {check['matched']}/{check['rows']} answers "
            f"({fmt(100 * check['matched'] / max(1, check['rows']), 0)}%).",
            "",
            _table(check),
        ]
    )


if __name__ == "__main__":
    raise SystemExit(main())
