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

Gives a confusion table per set (label x reason) and the share of rows whose reason matches
the label. Neither set was used to set the thresholds of the reasons.
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


def measure(args: argparse.Namespace) -> dict[str, Any]:
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


def _table(fig: dict[str, Any]) -> str:
    reasons = ["ok", "partial", "padded", "off_topic", "noncommittal", "language_mismatch",
               "generator_suspect", "error"]  # fmt: skip
    rows = [[f"{label} (→ {EXPECTED.get(label, '?')})", *(str(c.get(x, "")) for x in reasons),
             f"{fig['per_label'][label]['matched']}/{fig['per_label'][label]['rows']}"]
            for label, c in fig["counts"].items()]  # fmt: skip
    share = f"{fig['matched']}/{fig['rows']} ({100 * fig['matched'] / max(1, fig['rows']):.0f}%)"
    rows.append(["**all**", *[""] * len(reasons), share])
    return table(["hand label", *reasons, "matched"], rows)


def tables(fig: dict[str, Any]) -> dict[str, str]:
    return {"": _table(fig["demo"]), "check_set": _table(fig["check_set"])}


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--cache", default=None, help="cache folder (default: the user's)")


if __name__ == "__main__":
    raise SystemExit(main("reasons", measure, arguments))
