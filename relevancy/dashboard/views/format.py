"""Small pure formatters for the pages: numbers, escaped user text, badges, mode wording.

Nothing here imports Streamlit; every function returns a string.
"""

from __future__ import annotations

import math
import shlex
from typing import Any

from relevancy.core.inert import inert
from relevancy.core.numbers import MISSING, cell_text, percent
from relevancy.core.redact import redact
from relevancy.core.triage import verdict_text
from relevancy.report.charts import score_color
from relevancy.report.html import MODE_SHORT
from relevancy.scoring.config import EMBEDDED_NOTE
from relevancy.scoring.judge import EMBEDDED_DEFAULT, JudgeCheck

__all__ = [
    "esc",
    "fmt",
    "pct",
    "cell_text",
    "MISSING",
    "score_badge",
    "MODE_SHORT",
    "mode_text",
    "embedded_caveat",
    "judge_line",
    "row_label",
    "error_text",
    "reason_counts",
    "rows_scored",
    "grid_style",
    "export_note",
    "FILE_IN_MEMORY_UP_TO",
]


def esc(text: Any) -> str:
    """Text from the data made inert for anything Streamlit draws as Markdown (markdown,
    captions, headers, labels, help): :func:`relevancy.core.inert.inert`, which also keeps bare
    addresses from becoming links."""
    return inert(text)


def fmt(x: Any, digits: int = 3) -> str:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return "–"
    if math.isnan(v):
        return "–"
    text = f"{v:.{digits}f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text  # never "-0.000"


def pct(x: Any, digits: int = 0) -> str:
    """A share as a percentage, never 0 % or 100 % when it is not exactly so
    (:func:`relevancy.core.numbers.percent`)."""
    return percent(x, digits)


def score_badge(
    value: float | None,
    threshold: float,
    *,
    used: Any = None,
    asked: Any = None,
    min_questions: int | None = None,
) -> str:
    """A coloured pill (HTML, no user text) for a score with its verdict
    (:func:`relevancy.core.triage.verdict_text`, the one rule every page, the report and the
    CLI use): a score that rests on fewer usable generated questions (``used`` of ``asked``)
    than ``min_questions`` (default all) is "incomplete: k of N questions" on either side of
    the threshold, never relevant nor low."""
    word = verdict_text(value, threshold, used, asked, min_questions)
    if word == "not scored":
        return '<span class="rel-badge" style="background:#9ca3af">not scored</span>'
    return (
        f'<span class="rel-badge" style="background:{score_color(value)}">'
        f"{float(value):.3f} · {word}</span>"  # type: ignore[arg-type]
    )


def mode_text(mode: str) -> str:
    """Markdown naming a mode and what its numbers are (static text, no user input)."""
    if mode in MODE_SHORT:
        return f"**{mode}** mode: {MODE_SHORT[mode]}"
    if mode == "mixed":
        return (
            "**mixed** modes: some rows are Ragas values, others focus or blend scores; "
            "compare the *Ragas value* column across them"
        )
    return f"**{esc(mode)}** mode"


def judge_line(check: JudgeCheck | None, *, embedded: bool, looked: bool = True) -> str:
    """The judge check of the models in use, the one sentence every page shows (markdown,
    numbers only): this machine's last check of exactly these models, else for the embedded
    default the figure measured when it was released (saying so), else that none was run.
    ``looked``: ``check`` is None because this machine has none (not because nobody looked)."""
    if check is not None:
        return (
            f"{check.summary()} on this machine (95% CI {check.ci_low:.2f}-{check.ci_high:.2f})"
        ).replace("judge check:", "judge check", 1)
    if embedded:
        e = EMBEDDED_DEFAULT
        return (
            f"judge check {e['agreement']:.2f} on {e['pairs']} pairs, measured for the embedded "
            f"default ({e['measured']})" + (", not yet run on this machine" if looked else "")
        )
    return "judge check not run for these models yet"


def embedded_caveat(check: JudgeCheck | None = None, *, looked: bool = False) -> str:
    """What the embedded default is for, with its judge check (:func:`judge_line`: ``check`` is
    this machine's, ``looked`` when None means there is none; markdown, static)."""
    judge = judge_line(check, embedded=True, looked=looked)
    return (
        f"ℹ️ {EMBEDDED_NOTE} ({judge}; the plain cosine of question "
        f"and answer gets {EMBEDDED_DEFAULT['cosine_baseline']:.2f} on the same pairs)."
    )


def row_label(row: int, score: Any, question: Any, width: int = 70) -> str:
    """``"row 3 · 0.712 · When was…"`` for row pickers: ``row`` is the run's 0-based index,
    shown 1-based (as spreadsheets, the CLI's notes and the grid number rows)."""
    return f"row {int(row) + 1} · {fmt(score)} · {str(question)[:width]}"


def error_text(exc: BaseException) -> str:
    """An error for ``st.error``: any key redacted, markdown made inert."""
    return esc(redact(exc))


def grid_style(frame: Any, formats: dict[str, str] | None = None, precision: int = 3) -> Any:
    """``frame`` for ``st.dataframe`` with every missing cell (a failed score, a label not
    given) drawn as :data:`MISSING` (Streamlit draws "None"), ``formats`` (column to a format
    such as ``"{:+.3f}"``) and other decimals to ``precision`` places. (A Styler's text wins
    over a column's own format: give the formats here.)"""
    return frame.style.format(formats or {}, na_rep=MISSING, precision=precision, thousands=",")


def rows_scored(scored: int, rows: int, failed: int) -> str:
    """``"31 of 32 rows scored, 1 failed"``: the rows with a score (as the "Rows scored" cards
    count them), of the run's rows, and those whose scoring failed."""
    return f"{scored:,} of {rows:,} rows scored" + (f", {failed:,} failed" if failed else "")


def reason_counts(counts: dict[str, int]) -> str:
    """``"By main reason: 12 ok · 9 partial · 3 noncommittal"`` (rows scored before reasons
    existed are counted as "not triaged")."""
    parts = [f"{n:,} {reason or 'not triaged'}" for reason, n in counts.items()]
    return "By main reason: " + " · ".join(parts) if parts else ""


#: above this many scored rows the Runs page also gives the CLI export's command
FILE_IN_MEMORY_UP_TO = 100_000


def export_note(run_id: int, rows: int, stem: str, store: str) -> str | None:
    """For a run too big to build comfortably in memory: the ``relevancy export`` command that
    writes it a chunk at a time, naming this run store (None for a smaller run)."""
    if rows <= FILE_IN_MEMORY_UP_TO:
        return None
    command = (
        f"relevancy export {run_id} {shlex.quote(stem + '.parquet')} --store {shlex.quote(store)}"
    )
    return (
        f"The file of these {rows:,} rows is built whole in this server's memory when a button "
        f"is clicked. `{command}` writes it on this machine a chunk at a time, in flat memory "
        "(or .csv, .jsonl, .json)."
    )
