"""``relevancy score-one``: one question/answer pair scored and explained."""

from __future__ import annotations

import argparse
from typing import Any

from relevancy.cli import add_command
from relevancy.cli.options import add_backend_options, embedded_line, metric_from_args
from relevancy.core.modes import describe_mode
from relevancy.core.noncommittal import evasive_wording
from relevancy.core.triage import REASONS, completeness, verdict
from relevancy.io import check_text


def register(sub: Any) -> None:
    """Add this command's parser to ``sub`` (the subcommands of ``relevancy``)."""
    p = add_command(sub, "score-one")
    p.add_argument("question")
    p.add_argument("answer")
    p.add_argument(
        "--threshold", type=float, default=0.5, help="the 'low score' threshold of the verdict"
    )
    add_backend_options(p)
    p.set_defaults(func=cmd_score_one)


def cmd_score_one(args: argparse.Namespace) -> int:
    check_text("question", args.question)
    check_text("answer", args.answer)
    metric = metric_from_args(args, concurrency=1)
    r = metric.score(user_input=args.question, response=args.answer)
    print(f"question : {args.question}")
    print(f"answer   : {args.answer}")
    print(f"models   : {r.llm} + {r.embeddings}")
    print("generated questions (cosine similarity to the question):")
    for q in r.questions:
        if q.similarity is None:
            print(f"  {'  -  ':>6}  [unusable: {q.error}]")
        else:
            flag = "  (flagged noncommittal)" if q.noncommittal else ""
            print(f"  {q.similarity:6.3f}  {q.question}{flag}")
    print(f"questions: {r.questions_used} of {r.strictness} used")
    verdict = "yes" if r.noncommittal else "no"
    print(f"noncommittal: {verdict} ({r.noncommittal_method}: {r.noncommittal_detail})")
    if r.error:
        print(f"score    : nan ({r.error})")
        return 1
    sims = r.similarities
    worked = " + ".join(f"{s:.3f}" for s in sims)
    rule = "  x 0 (noncommittal)" if r.noncommittal else ""
    ragas = "score    " if r.mode == "ragas" else "ragas    "
    print(f"{ragas}: {r.ragas_value:.3f}   = ({worked}) / {len(sims)}{rule}")
    if r.mode != "ragas":
        print("sentences of the answer (cosine similarity to the question):")
        for part in r.parts:
            print(f"  {part['similarity']:6.3f}  {part['text']}")
        print(f"score    : {r.value:.3f}   ({r.mode} mode: {describe_mode(r.mode)})")
    print(f"verdict  : {_verdict(r, metric)}")
    said = REASONS.get(r.reason, r.reason)
    if r.reason == "ok":  # "complete" only where each part of the question was checked
        said = f"{said}; {completeness(r)}"
    elif r.reason == "evasive":
        said = f"{said}: it says “{evasive_wording(r.response)}”"
    print(f"reason   : {said if said.startswith(r.reason) else f'{r.reason} · {said}'}")
    note = embedded_line(metric)
    if note:
        print(f"note     : {note}")
    return 0


def _verdict(r: Any, metric: Any) -> str:
    """The verdict word, with what it rests on (no verdict on fewer questions than needed)."""
    word = verdict(r.value, metric.threshold, r.questions_used, r.strictness, metric.min_questions)
    rests = f"{r.questions_used} of {r.strictness} generated questions"
    if word == "incomplete":
        return (
            f"incomplete: the score rests on {rests}, fewer than the "
            f"{metric.min_questions} a verdict needs (--min-questions)"
        )
    side = "≥" if word == "relevant" else "<"
    return f"{word} ({r.value:.3f} {side} threshold {metric.threshold:g}; from {rests})"
