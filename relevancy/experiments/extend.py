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
from relevancy.experiments.answering import ANSWER_COLUMNS, AnswerSettings, Plan, answer_all
from relevancy.experiments.run import ExperimentRun, answers_path, check_plan
from relevancy.experiments.templates import Template
from relevancy.io import TableWriter
from relevancy.runs import RunStore
from relevancy.scoring.collectors import FileSink, StoreSink, Tally
from relevancy.scoring.files import summary
from relevancy.scoring.metric import AnswerRelevancy
from relevancy.scoring.pipeline import score_chunks

__all__ = ["Extension", "plan_extension", "extend_experiment", "experiment_runs"]


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
    return found[0]


def _questions(rows: pd.DataFrame) -> pd.DataFrame:
    """The run's question set: the rows of its first variant's first repeat, less what the
    experiment wrote."""
    first = rows[rows["variant"] == rows["variant"].iloc[0]]
    if "repeat" in first:
        first = first[pd.to_numeric(first["repeat"], errors="coerce").fillna(0) == 0]
    own = [c for c in ("response", *ANSWER_COLUMNS) if c in first.columns]
    return first.drop(columns=own).reset_index(drop=True)


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
    plan = Plan(have, [*all_models, *added_models], _questions(rows), answer)
    plan.skip = frozenset(rows["variant"].astype(str))
    pending = store.pending_rows(info.id)
    if not plan.size and not pending:
        raise InputError(
            f"{where} already has every variant asked for ({', '.join(plan.variants)}): give "
            "another template (--prompt) or model (--model)"
        )
    return Extension(info.id, info.name, plan, added_templates, added_models, pending)


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
    row of the run left unscored); the new rows' scores are also written to ``out``."""
    plan = extension.plan
    warnings = check_plan(plan)
    out = Path(out)
    cache = cache if cache is not None else metric.cache
    needed = {m for _, m, _, _ in plan.cells()}
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
    }
    store.append_inputs(extension.run_id, answers, settings={"experiment": recorded})
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
