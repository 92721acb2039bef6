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
from urllib.parse import urlsplit, urlunsplit

import pandas as pd

from relevancy.analysis.cost import Price
from relevancy.backends.cache import Cache
from relevancy.errors import InputError
from relevancy.experiments.answering import AnswerSettings, Plan, answer_all, digest
from relevancy.experiments.templates import check_templates
from relevancy.runs import RunStore
from relevancy.scoring.files import FileRun, score_file
from relevancy.scoring.metric import AnswerRelevancy

__all__ = [
    "ExperimentRun",
    "check_plan",
    "run_experiment",
    "answers_path",
    "public_url",
    "judge_record",
    "JUDGE_OPTIONS",
]


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


#: what the command line says to do when no model is named (the page says its own)
NO_MODEL = "give --model NAME (local for the embedded one)"


def check_plan(plan: Plan, *, no_model: str = NO_MODEL) -> list[str]:
    """:class:`InputError` for a plan that cannot run; its warnings as lines. ``no_model``:
    what to do when the plan names no model (the command line's words by default)."""
    warnings = check_templates(plan.templates, plan.questions.columns)
    if not plan.models:
        raise InputError(f"no model: {no_model}")
    _check_settings(plan.settings)
    if len(set(plan.models)) != len(plan.models):
        twice = next(m for m in plan.models if plan.models.count(m) > 1)
        raise InputError(f"model {twice!r} is given twice: give each model once")
    if plan.questions.empty:
        raise InputError("the question set is empty: give questions with a user_input column")
    return warnings


def _check_settings(settings: AnswerSettings) -> None:
    """The answer settings' ranges (the command line's options check the same)."""
    checks = (
        ("temperature", settings.temperature, 0, 2),
        ("max_tokens", settings.max_tokens, 1, 100_000),
        ("seed", settings.seed, 0, 2**31 - 1),
        ("repeats", settings.repeats, 1, 100),
    )
    for key, value, low, high in checks:
        if not low <= value <= high:
            raise InputError(f"{key} must be from {low} to {high}, got {value!r}")


def answers_path(out: Path) -> Path:
    """Where the answers of an experiment scored into ``out`` are written."""
    return out.with_name(out.stem + ".answers.jsonl")


def public_url(url: str | None) -> str | None:
    """``url`` as a run may keep it: its scheme, host, port and path, without a
    ``user:password@`` part, a query string or a fragment (where keys hide); None for none."""
    if not url or not str(url).strip():
        return None
    try:
        parts = urlsplit(str(url).strip())
        host = parts.hostname or ""
        port = parts.port
    except ValueError:
        return None
    if not parts.scheme or not host:
        return None
    if ":" in host:  # an IPv6 address
        host = f"[{host}]"
    netloc = f"{host}:{port}" if port else host
    return urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))


def answer_endpoint(answerers: Mapping[str, Any]) -> str | None:
    """The endpoint the API models answer from (None when every model is the embedded one)."""
    urls = [getattr(a, "base_url", None) for a in answerers.values()]
    return next((public_url(u) for u in urls if u), None)


#: the judge's options an extension scores with (the run's own), as `relevancy score` names them
JUDGE_OPTIONS = (
    "llm",
    "embeddings",
    "strictness",
    "mode",
    "noncommittal",
    "seed",
    "prompt_language",
    "min_questions",
    "threshold",
    "max_response_chars",
)


def judge_record(metric: AnswerRelevancy, given: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The judge's settings a run keeps (:data:`JUDGE_OPTIONS` and its endpoint, never a key):
    ``given`` (the options as given: the backend specs, the mode asked for), else the metric's."""
    given = dict(given or {})
    fingerprint = metric.llm.fingerprint()
    base = public_url(fingerprint.get("base_url")) or public_url(
        metric.embeddings.fingerprint().get("base_url")
        if hasattr(metric.embeddings, "fingerprint")
        else None
    )
    found = {
        "llm": spec_of(metric.llm.name),
        "embeddings": spec_of(metric.embeddings.name),
        "strictness": metric.strictness,
        "mode": metric.mode,
        "noncommittal": metric.noncommittal,
        "seed": fingerprint.get("seed", 0),
        "prompt_language": metric.prompt_language,
        "min_questions": metric.min_questions,
        "threshold": metric.threshold,
        "max_response_chars": given.get("max_response_chars"),
    }
    record = {k: given[k] if given.get(k) is not None else found[k] for k in JUDGE_OPTIONS}
    record["base_url"] = public_url(given.get("base_url")) or base
    return record


def spec_of(name: str) -> str:
    """A backend's name as the spec that makes it (``local:SmolLM2-...`` is ``local``)."""
    if name.startswith("local:multilingual-e5"):
        return "local:e5"
    return "local" if name.startswith("local:") else name


def run_settings(
    plan: Plan,
    metric: AnswerRelevancy,
    source: str,
    *,
    base_url: str | None = None,
    judge: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """What the saved run records of the experiment (never a key): the answers' endpoint
    (``base_url``, without credentials or query) and the judge (:func:`judge_record`)."""
    return {
        "from": "relevancy experiment",
        "judge": judge_record(metric, judge),
        "experiment": {
            "questions": source,
            "base_url": public_url(base_url),
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
    judge: Mapping[str, Any] | None = None,
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
    judge
        The judge's options as given (backend specs, the mode asked for...), kept with the
        run so an extension scores as it was scored (:func:`judge_record`).
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
    endpoint = answer_endpoint(answerers)
    recorded = {
        **run_settings(plan, metric, source, base_url=endpoint, judge=judge),
        **dict(settings or {}),
    }
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
