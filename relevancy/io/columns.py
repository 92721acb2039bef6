"""Column mapping: which of a table's columns is the question, the answer, the variant, the id
and the human label (by name, with aliases), and the table renamed to those roles."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from relevancy.errors import InputError

__all__ = [
    "ROLES",
    "COLUMN_ALIASES",
    "guess_mapping",
    "apply_mapping",
    "normalize_columns",
    "OWN_NAMED",
    "own_names",
]

#: the columns a table's own columns are mapped to (the first two are required); ``label`` is
#: a human label (see :func:`relevancy.analysis.agreement.parse_labels`)
ROLES = ("user_input", "response", "variant", "id", "label")


COLUMN_ALIASES: dict[str, tuple[str, ...]] = {
    "user_input": ("user_input", "question", "query", "input", "prompt"),
    "response": ("response", "answer", "output", "completion"),
    "variant": ("variant", "model", "system", "prompt_version"),
    "id": ("id", "row_id", "pair_id", "question_id", "qid"),
    "label": ("label", "human_score", "human_label", "rating", "relevant", "is_relevant"),
}


def guess_mapping(columns: Sequence[Any]) -> dict[str, str | None]:
    """Which column plays each role, by name: the role itself, else an alias (any case).

    >>> guess_mapping(["Question", "answer", "notes"])
    {'user_input': 'Question', 'response': 'answer', 'variant': None, 'id': None, 'label': None}
    """
    names = [str(c) for c in columns]
    lower: dict[str, str] = {}
    for c in names:
        lower.setdefault(c.strip().lower(), c)
    out: dict[str, str | None] = {}
    used: set[str] = set()
    for role in ROLES:
        exact = role if role in names else None
        found = exact or next(
            (lower[a] for a in COLUMN_ALIASES[role] if a in lower and lower[a] not in used), None
        )
        out[role] = found
        if found:
            used.add(found)
    return out


#: the roles shown under the table's own column name wherever a person reads it (downloads,
#: chart titles and legends, grid headers): ``variant`` is a role the tool uses inside, the
#: user's ``model`` or ``system`` column stays ``model`` or ``system``. The question and the
#: answer keep the names every exporter and importer reads (``user_input``, ``response``).
OWN_NAMED = ("variant",)


def apply_mapping(
    frame: pd.DataFrame, mapping: dict[str, str | None], *, name: str = "the table"
) -> pd.DataFrame:
    """Rename the mapped columns to ``user_input``/``response``/``variant``/``id``/``label``, as
    text.

    Other columns are kept (they travel with the results); a column already named like a role
    but not chosen for it is renamed with a ``source_`` prefix so it cannot be mistaken. Missing
    cells become ``""``; a cell holding a list or a dict is an :class:`InputError`. The table's
    own names of the roles in :data:`OWN_NAMED` are kept in ``attrs["column_names"]`` (role ->
    name) for :func:`own_names`.
    """
    chosen = {col: role for role, col in mapping.items() if col}
    renames: dict[Any, str] = {}
    for col in frame.columns:
        if col in chosen:
            renames[col] = chosen[col]
        elif col in ROLES:
            renames[col] = f"source_{col}"
    out = _coerce_text(frame.rename(columns=renames).reset_index(drop=True), name)
    names = {r: str(c) for r, c in mapping.items() if c and r in OWN_NAMED and str(c) != r}
    if names:
        out.attrs["column_names"] = names
    return out


def own_names(frame: pd.DataFrame, names: dict[str, str] | None = None) -> pd.DataFrame:
    """``frame`` with the roles of :data:`OWN_NAMED` under the table's own column names
    (``names``, else ``frame.attrs["column_names"]``): what a person downloads or reads. A name
    another column already has is left as the role."""
    names = dict(frame.attrs.get("column_names") or {}) if names is None else names
    renames = {
        role: own
        for role, own in names.items()
        if role in OWN_NAMED and role in frame.columns and own not in frame.columns
    }
    return frame.rename(columns=renames) if renames else frame


def _check_columns(frame: pd.DataFrame) -> None:
    if frame.shape[1] == 0:
        raise InputError("the table has no columns: it needs user_input and response columns")
    if frame.columns.duplicated().any():
        dup = str(frame.columns[frame.columns.duplicated()][0])
        raise InputError(f"column {dup!r} appears twice: give each column a distinct name")


def _mapping_of(
    frame: pd.DataFrame, name: str, label_column: str | None = None
) -> dict[str, str | None]:
    """The roles of a table's columns by name; :class:`InputError` when a required one lacks.
    ``label_column``: the human labels' column (``None``: by name, ``""``: none)."""
    _check_columns(frame)
    mapping = guess_mapping(list(frame.columns))
    if label_column is not None:
        if label_column and label_column not in [str(c) for c in frame.columns]:
            found = ", ".join(repr(str(c)) for c in list(frame.columns)[:20])
            raise InputError(
                f"no label column {label_column!r} in {name!r}; columns found: {found}"
            )
        taken = {role for role, col in mapping.items() if col == label_column and role != "label"}
        if taken:
            raise InputError(
                f"column {label_column!r} is the {taken.pop()} column: choose another label column"
            )
        mapping["label"] = label_column or None
    for required in ("user_input", "response"):
        if mapping[required] is None:
            found = ", ".join(repr(str(c)) for c in list(frame.columns)[:20])
            aliases = "/".join(COLUMN_ALIASES[required])
            raise InputError(
                f"missing column {required!r} (or an alias: {aliases}); columns found: {found}"
            )
    return mapping


