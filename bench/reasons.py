"""Reason codes against hand labels: the demo's ``answer_type`` and the judge check set's kinds.

Every result carries one main reason (``relevancy.core.triage.triage``: ok, partial, padded,
off_topic, noncommittal, language_mismatch, generator_suspect, error). Two labelled sets say
what it should be:

* the bundled demo (48 answers, ``relevancy/data/demo.csv``): its ``answer_type`` column,
  written with the demo (on-topic, partial, padded, off-topic, evasive); its shipped results
  (``demo_results.jsonl``) are read as they are;
* the judge check set (``relevancy/data/judge_check.jsonl``, 40 questions): each complete
  answer should be ``ok``, each worse one its kind (partial, padded, drifting -> off_topic,
  evasive -> noncommittal, or evasive when the detector missed it and the answer says so in
  so many words); scored here with the embedded default (cached).

Gives a confusion table per set (label x reason), the share of rows whose reason matches the
label, and how many rows are called ``ok`` below the threshold (0.5; none should be). A
``drifting`` reason (below the threshold, no other cause) counts for the off-topic and drifting
labels; "strict" counts only ``off_topic`` there, as before that reason existed. The first
thresholds of the reasons were set without either set; ``PAD_GAP``, the evasive wording and
the kind-of-answer check of ``partial`` (issue 24) were written after reading both, so their
figures here are not held out.
"""

from __future__ import annotations

import argparse
import collections
from typing import Any

from bench.harness import main, table

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

#: reasons that also match a label (besides ``EXPECTED``'s)
ALSO = {"off-topic": ("drifting",), "drifting": ("drifting",), "evasive": ("evasive",)}

THRESHOLD = 0.5


def _matches(label: str, reason: str) -> bool:
    return reason == EXPECTED.get(label) or reason in ALSO.get(label, ())


def _confusion(pairs: list[tuple[str, str, float]]) -> dict[str, Any]:
    counts: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    for label, reason, _ in pairs:
        counts[label][reason] += 1
    return {
        "rows": len(pairs),
        "matched": sum(_matches(label, reason) for label, reason, _ in pairs),
        "matched_strict": sum(EXPECTED.get(label) == reason for label, reason, _ in pairs),
        "ok_below_threshold": sum(reason == "ok" and v < THRESHOLD for _, reason, v in pairs),
        "counts": {label: dict(c) for label, c in counts.items()},
        "per_label": {
            label: {
                "rows": sum(c.values()),
                "matched": sum(n for reason, n in c.items() if _matches(label, reason)),
            }
            for label, c in counts.items()
        },
    }


def measure(args: argparse.Namespace) -> dict[str, Any]:
    from relevancy import AnswerRelevancy
    from relevancy.core.triage import triage
    from relevancy.runs import demo_inputs, demo_results
    from relevancy.scoring.judge import load_check_set

    labels = demo_inputs()["answer_type"].tolist()
    demo = [(label, triage(r).reason, r.value) for label, r in zip(labels, demo_results())]
    pairs = load_check_set()
    rows = [(p.user_input, text) for p in pairs for text in (p.better, p.worse)]
    results = AnswerRelevancy(cache=args.cache or True).score_many(rows)
    check = []
    for i, p in enumerate(pairs):
        better, worse = results[2 * i], results[2 * i + 1]
        check.append(("complete", better.reason, better.value))
        check.append((p.kind, worse.reason, worse.value))
    return {"demo": _confusion(demo), "check_set": _confusion(check)}


def _table(fig: dict[str, Any]) -> str:
    reasons = [
        "ok",
        "partial",
        "padded",
        "off_topic",
        "noncommittal",
        "evasive",
        "language_mismatch",
        "generator_suspect",
        "incomplete_generation",
        "drifting",
        "error",
    ]
    rows = [
        [
            f"{label} (→ {' or '.join((EXPECTED.get(label, '?'), *ALSO.get(label, ())))})",
            *(str(c.get(x, "")) for x in reasons),
            f"{fig['per_label'][label]['matched']}/{fig['per_label'][label]['rows']}",
        ]
        for label, c in fig["counts"].items()
    ]

    def share(n: int) -> str:
        return f"{n}/{fig['rows']} ({100 * n / max(1, fig['rows']):.0f}%)"

    rows.append(["**all**", *[""] * len(reasons), share(fig["matched"])])
    rows.append(["strict (off_topic only)", *[""] * len(reasons), share(fig["matched_strict"])])
    rows.append([f"`ok` below {THRESHOLD}", *[""] * len(reasons), str(fig["ok_below_threshold"])])
    return table(["hand label", *reasons, "matched"], rows)


def tables(fig: dict[str, Any]) -> dict[str, str]:
    return {"": _table(fig["demo"]), "check_set": _table(fig["check_set"])}


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--cache", default=None, help="cache folder (default: the user's)")


if __name__ == "__main__":
    raise SystemExit(main("reasons", measure, arguments))
