"""Paired comparison of two answer variants (or two runs) on the same questions, and the
regression gate built on it (``relevancy compare BASE NEW``).

Two variants of one run (:func:`pair_variants`, :func:`pair_within`) are paired on the question
text, or on an id column only when that id names a question shared across the variants (a
``question_id`` column, or ``id`` values found on both sides): per-row ids never pair. Two runs
(:func:`pair_runs`) are paired on ``user_input`` and ``id`` when both sides have ids in common,
else on ``user_input`` alone (and on ``variant`` too when both have variants and none was
picked). When a key repeats within one side, its k-th occurrence pairs with the k-th occurrence
on the other side; :func:`no_pairs_message` says what was tried and what each side holds.
The difference is always ``B - A``: positive means B is more relevant. A pair is a tie when the
difference is within ``tie_margin``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from relevancy.analysis.summary import comparable_value
from relevancy.core.stats import bootstrap_ci, wilson_interval
from relevancy.errors import InputError

__all__ = [
    "pair_rows",
    "pair_variants",
    "pair_runs",
    "pair_within",
    "pairing_keys",
    "names_questions",
    "ignored_ids",
    "no_pairs_message",
    "QUESTION_ID_COLUMNS",
    "summarize_pairs",
    "outcome",
    "outcomes",
    "Regression",
    "regression_check",
]

_CARRY = (
    "row",
    "response",
    "score",
    "mode",
    "ragas_value",
    "noncommittal",
    "generated_questions",
    "similarities",
    "error",
)


#: columns that name a question (not a row), tried in this order when pairing variants of one run
QUESTION_ID_COLUMNS = ("question_id", "qid", "id")


def _codes(a: pd.Series, b: pd.Series, *, strip: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Both sides' values as integer codes of one numbering (by their text, stripped when
    asked; -1 for a missing or empty value): what follows compares integers, not a million
    strings. The values are hashed once; text is made and stripped for the distinct ones."""
    codes, uniques = pd.factorize(pd.concat([a, b], ignore_index=True))
    if strip or pd.api.types.infer_dtype(uniques, skipna=True) != "string":
        text = pd.Index(uniques, dtype=object).astype(str)
        if strip:
            text = text.str.strip()
        merged, names = pd.factorize(text)  # 1 and "1", or "a " and "a", become one value
        codes = np.where(codes < 0, -1, merged[np.maximum(codes, 0)])
    else:  # already distinct strings
        names = np.asarray(uniques, dtype=object)
    empty = np.isin(names, ["", "nan", "None"] if strip else [""])
    codes = np.where((codes >= 0) & empty[np.maximum(codes, 0)], -1, codes)
    return codes[: len(a)], codes[len(a) :]


def _present(codes: np.ndarray, size: int) -> np.ndarray:
    """Which of ``size`` codes occur (a mask), -1 left out."""
    return np.bincount(codes[codes >= 0], minlength=size)[:size] > 0


def _shared(a: pd.DataFrame, b: pd.DataFrame, column: str) -> bool:
    """Whether both sides have ``column`` and some of its values are on both sides."""
    if column not in a.columns or column not in b.columns:
        return False
    ca, cb = _codes(a[column], b[column])
    size = int(max(ca.max(initial=-1), cb.max(initial=-1))) + 1
    return bool((_present(ca, size) & _present(cb, size)).any())


def _question_of(
    ids: np.ndarray, questions: np.ndarray, size: int
) -> tuple[np.ndarray, np.ndarray]:
    """Each id's question code on one side, and which ids go with more than one question."""
    keep = ids >= 0
    ids, questions = ids[keep], questions[keep]
    of = np.full(size, -2, dtype=np.int64)
    of[ids] = questions
    several = np.zeros(size, dtype=bool)
    several[ids[of[ids] != questions]] = True
    return of, several


