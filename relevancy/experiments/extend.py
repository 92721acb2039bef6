"""A saved experiment run extended in place with another prompt template or model.

:func:`plan_extension` reads the run back (its questions, templates, models and answer
settings, from its own rows) and crosses in the new templates and models: only the variants the
run lacks are in the plan. :func:`extend_experiment` answers those (the answer cache as for any
experiment), adds their rows after the run's last one and scores them there, so the run keeps
its id, its rows and their scores, and gains the new variants' rows. Rows an earlier extension
added but did not score (it was killed) are scored too; a write that fails (the store locked,
the disk full) changes nothing and says so, and the answers stay in the cache for the next try.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from relevancy.analysis.cost import Price
from relevancy.backends.cache import Cache
from relevancy.errors import InputError
from relevancy.experiments.answering import AnswerSettings, Plan, answer_all
from relevancy.experiments.questions import run_questions
from relevancy.experiments.run import (
    ExperimentRun,
    answer_endpoint,
    answers_path,
    check_plan,
    public_url,
    spec_of,
)
from relevancy.experiments.summary import failed
from relevancy.experiments.templates import Template
from relevancy.io import TableWriter
from relevancy.runs import RunStore
from relevancy.scoring.collectors import FileSink, StoreSink, Tally
from relevancy.scoring.files import summary
from relevancy.scoring.metric import AnswerRelevancy
from relevancy.scoring.pipeline import score_chunks

__all__ = [
    "Extension",
    "plan_extension",
    "extend_experiment",
    "experiment_runs",
    "run_judge",
    "check_judge",
    "check_endpoint",
    "rerun_of",
]


@dataclass
class Extension:
    """What extending run ``run_id`` asks for: the whole plan, with the variants the run has
    already left out (``plan.skip``), and rows of the run still unscored."""

    run_id: int
    name: str
    plan: Plan
    added_templates: list[str] = field(default_factory=list)
    added_models: list[str] = field(default_factory=list)
    pending: list[int] = field(default_factory=list)
    #: the judge the run was scored with (:func:`run_judge`): the extension scores with it
    judge: dict[str, Any] = field(default_factory=dict)
    #: the endpoint the run's API models answered at (None: not kept, or only the embedded one)
    base_url: str | None = None

    @property
    def retried(self) -> int:
        """Rows of the run whose answer failed, asked again."""
        return self.plan.retried

    @property
    def new_variants(self) -> list[str]:
        return [v for v in self.plan.variants if v not in self.plan.skip]


def experiment_runs(store: RunStore) -> list[Any]:
    """The store's runs that an experiment made (the ones that can be extended), newest first."""
    return [r for r in store.list_runs() if isinstance(r.settings.get("experiment"), dict)]


def _run_of(store: RunStore, spec: str | int) -> Any:
    text = str(spec).strip().lstrip("#")
    runs = store.list_runs()
    found = [r for r in runs if (str(r.id) == text if text.isdigit() else r.name == text)]
    if not found:
        names = ", ".join(f"#{r.id} {r.name!r}" for r in experiment_runs(store)[:5]) or "none"
        raise InputError(
            f"no run {str(spec)!r} to extend in {store.path}; its experiment runs: {names}"
        )
    if len(found) > 1:
        ids = ", ".join(f"#{r.id}" for r in found)
        raise InputError(
            f"{len(found)} runs are named {text!r} ({ids}): give --extend-run ID, e.g. "
            f"--extend-run {found[0].id}"
        )
    return found[0]


def run_judge(settings: Mapping[str, Any]) -> dict[str, Any]:
    """The judge a saved experiment run was scored with (:func:`run.judge_record`); for a run
    saved before runs kept it, what its settings say (the models' names, strictness...)."""
    judge = settings.get("judge")
    if isinstance(judge, dict):
        return {k: v for k, v in judge.items() if v is not None}
    found = {
        "llm": spec_of(str(settings["llm_name"])) if settings.get("llm_name") else None,
        "embeddings": (
            spec_of(str(settings["embeddings_name"])) if settings.get("embeddings_name") else None
        ),
        "mode": settings.get("mode_used"),
        "strictness": settings.get("strictness"),
        "min_questions": settings.get("min_questions"),
        "threshold": settings.get("threshold"),
    }
    return {k: v for k, v in found.items() if v is not None}


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return float(a) == float(b)
    return str(a) == str(b)


