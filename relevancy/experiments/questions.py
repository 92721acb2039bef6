"""The question set an experiment answers: a file, the questions of a saved run, or the demo's.

Every source gives a table with ``user_input`` and the source's other columns (a reference,
a topic, an id...), which templates may name as ``{column}``. Columns an experiment writes
itself (the answer, the variant, scores) are dropped; an experiment run's questions are its
question set (its answers' columns left out); another run's or the demo's are taken once each
(said in a note). A blank question left out and an id given to two questions are said too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from relevancy.errors import InputError
from relevancy.experiments.answering import ANSWER_COLUMNS
from relevancy.io import read_table
from relevancy.io.columns import COLUMN_ALIASES
from relevancy.runs import RunStore, demo_inputs

__all__ = ["load_questions", "question_set", "run_questions", "notes", "DEMO", "DROPPED"]

#: the source naming the bundled demo's 24 questions
DEMO = "demo"
#: columns of a source an experiment makes itself
DROPPED = ("response", "variant", "label", "answer_type", "prompt", "model", "template")


def _question_column(frame: pd.DataFrame, name: str) -> pd.DataFrame:
    lower = {str(c).lower(): c for c in frame.columns}
    found = next((lower[a] for a in COLUMN_ALIASES["user_input"] if a in lower), None)
    if found is None:
        raise InputError(
            f"{name!r} has no question column (user_input, question, query or input); its "
            f"columns: {', '.join(map(str, frame.columns))}"
        )
    return frame.rename(columns={found: "user_input"})


def load_questions(source: str, *, store: RunStore | None = None) -> tuple[pd.DataFrame, str]:
    """The questions ``source`` names, and that source in words.

    ``source`` is ``"demo"``, ``"run:NAME"`` (or ``run:ID``, a run in ``store``) or a
    CSV/JSON/JSONL/Parquet file. :class:`InputError` in one line when it cannot be read or
    holds no question.
    """
    source = str(source).strip()
    if source == DEMO:
        frame, what = demo_inputs(), "the bundled demo's questions"
        frame = frame.drop_duplicates("user_input")
    elif source.startswith("run:"):
        if store is None:
            raise InputError(f"{source!r} names a saved run: give the run store (--store)")
        run = _find_run(store, source)
        frame, what = store.inputs(run.id), f"the questions of run #{run.id} {run.name!r}"
        if isinstance(run.settings.get("experiment"), dict) and "variant" in frame:
            frame = run_questions(frame)  # its questions, not its answers' columns
        else:
            frame = _once_each(frame, what)
    else:
        path = Path(source).expanduser()
        return question_set(read_table(path, normalize=False), path.name), path.name
    notes = list(frame.attrs.get("notes", []))
    out = question_set(frame, what)
    out.attrs["notes"] = [*notes, *out.attrs.get("notes", [])]
    return out, what


def notes(frame: pd.DataFrame) -> list[str]:
    """What :func:`load_questions` or :func:`question_set` noted of a question set (rows left
    out, questions taken once each, an id given to two questions), one line each."""
    return list(frame.attrs.get("notes", []))


def run_questions(rows: pd.DataFrame) -> pd.DataFrame:
    """An experiment run's question set: the rows of its first variant's first repeat, with the
    questions' own columns only (not the answer, the variant or the experiment's columns)."""
    first = rows[rows["variant"] == rows["variant"].iloc[0]]
    if "repeat" in first:
        first = first[pd.to_numeric(first["repeat"], errors="coerce").fillna(0) == 0]
    own = [c for c in ("response", *DROPPED, *ANSWER_COLUMNS) if c in first.columns]
    return first.drop(columns=own).reset_index(drop=True)


def _once_each(frame: pd.DataFrame, what: str) -> pd.DataFrame:
    """Each question text once (a run scored several answers to it), said in a note."""
    once = frame.drop_duplicates("user_input")
    if len(once) < len(frame):
        once.attrs["notes"] = [
            f"{what}: {len(frame):,} rows give {len(once):,} questions (each question text "
            "taken once)"
        ]
    return once


def question_set(frame: pd.DataFrame, name: str) -> pd.DataFrame:
    """``frame`` (a file's table, as read) as a question set: its question column named
    ``user_input``, the columns an experiment writes itself dropped, rows without a question
    left out. :class:`InputError` in one line when it has no question column (naming the
    columns it has) or no question."""
    frame = _question_column(frame, name)
    frame = frame.drop(columns=[c for c in DROPPED if c in frame.columns])
    said = []
    asked = frame["user_input"].map(lambda v: isinstance(v, str) and bool(v.strip()))
    if not asked.all() and asked.any():
        said.append(
            f"{name}: {int((~asked).sum()):,} of {len(frame):,} rows have no question (blank) "
            "and are left out"
        )
    frame = frame[asked]
    if frame.empty:
        raise InputError(f"{name} holds no question: give a question set with user_input rows")
    frame = frame.reset_index(drop=True)
    frame.columns = [str(c) for c in frame.columns]
    if "id" in frame.columns:
        ids = frame[frame["id"].notna()].groupby("id", sort=False)["user_input"].nunique()
        shared = ids[ids > 1]
        if len(shared):
            rows = int(frame["id"].isin(shared.index).sum())
            said.append(
                f"{name}: {len(shared):,} ids are each given to more than one question "
                f"({rows:,} rows, e.g. id {str(shared.index[0])!r}); each row is its own "
                "question"
            )
    frame.attrs["notes"] = said
    return frame


def _find_run(store: RunStore, spec: str) -> Any:
    text = spec.removeprefix("run:").strip().lstrip("#")
    runs = store.list_runs()
    found = [r for r in runs if (str(r.id) == text if text.isdigit() else r.name == text)]
    if not found:
        names = ", ".join(f"#{r.id} {r.name!r}" for r in runs[:5]) or "none"
        raise InputError(f"no run {spec!r} in {store.path}; its runs: {names}")
    if len(found) > 1:
        ids = ", ".join(f"#{r.id}" for r in found)
        raise InputError(
            f"{len(found)} runs are named {text!r} ({ids}): give run:ID, e.g. run:{found[0].id}"
        )
    return found[0]
