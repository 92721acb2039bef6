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


def apply_mapping(
    frame: pd.DataFrame, mapping: dict[str, str | None], *, name: str = "the table"
) -> pd.DataFrame:
    """Rename the mapped columns to ``user_input``/``response``/``variant``/``id``/``label``, as
    text.

    Other columns are kept (they travel with the results); a column already named like a role
    but not chosen for it is renamed with a ``source_`` prefix so it cannot be mistaken. Missing
    cells become ``""``; a cell holding a list or a dict is an :class:`InputError`.
    """
    chosen = {col: role for role, col in mapping.items() if col}
    renames: dict[Any, str] = {}
    for col in frame.columns:
        if col in chosen:
            renames[col] = chosen[col]
        elif col in ROLES:
            renames[col] = f"source_{col}"
    return _coerce_text(frame.rename(columns=renames).reset_index(drop=True), name)


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


def _coerce_text(frame: pd.DataFrame, name: str) -> pd.DataFrame:
    """Role columns as ``str`` (missing cells as ""); nested values are an error."""
    for column in ROLES:
        if column not in frame.columns:
            continue
        values = frame[column]
        nested = values.map(lambda v: isinstance(v, (list, dict, tuple, bytes, np.ndarray)))
        if nested.any():
            row = int(nested.to_numpy().nonzero()[0][0])
            kind = type(values.iloc[row]).__name__
            raise InputError(
                f"column {column!r} of {name!r} holds {kind} values (row {row + 1}), not text: "
                "give one string per cell"
            )
        frame[column] = values.map(_as_text).astype(object)
    return frame


def _as_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and math.isnan(value):
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)