def normalize_columns(frame: pd.DataFrame, *, name: str = "the table") -> pd.DataFrame:
    """Map the columns by name (:func:`guess_mapping`, :func:`apply_mapping`).

    Raises :class:`InputError` naming the missing column and listing the columns found.
    """
    return apply_mapping(frame, _mapping_of(frame, name), name=name)


#: the ``--format`` hint given when a question or answer column holds objects
FORMAT_HINT = (
    "if the file is a tool's export (traces, runs, spans, chat logs), name the tool with "
    "--format (langfuse, langsmith, phoenix, mlflow, openai-chat); a file mixing two tools' "
    "records needs one file per tool"
)
#: the roles whose cells must be text to be scored
TEXT_ROLES = ("user_input", "response")


def _kind(value: Any) -> str:
    """What a cell that is not text is, in words ("" for text or a missing cell)."""
    if value is None or isinstance(value, str) or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, (bool, np.bool_)):
        return "a true/false value"
    if isinstance(value, (int, float, np.number)):
        return "a number"
    if isinstance(value, (list, tuple, np.ndarray)):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, bytes):
        return "bytes"
    return ""


def _coerce_text(frame: pd.DataFrame, name: str) -> pd.DataFrame:
    """Role columns as ``str`` (missing cells as "").

    A question or answer cell that is not text (a number, a list, an object) is emptied, so
    that its row is not scored, and listed in ``frame.attrs["cell_problems"]`` as ``(row of
    the chunk, problem)`` for :class:`relevancy.io.RowInspector`; a question or answer column
    holding nothing but lists or objects is an :class:`InputError` (a tool's export read as a
    table). Lists or objects in the other roles' columns are an error too.
    """
    problems: list[tuple[int, str]] = list(frame.attrs.get("cell_problems", []))
    for column in ROLES:
        if column not in frame.columns:
            continue
        values = frame[column]
        kinds = [_kind(v) for v in values]
        nested = [k in ("a list", "an object", "bytes") for k in kinds]
        present = [not _missing(v) for v in values]
        if any(nested) and (
            column not in TEXT_ROLES or all(n for n, p in zip(nested, present) if p)
        ):
            row = nested.index(True)
            kind = type(values.iloc[row]).__name__
            raise InputError(
                f"column {column!r} of {name!r} holds {kind} values (row {row + 1}), not text: "
                f"{FORMAT_HINT}; otherwise give one string per cell"
            )
        if column in TEXT_ROLES and any(kinds):
            cells = values.tolist()
            for i, kind in enumerate(kinds):
                if kind:
                    shown = repr(cells[i])
                    shown = shown if len(shown) <= 40 else shown[:39] + "…"
                    problems.append((i, f"{column} is {kind} ({shown}), not text: not scored"))
                    cells[i] = ""
            values = pd.Series(cells, index=values.index, dtype=object)
        frame[column] = values.map(_as_text).astype(object)
    if problems:
        frame.attrs["cell_problems"] = sorted(problems)
    return frame


def _missing(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, float) and math.isnan(value):
        return True
    return isinstance(value, str) and not value.strip()


def _as_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and math.isnan(value):
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)
