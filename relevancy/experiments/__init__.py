"""Experiments: prompt templates x models over a question set, answered, scored, compared.

``relevancy experiment`` and the dashboard's Experiments page both call :func:`run_experiment`:
every template x model x question (x repeat) is answered once (the answers cached, so a killed
run resumes without paying twice), then scored by the chosen judge into one saved run whose
``variant`` is ``TEMPLATE · MODEL``. See docs/experiments.md.
"""

from __future__ import annotations

from relevancy.experiments.answering import (
    ANSWER_COLUMNS,
    AnswerSettings,
    Estimate,
    Plan,
    answer_all,
    estimate,
    make_answerer,
    variant_name,
)
from relevancy.experiments.config import ExperimentConfig, load_config
from relevancy.experiments.extend import (
    Extension,
    experiment_runs,
    extend_experiment,
    plan_extension,
)
from relevancy.experiments.questions import DEMO, load_questions
from relevancy.experiments.run import ExperimentRun, answers_path, check_plan, run_experiment
from relevancy.experiments.templates import VARIANT_JOIN, Template, check_templates, parse_prompt

__all__ = [
    "ANSWER_COLUMNS",
    "AnswerSettings",
    "DEMO",
    "Estimate",
    "ExperimentConfig",
    "ExperimentRun",
    "Extension",
    "Plan",
    "Template",
    "VARIANT_JOIN",
    "answer_all",
    "answers_path",
    "check_plan",
    "check_templates",
    "estimate",
    "experiment_runs",
    "extend_experiment",
    "load_config",
    "load_questions",
    "make_answerer",
    "parse_prompt",
    "plan_extension",
    "run_experiment",
    "variant_name",
]
