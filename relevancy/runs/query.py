"""Which scored rows of a run, in which order: the Dataset page's filters as SQL."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from relevancy.core.triage import DEFAULT_THRESHOLD, REASONS

__all__ = [
    "SORTS",
    "STATUSES",
    "RowQuery",
    "extra_value",
    "reason_sql",
]

SORTS = ("score ↑ (lowest first)", "score ↓", "row")

#: the Status filter's choices
STATUSES = ("all", "scored", "NaN / errors", "incomplete")


def extra_value(name: str, table: str = "i") -> tuple[str, list[Any]]:
    """SQL for the value of the input column ``name`` kept in ``table``'s ``extra`` JSON, with
    its parameter: any name (quotes, brackets, dots, spaces, backslashes, unicode, SQL words).

    A JSON path can name a key only when its text needs no escape (``$."a"b"`` ends at the
    second quote), so names with a quote, a backslash or a control character are looked up
    among the object's keys (``json_each``) instead; the name is always a parameter.
    """
    if '"' not in name and json.dumps(name, ensure_ascii=False)[1:-1] == name:
        return f"json_extract({table}.extra, ?)", [f'$."{name}"']
    return f"(SELECT j.value FROM json_each({table}.extra) j WHERE j.key = ?)", [name]


#: flags the threshold decides, each the row's main reason whenever it is set (the triage:
#: ``drifting`` only on an ``ok`` row below it, ``evasive`` only below it), and ``ok``
AT_THRESHOLD = frozenset({"ok", "drifting", "evasive"})


def _flagged(flag: str) -> str:
    return f"instr(', ' || r.flags || ', ', ', {flag}, ') > 0"


def reason_sql(threshold: float | None, decided_at: float = DEFAULT_THRESHOLD) -> str:
    """SQL for a row's main reason at ``threshold``, from the one stored (decided at
    ``decided_at``, the run's threshold): ``r.reason`` itself when the two are the same.

    Only a score between the two thresholds changes its reason, and only where the triage reads
    the threshold (:func:`relevancy.core.triage.triage`): ``ok`` and ``drifting`` swap, an answer
    that dodges in so many words (``evasive_wording``, a function of the store's connections) is
    ``evasive`` once below, and an ``evasive`` row no longer below takes its next flag, else
    ``ok``. Reads ``i.response`` when the threshold is above ``decided_at``."""
    if threshold is None or float(threshold) == float(decided_at):
        return "r.reason"
    t, t0 = float(threshold), float(decided_at)
    lo, hi = min(t, t0), max(t, t0)
    after = [c for c in REASONS if c not in ("error", "noncommittal", "evasive", "drifting", "ok")]
    nxt = " ".join(
        f"WHEN {_flagged(c)}"
        + (" AND r.questions_used < r.strictness" if c == "incomplete_generation" else "")
        + f" THEN '{c}'"
        for c in after
    )
    dodges = (
        f"WHEN r.score < {t!r} AND r.reason NOT IN ('', 'evasive') "
        "AND evasive_wording(i.response) != '' THEN 'evasive' "
        if t > t0
        else ""
    )
    return (
        f"(CASE WHEN r.score IS NULL OR NOT (r.score >= {lo!r} AND r.score < {hi!r}) "
        "OR r.reason IN ('error', 'noncommittal') THEN r.reason "
        + dodges
        + f"WHEN r.reason = 'evasive' AND r.score >= {t!r} THEN (CASE {nxt} ELSE 'ok' END) "
        f"WHEN r.reason IN ('ok', 'drifting') THEN "
        f"(CASE WHEN r.score < {t!r} THEN 'drifting' ELSE 'ok' END) "
        "ELSE r.reason END)"
    )


@dataclass(frozen=True)
class RowQuery:
    """Which scored rows of a run, in which order (the Dataset page's filters).

    A NaN row stays in unless ``status`` excludes it; ``search`` matches the question or the
    answer, ignoring case; ``columns`` keeps rows whose input column has one of the values.
    """

    score_range: tuple[float, float] = (-1.0, 1.0)
    noncommittal: str = "all"  #: "all", "yes" or "no"
    #: one of :data:`STATUSES`: "incomplete" keeps the scored rows whose score rests on fewer
    #: generated questions than asked
    status: str = "all"
    search: str = ""
    variants: tuple[str, ...] = ()  #: none chosen: all variants
    reasons: tuple[str, ...] = ()  #: rows whose main reason is one of these (none: all)
    #: rows flagged with one of these, as the main reason or a secondary one (none: all)
    flags: tuple[str, ...] = ()
    below: float | None = None  #: only rows scoring below this
    sort: str = SORTS[0]
    columns: tuple[tuple[str, tuple[str, ...]], ...] = ()  #: (input column, kept values)
    #: only rows with a human label (set or cleared): read from the labels, not every row
    labelled: bool = False
    #: the threshold ``reasons`` (and the ``reason`` column read) are at (None: as stored)
    threshold: float | None = None
    #: the threshold the stored reasons were decided at (:attr:`RunInfo.decided_at`)
    decided_at: float = DEFAULT_THRESHOLD

    @property
    def reason(self) -> str:
        """SQL for each row's main reason at :attr:`threshold` (:func:`reason_sql`)."""
        return reason_sql(self.threshold, self.decided_at)

    @property
    def reads_inputs(self) -> bool:
        """Whether :meth:`where` reads the inputs (``i``): variants, input columns, search, or
        a reason that may have become ``evasive`` at a higher threshold."""
        rethought = bool(self.reasons or self.flags) and "i.response" in self.reason
        return bool(
            self.variants or any(v for _, v in self.columns) or self.search.strip() or rethought
        )

    def where(self) -> tuple[str, list[Any]]:
        """The SQL condition on ``r`` (results) and ``i`` (inputs), with its parameters."""
        sql = ["(r.score IS NULL OR r.score BETWEEN ? AND ?)"]
        params: list[Any] = [float(self.score_range[0]), float(self.score_range[1])]
        if self.status == "scored":
            sql.append("r.score IS NOT NULL")
        elif self.status == "NaN / errors":
            sql.append("(r.score IS NULL OR r.error != '')")
        elif self.status == "incomplete":
            sql.append("r.score IS NOT NULL AND r.questions_used < r.strictness")
        if self.noncommittal in ("yes", "no"):
            sql.append("r.noncommittal = ?")
            params.append(1 if self.noncommittal == "yes" else 0)
        if self.variants:
            sql.append(f"i.variant IN ({','.join('?' * len(self.variants))})")
            params += list(self.variants)
        if self.reasons:
            sql.append(f"{self.reason} IN ({','.join('?' * len(self.reasons))})")
            params += list(self.reasons)
        if self.flags:  # the flags column holds "a, b, c"; the main reason counts as a flag
            either = []
            for flag in self.flags:
                if flag in AT_THRESHOLD:
                    # a flag the threshold decides (the main reason whenever it is one): read
                    # at the threshold asked for, not as stored
                    either.append(f"{self.reason} = ?")
                    params.append(flag)
                else:
                    either.append(f"(instr(', ' || r.flags || ', ', ?) > 0 OR {self.reason} = ?)")
                    params += [f", {flag}, ", flag]
            sql.append("(" + " OR ".join(either) + ")")
        for column, values in self.columns:
            if values:
                marks = ",".join("?" * len(values))
                value, named = extra_value(column)
                sql.append(f"CAST({value} AS TEXT) IN ({marks})")
                params += [*named, *values]
        if self.search.strip():
            sql.append("instr(casefold(i.user_input || ' ' || i.response), ?) > 0")
            params.append(self.search.strip().casefold())
        if self.below is not None:
            sql.append("r.score < ?")
            params.append(float(self.below))
        if self.labelled:  # each labelled row looked up by its key, not every row read
            sql.append("r.idx IN (SELECT l.idx FROM labels l WHERE l.run_id = r.run_id)")
        return " AND ".join(sql), params

    def order(self) -> str:
        if self.sort == SORTS[1]:
            return "r.score DESC NULLS LAST, r.idx"
        if self.sort == SORTS[2]:
            return "r.idx"
        return "r.score ASC NULLS FIRST, r.idx"