def check_judge(extension: Extension, given: Mapping[str, Any]) -> dict[str, Any]:
    """The judge an extension scores with: the run's own, with ``given`` (options given for the
    extension, None where not given) filling only what the run does not say. An option given
    with another value than the run's is refused in one line: the new rows would be scored by
    another metric than the old ones, and Compare would pair them."""
    judge = dict(extension.judge)
    for key, value in given.items():
        if value is None:
            continue
        if key in judge and not _same(judge[key], value):
            option = "--" + key.replace("_", "-")
            raise InputError(
                f"run #{extension.run_id} {extension.name!r} was scored with {option} "
                f"{judge[key]}, not {value}: drop {option} (an extension scores with the run's "
                "own judge)"
            )
        judge.setdefault(key, value)
    return judge


def check_endpoint(
    extension: Extension, given: str | None, *, fix: str = "drop --base-url"
) -> str | None:
    """The endpoint an extension's models answer at: the run's own; ``given`` (an endpoint
    given for the extension) only where the run kept none. Another one is refused in one line
    ending in ``fix`` (what to do): the new variants are answered where the old ones were."""
    ours, theirs = public_url(given), extension.base_url
    if ours and theirs and ours != theirs:
        raise InputError(
            f"run #{extension.run_id} {extension.name!r} was answered at {theirs}, not {ours}: "
            f"{fix} (the new variants are answered where the old ones were)"
        )
    return theirs or given


def _merge_templates(have: list[Template], given: Sequence[Template], run: str) -> list[str]:
    """Add ``given`` to ``have`` (in place); the names added. A name the run has with another
    text is refused: its rows would mean two things."""
    known = {t.name: t for t in have}
    added = []
    for template in given:
        old = known.get(template.name)
        if old is not None and old.text != template.text:
            raise InputError(
                f"{run} already has a template {template.name!r} with another text: give the "
                "new one another name (its rows keep the old text)"
            )
        if old is None:
            known[template.name] = template
            have.append(template)
            added.append(template.name)
    return added


def plan_extension(
    store: RunStore,
    run: str | int,
    templates: Sequence[Template] = (),
    models: Sequence[str] = (),
    *,
    settings: Mapping[str, Any] | None = None,
    more: str = "another template (--prompt) or model (--model)",
) -> Extension:
    """The extension of saved run ``run`` (a name or an id) with ``templates`` and ``models``.

    ``settings``: answer settings given for the extension (temperature, max_tokens, seed,
    repeats); one that differs from the run's is refused, since the new variants must be
    answered as the old ones were. :class:`InputError` in one line for a run that is not an
    experiment's or that already has every variant asked for.
    """
    info = _run_of(store, run)
    where = f"run #{info.id} {info.name!r}"
    made = info.settings.get("experiment")
    if not isinstance(made, dict):
        raise InputError(
            f"{where} was not made by an experiment: extend a run of relevancy experiment or "
            "the Experiments page"
        )
    answer = AnswerSettings(
        temperature=float(made.get("temperature", 0.0)),
        max_tokens=int(made.get("answer_cap") or (settings or {}).get("max_tokens") or 300),
        seed=int(made.get("seed", 0)),
        repeats=int(made.get("repeats", 1)),
    )
    for key, value in (settings or {}).items():
        if value is not None and value != getattr(answer, key):
            raise InputError(
                f"{where} was answered with {key} {getattr(answer, key)!r}, not {value!r}: drop "
                "that option (the new variants are answered as the old ones were)"
            )
    rows = store.inputs(info.id)
    pairs = rows[["template", "template_text"]].drop_duplicates("template")
    have = [Template.from_text(n, t) for n, t in zip(pairs["template"], pairs["template_text"])]
    added_templates = _merge_templates(have, templates, where)
    all_models = list(dict.fromkeys(rows["model"].astype(str)))
    added_models = [m for m in dict.fromkeys(models) if m not in all_models]
    plan = Plan(have, [*all_models, *added_models], run_questions(rows), answer)
    plan.skip = frozenset(rows["variant"].astype(str))
    lost = rows[failed(rows)]  # answers that never came: asked again, their rows in place
    plan.retry = lost if len(lost) else None
    pending = store.pending_rows(info.id)
    if not plan.size and not pending:
        raise InputError(
            f"{where} already has every variant asked for ({', '.join(plan.variants)}): give {more}"
        )
    return Extension(
        info.id,
        info.name,
        plan,
        added_templates,
        added_models,
        pending,
        run_judge(info.settings),
        public_url(made.get("base_url")),
    )


