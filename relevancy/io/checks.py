"""The one row check: which rows cannot be scored or need attention (empty, duplicate, too long,
not text), for a whole table or for one read in chunks."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

import pandas as pd

from relevancy.errors import InputError
from relevancy.io.importers import looks_like_repr

__all__ = [
    "LONG_TEXT_CHARS",
    "about_tokens",
    "cut_note",
    "check_text",
    "RowProblem",
    "RowInspector",
    "inspect_rows",
]

#: what a cell holding a Python repr (``[{'role': 'user', ...}]``) is told
REPR_PROBLEM = (
    "looks like a Python list or dict (pandas writes objects to CSV that way), not text: "
    "export the table as JSON or Parquet"
)
#: A cell longer than this is listed as a problem when the generator states no limit of its own.
LONG_TEXT_CHARS = 20_000


def about_tokens(chars: int) -> int:
    """A rough token count of ``chars`` characters of text (about 4 characters a token)."""
    return -(-int(chars) // 4)


def cut_note(length: int, limit: int) -> str:
    """A row's note when its answer of ``length`` characters is cut at ``limit`` for the
    question generator: what was really sent, in characters and tokens."""
    return (
        f"response truncated to its first {limit:,} of {length:,} characters for the question "
        f"generator (about {about_tokens(limit):,} of {about_tokens(length):,} tokens sent)"
    )


def check_text(name: str, value: Any) -> str:
    """``value`` if it is a non-empty string, else :class:`InputError` naming ``name``."""
    if not isinstance(value, str):
        raise InputError(f"{name} must be a string, got {type(value).__name__} {value!r:.60}")
    if not value.strip():
        raise InputError(f"{name} is empty ({value!r}): give the text to score")
    return value


@dataclass(frozen=True)
class RowProblem:
    """A row that cannot be scored (or needs attention), 1-based like a spreadsheet."""

    row: int
    problem: str


class RowInspector:
    """The row checks of :func:`inspect_rows`, for a table read in chunks (rows numbered on).

    Duplicates are found across chunks; a row is remembered by a digest, not its text.
    """

    def __init__(self, *, long_text: int | None = None) -> None:
        self.limit = long_text or LONG_TEXT_CHARS
        self.rows = 0  #: rows seen so far
        self.scoreable = 0  #: rows with both a question and an answer
        self._seen: dict[bytes, int] = {}

    def inspect(self, frame: pd.DataFrame) -> list[RowProblem]:
        """The problems of the next chunk's rows."""
        problems: list[RowProblem] = []
        variants = frame["variant"] if "variant" in frame.columns else [""] * len(frame)
        # cells that were not text (a number, a list...), emptied when the table was mapped
        typed: dict[int, list[str]] = {}
        for i, problem in frame.attrs.get("cell_problems", []):
            typed.setdefault(int(i), []).append(problem)
        for i, (u, r, v) in enumerate(zip(frame["user_input"], frame["response"], variants)):
            self.rows += 1
            row = self.rows
            u = "" if not isinstance(u, str) else u
            r = "" if not isinstance(r, str) else r
            said = typed.get(i, [])
            problems += [RowProblem(row, p) for p in said]
            if not u.strip() and not any(p.startswith("user_input ") for p in said):
                problems.append(RowProblem(row, "user_input is empty"))
            if not r.strip() and not any(p.startswith("response ") for p in said):
                problems.append(RowProblem(row, "response is empty"))
            for role, text in (("user_input", u), ("response", r)):
                if looks_like_repr(text):
                    problems.append(RowProblem(row, f"{role} {REPR_PROBLEM}"))
            if len(r) > self.limit:
                problems.append(
                    RowProblem(
                        row,
                        f"response has {len(r):,} characters: the question generator is sent "
                        f"the first {self.limit:,} only (about {about_tokens(self.limit):,} "
                        "tokens; --max-response-chars sets it)",
                    )
                )
            if u.strip() and r.strip():
                self.scoreable += 1
                key = hashlib.blake2b(
                    json.dumps([u, r, str(v)], ensure_ascii=False).encode(), digest_size=16
                ).digest()
                if key in self._seen:
                    problems.append(RowProblem(row, f"duplicate of row {self._seen[key]}"))
                self._seen.setdefault(key, row)
        return problems


def inspect_rows(frame: pd.DataFrame, *, long_text: int | None = None) -> list[RowProblem]:
    """Rows with empty cells, duplicates (same question, answer and variant), and answers the
    question generator will cut (1-based row numbers, as in a spreadsheet).

    ``long_text`` is the generator's limit (``max_response_chars``; the embedded one reads 2,000
    characters); without one, cells over ``LONG_TEXT_CHARS`` are listed.
    """
    return RowInspector(long_text=long_text).inspect(frame)
