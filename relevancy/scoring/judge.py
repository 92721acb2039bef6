"""Judge check: is this LLM + embedder a judge worth trusting before you act on its scores?

The configured metric scores a small labelled set shipped with the package
(``relevancy/data/judge_check.jsonl``): 40 questions, each with a complete answer and a worse
one of a kind users meet (10 each: *partial*, *padded*, *drifting*, *evasive*). It was written
for this project and is balanced for length: the worse answer is the longer one in exactly half
of the pairs, so a judge that simply prefers long (or short) answers scores 0.5. The set is used
for this check only, never to choose a setting.

The figure is pairwise agreement::

    agreement = (1/P) * sum_p [score(better_p) > score(worse_p)]        a tie counts 1/2

A pair where either answer got no score (NaN) counts 1/2 too (a coin), so failures cannot raise
the figure; their number is reported. The 95% CI is a percentile bootstrap over pairs. Beside
it: the same figure for "the longer answer wins", "the shorter answer wins" and
cos(question, answer) with the judge's own embedder, and the embedded default's recorded figure.

A check is stored in the metric's cache (keyed by everything that changes the scores: both
backends' fingerprints, strictness, mode, noncommittal rule, and the check set itself), so a
second check is instant and the dashboard can show the last one next to the scores.

Examples
--------
>>> from relevancy import AnswerRelevancy
>>> from relevancy.scoring.judge import check_judge
>>> check = check_judge(AnswerRelevancy())  # doctest: +SKIP
>>> check.summary()  # doctest: +SKIP
'judge check: 0.60 on 40 pairs, 3 Dec'
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from importlib import resources
from typing import Any

import numpy as np

from relevancy.analysis.agreement import pairwise_accuracy, pairwise_wins
from relevancy.backends.cache import Cache, cache_key
from relevancy.scoring.estimate import cached_rows, estimate, record_speed

__all__ = [
    "CheckPair",
    "PairOutcome",
    "JudgeCheck",
    "EMBEDDED_DEFAULT",
    "KINDS",
    "load_check_set",
    "check_set_version",
    "judge_key",
    "check_judge",
    "last_check",
    "judge_estimate",
]

KINDS = ("partial", "padded", "drifting", "evasive")
RECORD_KIND = "judge_check"
_FILE = "judge_check.jsonl"

#: The embedded default's own check (SmolLM2-135M + MiniLM int8, ragas mode, strictness 3,
#: seed 0), measured with ``relevancy check-judge`` (again on 2026-12-04: the same figures),
#: recorded pair by pair in ``tests/data/judge_embedded_default.json``; the tests hold this to
#: the record and score a sample of its pairs again.
EMBEDDED_DEFAULT: dict[str, Any] = {
    "agreement": 0.675,
    "ci_low": 0.525,
    "ci_high": 0.825,
    "cosine_baseline": 0.9,
    "pairs": 40,
    "measured": "2026-12-03",
}


@dataclass(frozen=True)
class CheckPair:
    """One question with a complete answer and a worse one."""

    id: str
    kind: str
    user_input: str
    better: str
    worse: str
    note: str


@dataclass(frozen=True)
class PairOutcome:
    """How the judge scored one pair: 1 it preferred the better answer, 0 the worse, 1/2 tie."""

    id: str
    kind: str
    better_score: float
    worse_score: float
    outcome: float
    better_cosine: float
    worse_cosine: float


def load_check_set() -> list[CheckPair]:
    """The 40 pairs shipped in ``relevancy/data/judge_check.jsonl``."""
    text = (resources.files("relevancy") / "data" / _FILE).read_text("utf-8")
    return [CheckPair(**json.loads(line)) for line in text.splitlines() if line.strip()]


def check_set_version() -> str:
    """A digest of the shipped check set (a changed set never reuses an old check)."""
    data = (resources.files("relevancy") / "data" / _FILE).read_bytes()
    return hashlib.sha256(data).hexdigest()[:12]


@dataclass(frozen=True)
class JudgeCheck:
    """The outcome of one judge check (plain data; ``to_dict``/``from_dict`` round-trip)."""

    llm: str
    embeddings: str
    mode: str
    strictness: int
    key: str
    agreement: float
    ci_low: float
    ci_high: float
    failed: int  #: pairs where an answer got no score (counted as ties)
    by_kind: dict[str, float]
    baselines: dict[str, float]
    outcomes: list[PairOutcome] = field(default_factory=list)
    checked_at: str = ""
    seconds: float = 0.0
    check_set: str = ""

    @property
    def pairs(self) -> int:
        return len(self.outcomes)

    def summary(self) -> str:
        """``"judge check: 0.82 on 40 pairs, 12 Dec"``."""
        when = ""
        with contextlib.suppress(ValueError):
            when = ", " + datetime.fromisoformat(self.checked_at).strftime("%-d %b")
        return f"judge check: {self.agreement:.2f} on {self.pairs} pairs{when}"

    def verdict(self) -> str:
        """One plain sentence on what the figure says."""
        length = max(self.baselines["longer answer wins"], self.baselines["shorter answer wins"])
        cosine = self.baselines["cos(question, answer)"]
        if self.ci_low <= length:
            text = (
                "Not clearly better than picking the longer or the shorter answer: do not act "
                "on these scores without reading the answers."
            )
        elif self.agreement < cosine:
            text = (
                "Better than answer length, but below the plain cosine of question and answer "
                "on the same pairs: the generated questions add little."
            )
        else:
            text = "Prefers the complete answer clearly more often than chance and length do."
        if self.failed:
            text += f" {self.failed} pair(s) had an answer without a score (counted as ties)."
        return text

    def disagreements(self) -> list[PairOutcome]:
        """Pairs where the judge preferred the worse answer, or could not tell (worst first)."""
        bad = [o for o in self.outcomes if o.outcome < 1]
        return sorted(bad, key=lambda o: (o.outcome, _gap(o)))

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON data (NaN becomes ``None``)."""
        return _plain(asdict(self))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> JudgeCheck:
        data = dict(data)

        def num(x: Any) -> float:
            return float("nan") if x is None else float(x)

        data["outcomes"] = [
            PairOutcome(
                **{k: num(v) if k.endswith(("score", "cosine")) else v for k, v in o.items()}
            )
            for o in data.get("outcomes", [])
        ]
        for k in ("agreement", "ci_low", "ci_high"):
            data[k] = num(data[k])
        return cls(**data)