def rerun_of(
    store: RunStore,
    name: str,
    plan: Plan,
    judge: Mapping[str, Any],
    base_url: str | None,
) -> Extension | None:
    """The saved run named ``name`` when it is this very experiment (the same templates and
    texts, models, answer settings, questions, judge and endpoint) and some of its answers
    failed: the extension that asks just those again and fills their rows in place. None
    otherwise (a new run is made, its answers from the cache)."""
    for info in experiment_runs(store):
        made = info.settings["experiment"]
        if info.name != name or not _same_plan(made, plan):
            continue
        if public_url(made.get("base_url")) != public_url(base_url):
            continue
        theirs = run_judge(info.settings)
        if any(not _same(theirs[k], v) for k, v in judge.items() if v is not None and k in theirs):
            continue
        rows = store.inputs(info.id)
        asked = run_questions(rows)["user_input"].astype(str).tolist()
        if asked != plan.questions["user_input"].astype(str).tolist():
            continue
        if not failed(rows).any():
            return None
        return plan_extension(store, info.id)
    return None


def _same_plan(made: Mapping[str, Any], plan: Plan) -> bool:
    texts = [
        (t.get("name"), Template(str(t.get("name")), t.get("user", ""), t.get("system", "")).text)
        for t in made.get("templates", [])
    ]
    settings = (made.get("temperature"), made.get("answer_cap"), made.get("seed"))
    return (
        texts == [(t.name, t.text) for t in plan.templates]
        and list(made.get("models", [])) == list(plan.models)
        and settings == (plan.settings.temperature, plan.settings.max_tokens, plan.settings.seed)
        and int(made.get("repeats", 1)) == plan.settings.repeats
    )


def extend_experiment(
    extension: Extension,
    metric: AnswerRelevancy,
    answerers: Mapping[str, Any],
    out: str | Path,
    store: RunStore,
    *,
    cache: Cache | None = None,
    prices: Mapping[str, Price] | None = None,
    on_answer: Callable[[int], None] | None = None,
    on_score: Callable[[int], None] | None = None,
) -> ExperimentRun:
    """Answer the extension's new variants, add their rows to the run and score them (and any
    row of the run left unscored); rows whose answer had failed are asked again and put back in
    place (nothing else of the run changes) and scored again. The scores are also written to
    ``out``."""
    plan = extension.plan
    warnings = check_plan(plan)
    out = Path(out)
    cache = cache if cache is not None else metric.cache
    needed = {m for _, m, _, _ in plan.cells()}
    endpoint = answer_endpoint({m: a for m, a in answerers.items() if m in needed})
    answers = (
        asyncio.run(
            answer_all(
                plan,
                {m: a for m, a in answerers.items() if m in needed},
                cache,
                progress=on_answer,
                prices=prices,
            )
        )
        if plan.size
        else pd.DataFrame()
    )
    path = answers_path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    answers.to_json(path, orient="records", lines=True, force_ascii=False)
    recorded = store.get_run(extension.run_id).settings["experiment"]
    recorded = {
        **recorded,
        "templates": [{"name": t.name, "system": t.system, "user": t.user} for t in plan.templates],
        "models": list(plan.models),
        "base_url": recorded.get("base_url") or endpoint,
    }
    fresh = len(answers) - plan.retried
    if plan.retry is not None and len(answers):  # the failed rows, in place, scored again
        again = answers.iloc[fresh:].set_axis(plan.retry.index)
        store.replace_inputs(extension.run_id, again)
    store.append_inputs(extension.run_id, answers.iloc[:fresh], settings={"experiment": recorded})
    todo = store.pending_rows(extension.run_id)
    frame = store.inputs(extension.run_id, todo) if todo else pd.DataFrame()
    tally = Tally()
    started = time.perf_counter()
    with TableWriter(out) as writer:
        if todo:
            for chunk in score_chunks(
                metric,
                [(todo, frame.reset_index(drop=True))],
                [tally, StoreSink(store, extension.run_id), FileSink(writer)],
                on_result=(lambda _row, _result: on_score(1)) if on_score else None,
            ):
                del chunk
    scored = summary(out, time.perf_counter() - started, tally, run_id=extension.run_id)
    return ExperimentRun(answers, scored, warnings)
