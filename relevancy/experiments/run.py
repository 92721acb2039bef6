"""An experiment from start to end: answer the plan, then score every answer into one run.

:func:`run_experiment` is what ``relevancy experiment`` and the Experiments page call. The
answers are written next to the output (``OUTPUT.answers.jsonl``) and scored by
:func:`relevancy.scoring.files.score_file`, so a run saved in the store is an ordinary run: its
``variant`` is ``TEMPLATE · MODEL``, and every row keeps the ``prompt`` it was sent, the
``model``, the ``template`` and its ``template_text``, and what the answer cost. Compare, the
Runs page and ``relevancy export`` read it as they read any run.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from relevancy.analysis.cost import Price
from relevancy.backends.cache import Cache
from relevancy.errors import InputError
from relevancy.experiments.answering import Plan, answer_all, digest
from relevancy.experiments.templates import check_templates
from relevancy.runs import RunStore
from relevancy.scoring.files import FileRun, score_file
from relevancy.scoring.metric import AnswerRelevancy

__all__ = ["ExperimentRun", "check_plan", "run_experiment", "answers_path"]


@dataclass
class ExperimentRun:
    """A finished experiment: its answers, its scored run, and what was said on the way."""

    answers: pd.DataFrame
    scored: FileRun
    warnings: list[str] = field(default_factory=list)

    @property
    def run_id(self) -> int | None:
        return self.scored.run_id

    @property
    def failed_answers(self) -> int:
        return int(self.answers["answer_error"].notna().sum())


def check_plan(plan: Plan) -> list[str]:
    """:class:`InputError` for a plan that cannot run; its warnings as lines."""
    warnings = check_templates(plan.templates, plan.questions.columns)
    if not plan.models:
        raise InputError("no model: give --model NAME (local for the embedded one)")
    if len(set(plan.models)) != len(plan.models):
        twice = next(m for m in plan.models if plan.models.count(m) > 1)
        raise InputError(f"model {twice!r} is given twice: give each model once")
    if plan.questions.empty:
        raise InputError("the question set is empty: give questions with a user_input column")
    return warnings


def answers_path(out: Path) -> Path:
    """Where the answers of an experiment scored into ``out`` are written."""
    return out.with_name(out.stem + ".answers.jsonl")


def run_settings(plan: Plan, metric: AnswerRelevancy, source: str) -> dict[str, Any]:
    """What the saved run records of the experiment (never a key)."""
    return {
        "from": "relevancy experiment",
        "experiment": {
            "questions": source,
            "templates": [
                {"name": t.name, "system": t.system, "user": t.user, "digest": digest(t.text)}
                for t in plan.templates
            ],
            "models": list(plan.models),
            "temperature": plan.settings.temperature,
            # the answers' token cap ("max_tokens" would be dropped: the store keeps no key
            # naming a token)
            "answer_cap": plan.settings.max_tokens,
            "seed": plan.settings.seed,
            "repeats": plan.settings.repeats,
        },
        "llm_name": metric.llm.name,
        "embeddings_name": metric.embeddings.name,
        "mode_used": metric.mode,
        "strictness": metric.strictness,
        "threshold": metric.threshold,
        "min_questions": metric.min_questions,
    }


def run_experiment(
    plan: Plan,
    metric: AnswerRelevancy,
    answerers: Mapping[str, Any],
    out: str | Path,
    *,
    cache: Cache | None = None,
    store: RunStore | None = None,
    run_name: str = "",
    source: str = "",
    settings: Mapping[str, Any] | None = None,
    prices: Mapping[str, Price] | None = None,
    on_answer: Callable[[int], None] | None = None,
    on_score: Callable[[int], None] | None = None,
    before_scoring: Callable[[Path], None] | None = None,
) -> ExperimentRun:
    """Answer every cell of ``plan`` and score the answers into ``out`` (and ``store``).

    Parameters
    ----------
    plan : Plan
        Templates x models x questions (x repeats).
    metric : AnswerRelevancy
        The judge.
    answerers : mapping
        Each model name of the plan to its answerer
        (:func:`relevancy.experiments.answering.make_answerer`).
    out : path
        The scored rows (.csv, .jsonl, .json or .parquet); the answers go beside it
        (:func:`answers_path`).
    cache : Cache, optional
        Where answers are kept (default: the metric's cache; None there: not kept).
    store, run_name
        Save the run there under that name.
    on_answer, on_score
        Told of each answer given and each row scored.
    before_scoring
        Called with the answers' file once it is written (``--batch-api``: the judge's
        generations from a batch, into the cache).
    """
    warnings = check_plan(plan)
    missing = [m for m in plan.models if m not in answerers]
    if missing:
        raise InputError(f"no answerer for model {missing[0]!r}")
    out = Path(out)
    cache = cache if cache is not None else metric.cache
    answers = asyncio.run(answer_all(plan, answerers, cache, progress=on_answer, prices=prices))
    path = answers_path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    answers.to_json(path, orient="records", lines=True, force_ascii=False)
    if before_scoring is not None:
        before_scoring(path)
    recorded = {**run_settings(plan, metric, source), **dict(settings or {})}
    scored = score_file(
        metric,
        path,
        out,
        progress=on_score,
        store=store,
        run_name=run_name or f"experiment: {', '.join(t.name for t in plan.templates)}",
        settings=recorded,
        source_name=f"experiment on {source}" if source else "experiment",
        label_column="",
    )
    return ExperimentRun(answers, scored, warnings)