def names_questions(a: pd.DataFrame, b: pd.DataFrame, column: str) -> bool:
    """Whether ``column``'s values name questions across the two sides: on the values both
    sides hold, the same value goes with the same question on both sides (nine in ten at least;
    the same question may be reworded a little: half its words or more shared). Row numbers
    restarted in each file do not: their value 3 is one question in A and another in B."""
    if "user_input" not in a.columns or "user_input" not in b.columns:
        return True  # nothing to check them against
    ia, ib = _codes(a[column], b[column], strip=True)
    qa, qb = _codes(a["user_input"], b["user_input"])
    size = int(max(ia.max(initial=-1), ib.max(initial=-1))) + 1
    shared = _present(ia, size) & _present(ib, size)
    if not shared.any():
        return False
    need = 0.9 * shared.sum()
    # an id with one question on each side is settled on codes, at once; an id with several
    # compares its (id, question) pairs; the word-by-word check runs only for the rest, and
    # stops as soon as the answer is known
    of_a, several_a = _question_of(ia, qa, size)
    of_b, several_b = _question_of(ib, qb, size)
    exact = shared & ~several_a & ~several_b & (of_a == of_b)
    mixed = np.flatnonzero(shared & (several_a | several_b))
    if mixed.size:
        span = int(max(qa.max(initial=0), qb.max(initial=0))) + 2
        rows_a, rows_b = np.isin(ia, mixed), np.isin(ib, mixed)
        pairs = np.intersect1d(
            ia[rows_a].astype(np.int64) * span + qa[rows_a] + 1,
            ib[rows_b].astype(np.int64) * span + qb[rows_b] + 1,
        )
        exact[pairs // span] = True
    if exact.sum() >= need:
        return True
    rest = np.flatnonzero(shared & ~exact)
    text_a, text_b = a["user_input"].astype(str).to_numpy(), b["user_input"].astype(str).to_numpy()
    same, misses_allowed = int(exact.sum()), shared.sum() - need
    for value in rest:
        if _alike(set(text_a[ia == value]), set(text_b[ib == value])):
            same += 1
        else:
            misses_allowed -= 1
            if misses_allowed < 0:
                return False
    return same >= need


def _words(text: str) -> set[str]:
    return set(re.findall(r"\w+", text.lower()))


def _alike(left: set[str], right: set[str]) -> bool:
    """Whether some question of ``left`` is one of ``right``, maybe reworded (half its words)."""
    if left & right:
        return True
    for a in left:
        for b in right:
            wa, wb = _words(a), _words(b)
            if wa and wb and len(wa & wb) >= 0.5 * len(wa | wb):
                return True
    return False


def pairing_keys(
    a: pd.DataFrame, b: pd.DataFrame, *, within: bool, column: str = "variant"
) -> tuple[str, ...]:
    """The columns two sides are paired on (``"user_input"`` is the question text).

    ``within``: two values of ``column`` in one run: the first of :data:`QUESTION_ID_COLUMNS`
    whose values are shared by both sides and name questions (:func:`names_questions`), alone,
    else the question text. Between runs: the question text and ``id`` when both sides share
    ids that name questions, and ``column`` when both sides share values of it (each variant
    against itself). An id that pairs rows of different questions (a row number) is not used:
    :func:`ignored_ids` says which and why.
    """
    if within:
        shared = next(
            (
                c
                for c in QUESTION_ID_COLUMNS
                if c != column and _shared(a, b, c) and names_questions(a, b, c)
            ),
            None,
        )
        return (shared,) if shared else ("user_input",)
    keys: tuple[str, ...] = ("user_input",)
    if _shared(a, b, "id") and names_questions(a, b, "id"):
        keys = ("id", *keys)
    if _shared(a, b, column):
        keys = (column, *keys)
    return keys


def ignored_ids(
    a: pd.DataFrame, b: pd.DataFrame, *, examples: int = 1, paired_on: tuple[str, ...] = ()
) -> str | None:
    """Why a shared id column was not paired on (its values go with different questions on the
    two sides: row numbers, not question ids), in one sentence with an example; None when no
    id column was set aside. ``paired_on``: the keys :func:`pairing_keys` chose, known to name
    questions (not checked again: at a million rows each check reads every id)."""
    for column in QUESTION_ID_COLUMNS:
        if column in paired_on:
            continue
        if not _shared(a, b, column) or names_questions(a, b, column):
            continue
        ids_a, ids_b = a[column].astype(str).str.strip(), b[column].astype(str).str.strip()
        for value in sorted(set(ids_a) & set(ids_b))[:examples]:
            qa = a["user_input"].astype(str)[ids_a == value].iloc[0]
            qb = b["user_input"].astype(str)[ids_b == value].iloc[0]
            if not _alike({qa}, {qb}):
                return (
                    f"Paired on the question text: the {column!r} column pairs rows of different "
                    f"questions (its {value} is “{qa[:60]}” on one side and “{qb[:60]}” on the "
                    "other), so it numbers rows rather than naming questions."
                )
        return (
            f"Paired on the question text: the {column!r} column does not name the same "
            "questions on both sides."
        )
    return None


def no_pairs_message(
    a: pd.DataFrame,
    b: pd.DataFrame,
    keys: tuple[str, ...],
    *,
    label_a: str = "A",
    label_b: str = "B",
    examples: int = 2,
) -> str:
    """Why two sides gave no pair: what they were paired on, and what each side holds (rows,
    distinct questions, ids, a few example questions), one line each."""
    named = {"user_input": "the question text"}
    tried = " and ".join(named.get(k, f"the {k!r} column") for k in keys)
    lines = [
        f"No pairs: rows were matched on {tried}, and no row of {label_a} matches one of {label_b}."
    ]
    for label, side in ((label_a, a), (label_b, b)):
        questions = side["user_input"].dropna().astype(str).unique() if len(side) else []
        shown = "; ".join(f"“{q[:60]}”" for q in questions[:examples])
        held = ", ".join(
            f"{side[k].nunique()} distinct {k!r} values (e.g. "
            + ", ".join(side[k].astype(str).unique()[:examples])
            + ")"
            for k in keys
            if k != "user_input" and k in side.columns
        )
        lines.append(
            f"{label}: {len(side)} rows, {len(questions)} distinct questions"
            + (f", {held}" if held else "")
            + (f" (e.g. {shown})" if shown else "")
            + "."
        )
    return "\n".join(lines)


def outcome(diff: float, tie_margin: float = 0.02) -> str:
    """``"win"`` (B better), ``"loss"`` (B worse), ``"tie"`` or ``"n/a"`` when a side is NaN."""
    if diff is None or (isinstance(diff, float) and math.isnan(diff)):
        return "n/a"
    if diff > tie_margin:
        return "win"
    if diff < -tie_margin:
        return "loss"
    return "tie"


def _keyed(
    frame: pd.DataFrame, keys: tuple[str, ...], value: str, *, text: bool = True
) -> pd.DataFrame:
    if "user_input" not in frame.columns or value not in frame.columns:
        raise InputError(f"comparison needs scored rows with user_input and {value} columns")
    out = frame.copy()
    if value != "score":  # compare on another column: it becomes the pair's score
        out["score"] = out[value]
    out["_key"] = out["user_input"].astype(str) if text or not keys else ""
    for key in keys:
        out["_key"] = out[key].astype(str) + "\x1f" + out["_key"]
    out["_occ"] = out.groupby("_key").cumcount()
    return out


def pair_rows(
    a: pd.DataFrame,
    b: pd.DataFrame,
    *,
    tie_margin: float = 0.02,
    value: str = "score",
    keys: tuple[str, ...] | None = None,
    text: bool = True,
) -> pd.DataFrame:
    """Pair the rows of two scored tables; one output row per pair.

    ``value`` is the column compared (``"score"``, or ``"ragas_value"`` to compare rows scored
    in different modes; see :func:`relevancy.analysis.summary.comparable_value`).

    Columns: ``user_input``, ``id`` (if any), ``score_a``, ``score_b``, ``diff`` (B - A),
    ``outcome``, and ``row``/``response``/``mode``/``ragas_value``/``noncommittal``/
    ``generated_questions``/``similarities``/``error`` with ``_a`` and ``_b`` suffixes (those
    the tables have). ``keys`` are the columns paired on besides ``user_input`` (default:
    ``id`` when both sides have it); ``text=False`` pairs on ``keys`` alone (an id that names
    the question), the question shown being A's.
    """
    if keys is None:
        keys = ("id",) if "id" in a.columns and "id" in b.columns else ()
    keys = tuple(k for k in keys if k != "user_input")
    ka, kb = _keyed(a, keys, value, text=text), _keyed(b, keys, value, text=text)
    keep = ["_key", "_occ", "user_input", *keys]
    left = ka[keep + [c for c in _CARRY if c in ka.columns]]
    right = kb[["_key", "_occ"] + [c for c in _CARRY if c in kb.columns]]
    paired = left.merge(right, on=["_key", "_occ"], suffixes=("_a", "_b"), how="inner")
    paired = paired.drop(columns=["_key", "_occ"]).reset_index(drop=True)
    paired["score_a"] = pd.to_numeric(paired["score_a"], errors="coerce").astype(float)
    paired["score_b"] = pd.to_numeric(paired["score_b"], errors="coerce").astype(float)
    paired["diff"] = paired["score_b"] - paired["score_a"]
    paired["outcome"] = outcomes(paired["diff"].to_numpy(dtype=float), tie_margin)
    return paired


def outcomes(diffs: np.ndarray, tie_margin: float = 0.02) -> np.ndarray:
    """:func:`outcome` of each difference, on the array at once."""
    return np.select(
        [np.isnan(diffs), diffs > tie_margin, diffs < -tie_margin],
        ["n/a", "win", "loss"],
        default="tie",
    ).astype(object)


def pair_variants(
    frame: pd.DataFrame,
    variant_a: Any,
    variant_b: Any,
    *,
    column: str = "variant",
    tie_margin: float = 0.02,
    value: str = "score",
) -> pd.DataFrame:
    """Pair the rows of ``variant_a`` with those of ``variant_b`` in one table
    (:func:`pair_within`)."""
    if column not in frame.columns:
        raise InputError(f"no {column!r} column to compare variants on")
    values = frame[column].astype(str)
    a = frame[values == str(variant_a)]
    b = frame[values == str(variant_b)]
    return pair_within(a, b, column=column, tie_margin=tie_margin, value=value)


def pair_within(
    a: pd.DataFrame,
    b: pd.DataFrame,
    *,
    column: str = "variant",
    tie_margin: float = 0.02,
    value: str = "score",
) -> pd.DataFrame:
    """Pair two sides of one run (two values of ``column``): on the question text, or on a
    question id shared by both sides (:func:`pairing_keys` with ``within=True``)."""
    keys = pairing_keys(a, b, within=True, column=column)
    return pair_rows(
        a, b, tie_margin=tie_margin, value=value, keys=keys, text=keys == ("user_input",)
    )


def pair_runs(
    frame_a: pd.DataFrame,
    frame_b: pd.DataFrame,
    *,
    variant: Any = None,
    column: str = "variant",
    tie_margin: float = 0.02,
    value: str = "score",
) -> pd.DataFrame:
    """Pair two runs (optionally restricted to one variant present in both)."""
    if variant is not None and column in frame_a.columns and column in frame_b.columns:
        frame_a = frame_a[frame_a[column].astype(str) == str(variant)]
        frame_b = frame_b[frame_b[column].astype(str) == str(variant)]
    keys = pairing_keys(frame_a, frame_b, within=False, column=column)
    return pair_rows(frame_a, frame_b, tie_margin=tie_margin, value=value, keys=keys)


def summarize_pairs(
    paired: pd.DataFrame, *, tie_margin: float = 0.02, confidence: float = 0.95
) -> dict[str, Any]:
    """Counts of wins/ties/losses (B vs A), the mean difference and its bootstrap CI, and B's
    win rate: its wins among the pairs that are not ties, with the Wilson interval."""
    diffs = paired["diff"].to_numpy(dtype=float) if len(paired) else np.zeros(0)
    mask = np.isfinite(diffs)
    finite = diffs[mask]
    nan = float("nan")
    lo, hi = bootstrap_ci(finite, confidence=confidence)
    each = outcomes(diffs, tie_margin)
    wins, losses = int((each == "win").sum()), int((each == "loss").sum())
    decided = wins + losses  # the win rate leaves ties out (they are counted beside it)
    win_low, win_high = wilson_interval(wins, decided, confidence=confidence)
    return {
        "pairs": int(diffs.size),
        "compared": int(finite.size),
        "nan_pairs": int(diffs.size - finite.size),
        "wins": int((each == "win").sum()),
        "ties": int((each == "tie").sum()),
        "losses": int((each == "loss").sum()),
        "mean_a": float(paired["score_a"].to_numpy(float)[mask].mean()) if finite.size else nan,
        "mean_b": float(paired["score_b"].to_numpy(float)[mask].mean()) if finite.size else nan,
        "mean_diff": float(finite.mean()) if finite.size else float("nan"),
        "ci_low": lo,
        "ci_high": hi,
        "tie_margin": tie_margin,
        "win_rate": wins / decided if decided else nan,
        "win_low": win_low,
        "win_high": win_high,
    }


@dataclass(frozen=True)
class Regression:
    """The regression gate's verdict on NEW against BASE (differences are NEW - BASE)."""

    summary: dict[str, Any]  #: :func:`summarize_pairs`
    worst: pd.DataFrame  #: the largest regressions, worst first
    margin: float | None  #: the allowed drop, or None (no gate)
    base_rows: int
    new_rows: int

    @property
    def failed(self) -> bool:
        """True when NEW is worse than BASE beyond ``margin``: the CI's upper end < -margin."""
        hi = self.summary["ci_high"]
        return self.margin is not None and not math.isnan(hi) and hi < -self.margin

    def verdict(self) -> str:
        s = self.summary
        ci = f"[{s['ci_low']:+.3f}, {s['ci_high']:+.3f}]"
        if self.margin is None:
            return f"mean difference {s['mean_diff']:+.3f}, 95% CI {ci}"
        if self.failed:
            return (
                f"REGRESSION: mean difference {s['mean_diff']:+.3f}, 95% CI {ci} is entirely "
                f"below -{self.margin:g}"
            )
        return (
            f"no regression beyond -{self.margin:g}: mean difference {s['mean_diff']:+.3f}, "
            f"95% CI {ci}"
        )

    def markdown(self, base: str, new: str) -> str:
        """A summary fit for a pull-request comment or a CI step summary."""
        s = self.summary
        icon = "❌" if self.failed else "✅"
        lines = [
            f"### {icon} Answer Relevancy: `{new}` against `{base}`",
            "",
            f"{self.verdict()}.",
            "",
            "| pairs | better | ties | worse | mean BASE | mean NEW |",
            "| --- | --- | --- | --- | --- | --- |",
            f"| {s['pairs']} | {s['wins']} | {s['ties']} | {s['losses']} | "
            f"{s['mean_a']:.3f} | {s['mean_b']:.3f} |",
        ]
        if len(self.worst):
            lines += [
                "",
                "Largest regressions:",
                "",
                "| question | BASE | NEW | difference |",
                "| --- | --- | --- | --- |",
            ]
            for _, row in self.worst.iterrows():
                question = str(row["user_input"]).replace("|", "\\|").replace("\n", " ")[:90]
                lines.append(
                    f"| {question} | {row['score_a']:.3f} | {row['score_b']:.3f} | "
                    f"{row['diff']:+.3f} |"
                )
        return "\n".join(lines) + "\n"


def regression_check(
    base: pd.DataFrame,
    new: pd.DataFrame,
    *,
    margin: float | None = None,
    tie_margin: float = 0.02,
    worst: int = 5,
) -> Regression:
    """Pair two scored tables (exports or runs) and judge NEW against BASE.

    Rows of different scoring modes are compared on their Ragas value. Raises
    :class:`InputError` when the two share no question.
    """
    value = comparable_value(base, new)
    paired = pair_runs(base, new, tie_margin=tie_margin, value=value)
    if paired.empty:
        raise InputError(
            "BASE and NEW share no question: pair them on the same questions (and ids)"
        )
    losses = paired[paired["outcome"] == "loss"].sort_values("diff", kind="stable").head(worst)
    return Regression(
        summarize_pairs(paired, tie_margin=tie_margin), losses, margin, len(base), len(new)
    )
