"""What the Experiments page draws, without Streamlit: the starting templates, the plan the
page's fields describe, the estimate in words and the matrix of scores with their reasons."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from relevancy.analysis.cost import money
from relevancy.dashboard.views.format import MISSING, fmt
from relevancy.experiments import Estimate, Template
from relevancy.experiments.summary import score_matrix

__all__ = [
    "STARTERS",
    "EMBEDDED_NOTE",
    "PageTemplate",
    "parse_models",
    "describe_estimate",
    "cell_matrix",
    "summary_table",
    "question_numbers",
    "question_label",
]

#: the templates the page starts with (name, system, user)
STARTERS = [
    ("concise", "Answer in one or two sentences.", "{user_input}"),
    ("detailed", "", "Explain in detail: {user_input}"),
    ("friendly", "You are a friendly assistant.", "{user_input}"),
]
EMBEDDED_NOTE = (
    "local is the embedded SmolLM2-135M: it runs here with no key and no network, and its "
    "answers are weak (a demo of the workflow, not of a model worth shipping)."
)


@dataclass
class PageTemplate:
    """A template as typed into the page (checked when the plan is made)."""

    name: str
    system: str
    user: str

    def template(self) -> Template:
        return Template(self.name.strip(), self.user.strip(), self.system.strip())


def parse_models(text: str) -> list[str]:
    """Model names typed one per line or separated by commas."""
    names = [part.strip() for line in text.splitlines() for part in line.split(",")]
    return [n for n in names if n]


def describe_estimate(found: Estimate, rows: int) -> str:
    """The estimate in one line."""
    cost = "cost unknown (no list price)" if found.dollars is None else money(found.dollars)
    return (
        f"{found.requests:,} answers to request ({found.cached:,} of {found.answers:,} in the "
        f"cache), about {found.prompt_tokens:,} prompt tokens and at most "
        f"{found.completion_tokens:,} answer tokens, {cost}; then {rows:,} rows to score"
    )


def cell_matrix(frame: pd.DataFrame) -> pd.DataFrame:
    """Questions down, variants across; each cell the score and the commonest reason (as text,
    shown as data, never Markdown)."""
    scores = score_matrix(frame)
    reasons = (
        frame.assign(reason=frame["reason"].fillna("error"))
        .groupby(["user_input", "variant"], sort=False)["reason"]
        .agg(lambda r: r.value_counts().index[0])
    )
    cells = scores.copy().astype(object)
    for question in scores.index:
        for variant in scores.columns:
            value = scores.loc[question, variant]
            reason = reasons.get((question, variant), "")
            cells.loc[question, variant] = (
                f"{value:.2f} {reason}" if value == value else f"— {reason or 'no answer'}"
            )
    cells.index.name = "question"
    return cells


def summary_table(summary: pd.DataFrame) -> pd.DataFrame:
    """The per-variant summary as the page lists it."""
    out = pd.DataFrame(
        {
            "variant": summary["variant"],
            "answers": summary["answers"],
            "mean": [fmt(m) if m == m else MISSING for m in summary["mean"]],
            "95% CI": [
                f"[{lo:.3f}, {hi:.3f}]" if lo == lo and hi == hi else MISSING
                for lo, hi in zip(summary["ci_low"], summary["ci_high"])
            ],
            "below threshold": [
                f"{100 * b:.0f}%" if b == b and s else MISSING
                for b, s in zip(summary["below"], summary["scored"])
            ],
            "failed answers": summary["failed"],
            "reasons": summary["reasons"],
            "answer tokens": summary["answer_tokens"],
        }
    )
    return out


def question_numbers(frame: pd.DataFrame) -> pd.Series:
    """Each row's question, by its place in the question set (0, 1, ...): two rows that ask the
    same text are two questions. A variant's rows (per repeat) follow the question set's order."""
    keys = [c for c in ("variant", "repeat") if c in frame.columns]
    if not keys:
        return pd.Series(range(len(frame)), index=frame.index)
    return frame.groupby(keys, sort=False).cumcount()


def question_label(number: int, row: pd.Series) -> str:
    """A question as a picker lists it (plain text): its id, or its place, and its text."""
    given = row.get("id")
    name = str(given) if given is not None and given == given and str(given) else f"#{number + 1}"
    text = " ".join(str(row.get("user_input", "")).split())
    return f"{name} · {text[:90]}" + ("…" if len(text) > 90 else "")