def _plain(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _gap(o: PairOutcome) -> float:
    d = o.better_score - o.worse_score
    return 0.0 if math.isnan(d) else d


def judge_key(metric: Any) -> str:
    """What a check depends on: the backends' fingerprints, the metric's rules, the check set."""
    return cache_key(
        {
            "llm": metric.llm.fingerprint(),
            "embeddings": metric.embeddings.fingerprint(),
        },
        RECORD_KIND,
        metric.strictness,
        metric.mode,
        metric.noncommittal,
        metric.noncommittal_threshold,
        check_set_version(),
    )


def judge_estimate(metric: Any) -> Any:
    """How long the check should take with ``metric`` (an :class:`Estimate`: the speed of these
    models measured on this machine, else the embedded models' benchmark; rows already in the
    cache count as instant), said before it starts."""
    answers = [text for p in load_check_set() for text in (p.better, p.worse)]
    return estimate(metric, len(answers), cached=cached_rows(metric, answers))


def check_judge(
    metric: Any,
    *,
    progress: Callable[[int, int], None] | None = None,
    save: bool = True,
) -> JudgeCheck:
    """Score the check set with ``metric`` and measure its agreement (stored in its cache).

    ``metric`` is an :class:`relevancy.AnswerRelevancy`; its cache makes a second check instant.
    ``progress(done, total)`` is called after each of the 80 answers.
    """
    pairs = load_check_set()
    rows = [(p.user_input, text) for p in pairs for text in (p.better, p.worse)]
    cached = cached_rows(metric, [answer for _, answer in rows])
    started = time.perf_counter()
    results = metric.score_many(rows, progress=progress)
    seconds = time.perf_counter() - started
    record_speed(metric, rows=len(rows) - cached, seconds=seconds)  # the next estimate's speed
    better, worse = results[0::2], results[1::2]
    figure = pairwise_accuracy([b.value for b in better], [w.value for w in worse])
    wins = pairwise_wins([b.value for b in better], [w.value for w in worse])
    outcomes = [
        PairOutcome(
            id=p.id,
            kind=p.kind,
            better_score=b.value,
            worse_score=w.value,
            outcome=float(win),
            better_cosine=_nan(b.answer_similarity),
            worse_cosine=_nan(w.answer_similarity),
        )
        for p, b, w, win in zip(pairs, better, worse, wins)
    ]
    check = JudgeCheck(
        llm=metric.llm.name,
        embeddings=metric.embeddings.name,
        mode=metric.mode,
        strictness=metric.strictness,
        key=judge_key(metric),
        agreement=figure.value,
        ci_low=figure.low,
        ci_high=figure.high,
        failed=sum(math.isnan(o.better_score) or math.isnan(o.worse_score) for o in outcomes),
        by_kind={
            k: float(np.mean([o.outcome for o in outcomes if o.kind == k]))
            for k in KINDS
            if any(o.kind == k for o in outcomes)
        },
        baselines=_baselines(pairs, outcomes),
        outcomes=outcomes,
        checked_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        seconds=seconds,
        check_set=check_set_version(),
    )
    cache = getattr(metric, "cache", None)
    if save and isinstance(cache, Cache):
        cache.put_record(RECORD_KIND, check.key, check.to_dict())
    return check


def _nan(x: float | None) -> float:
    return float("nan") if x is None else float(x)


def _baselines(pairs: list[CheckPair], outcomes: list[PairOutcome]) -> dict[str, float]:
    longer = pairwise_wins([len(p.better) for p in pairs], [len(p.worse) for p in pairs])
    cosine = pairwise_wins([o.better_cosine for o in outcomes], [o.worse_cosine for o in outcomes])
    return {
        "longer answer wins": float(longer.mean()),
        "shorter answer wins": float((1 - longer).mean()),
        "cos(question, answer)": float(cosine.mean()),
    }


def last_check(metric: Any) -> JudgeCheck | None:
    """The stored check of exactly this judge (same backends, rules and check set), if any."""
    cache = getattr(metric, "cache", None)
    if not isinstance(cache, Cache):
        return None
    data = cache.get_record(RECORD_KIND, judge_key(metric))
    return JudgeCheck.from_dict(data) if data else None
