"""What a run will take, before it starts: time, tokens and cost.

Time is rows x this backend's measured time per row. Every finished run records its speed in
the cache (wall seconds per row that was not served from the cache, with the concurrency it ran
at), keyed by what changes it: both backends' fingerprints, strictness and mode, and, when it
ran with a run store (the dashboard, ``score --store``), in the store too, so a run on this
machine teaches the next estimate even with another cache. An estimate uses the newer of the
two records for the same models; with none, the embedded default falls back to its
benchmarked speed and an API model says it will know after the first rows.

Tokens follow the length of the text to score. Each run also records, for its rows that were
not from the cache, a line through (answer characters → generation prompt tokens), the mean
completion tokens per row, and a line through (question + answer characters → embedding
tokens); an estimate applies them to the characters of the rows still to score. Before any run
of these models, a rough rule stands in (about 4 characters per token, the prompt's own length,
15 tokens per generated question) and says so; :func:`measure_sample` scores a few rows of the
input to replace it with a measurement (those rows are then in the cache for the real run).
Rows whose generations are already in the cache count as instant and cost no generation tokens.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

import numpy as np
import pandas as pd

from relevancy.analysis.cost import Price, money, price_for
from relevancy.backends.cache import Cache, cache_key
from relevancy.core.prompt import chat_messages

__all__ = [
    "EMBEDDED_SECONDS_PER_ROW",
    "Estimate",
    "InputStats",
    "TokenRates",
    "record_speed",
    "record_usage",
    "usage_points",
    "measured_speed",
    "measured_rates",
    "rough_rates",
    "cached_rows",
    "cached_mask",
    "estimate",
    "measure_sample",
    "duration",
]

#: the embedded default on 2 cores, strictness 3 (bench/RESULTS.md, "Throughput": 0.57 rows/s)
EMBEDDED_SECONDS_PER_ROW = 1.75
RECORD_KIND = "speed"
TOKENS_KIND = "token_rates"
_MIN_ROWS = 5  #: runs with fewer uncached rows than this are too small to measure a speed
#: the rough rule before any measurement: characters per token, tokens per generated question
CHARS_PER_TOKEN = 4.0
TOKENS_PER_QUESTION = 15.0
SAMPLE_KEEP = 200  #: uncached rows an :class:`InputStats` keeps as a sample to measure on


@dataclass(frozen=True)
class TokenRates:
    """Tokens per row as lines through the text's length (see the module docstring)."""

    prompt_base: float
    prompt_per_char: float  #: per character of the answer
    completion_per_row: float
    embedding_base: float
    embedding_per_char: float  #: per character of question + answer
    basis: str

    def tokens(
        self,
        rows: int,
        question_chars: int,
        answer_chars: int,
        generator_chars: int | None = None,
    ) -> dict[str, float]:
        """Expected generation prompt/completion and embedding tokens of ``rows`` rows.

        ``generator_chars``: the answers' characters the generator is sent (each cut at its
        ``max_response_chars``); ``answer_chars`` (all of them) when not given.
        """
        sent = answer_chars if generator_chars is None else generator_chars
        return {
            "prompt_tokens": rows * self.prompt_base + self.prompt_per_char * sent,
            "completion_tokens": rows * self.completion_per_row,
            "embedding_tokens": rows * self.embedding_base
            + self.embedding_per_char * (question_chars + answer_chars),
        }

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


@dataclass
class InputStats:
    """What an estimate needs to know about the rows to score; filled a chunk at a time."""

    rows: int = 0  #: rows with a question and an answer
    cached: int = 0  #: of which the generations are in the cache already
    question_chars: int = 0  #: characters of the rows to score (not cached)
    answer_chars: int = 0
    #: characters of those answers the question generator is sent (each cut at its cap)
    generator_chars: int = 0
    #: up to SAMPLE_KEEP (user_input, response) pairs to score, drawn evenly (reservoir)
    sample: list[tuple[str, str]] = field(default_factory=list)
    _seen: int = 0
    _rng: random.Random = field(default_factory=lambda: random.Random(0), repr=False)

    def add(self, metric: Any, user_inputs: Sequence[str], responses: Sequence[str]) -> None:
        """Count a chunk of rows (pairs with an empty side are skipped)."""
        pairs = [
            (u, r) for u, r in zip(user_inputs, responses) if str(u).strip() and str(r).strip()
        ]
        hit = cached_mask(metric, [r for _, r in pairs])
        cap = getattr(metric.llm, "max_response_chars", None)
        self.rows += len(pairs)
        self.cached += sum(hit)
        for (u, r), done in zip(pairs, hit):
            if done:
                continue
            self.question_chars += len(u)
            self.answer_chars += len(r)
            self.generator_chars += min(len(r), cap) if cap else len(r)
            self._seen += 1
            if len(self.sample) < SAMPLE_KEEP:
                self.sample.append((u, r))
            else:
                j = self._rng.randrange(self._seen)
                if j < SAMPLE_KEEP:
                    self.sample[j] = (u, r)

    @classmethod
    def of(cls, metric: Any, user_inputs: Sequence[str], responses: Sequence[str]) -> InputStats:
        stats = cls()
        stats.add(metric, [str(u) for u in user_inputs], [str(r) for r in responses])
        return stats


@dataclass(frozen=True)
class Estimate:
    """A run's expected duration (``seconds`` is NaN when nothing is known yet), and its tokens
    and cost when the rows' text was given."""

    rows: int
    cached: int  #: rows whose generations are already in the cache
    seconds: float
    seconds_per_row: float
    basis: str  #: where the speed comes from, in words
    tokens: dict[str, float] = field(default_factory=dict)  #: expected billed tokens
    token_basis: str = ""  #: where the token rates come from, in words
    llm: str = ""
    embeddings: str = ""
    #: the least time the generator's rate limit allows, and the limit in words ("500 RPM")
    limit_seconds: float = math.nan
    limit: str = ""

    def cost(self, prices: Mapping[str, Price] | None = None) -> float:
        """Expected dollars (NaN when a model has no price or no tokens are estimated)."""
        if not self.tokens:
            return math.nan
        gen, emb = price_for(self.llm, prices), price_for(self.embeddings, prices)
        if gen is None or emb is None:
            return math.nan
        t = self.tokens
        return (
            t["prompt_tokens"] * gen.input
            + t["completion_tokens"] * gen.output
            + t["embedding_tokens"] * emb.input
        ) / 1e6

    def describe_tokens(self) -> str:
        """``"about 1.2M in + 90k out (generation), 400k embedded (measured ...)"``."""
        if not self.tokens:
            return ""
        t = self.tokens
        return (
            f"about {_count(t['prompt_tokens'])} in + {_count(t['completion_tokens'])} out "
            f"(generation), {_count(t['embedding_tokens'])} embedded ({self.token_basis})"
        )

    def describe_cost(self, prices: Mapping[str, Price] | None = None) -> str:
        """``"about $0.42"``, ``"$0 (embedded models)"`` or the model that needs a price."""
        if not self.tokens:
            return ""
        if not any(self.tokens.values()):
            return "$0 (nothing to bill)"
        missing = [m for m in (self.llm, self.embeddings) if price_for(m, prices) is None]
        if missing:
            return f"unknown: no price for {', '.join(dict.fromkeys(missing))}"
        dollars = self.cost(prices)
        if dollars == 0 and all(m.startswith("local:") for m in (self.llm, self.embeddings)):
            return "$0 (embedded models)"
        return f"about {money(dollars)}"

    def describe_limit(self) -> str:
        """``"1,000 rows at 500 RPM: at least 2 min"`` (empty when no limit is known)."""
        if math.isnan(self.limit_seconds):
            return ""
        todo = self.rows - self.cached
        return f"{todo:,} rows at {self.limit}: at least {duration(self.limit_seconds)}"

    def describe(self) -> str:
        """``"about 12 min for 9,800 rows (0.75 s/row, measured ...); 200 rows from the cache"``."""
        todo = self.rows - self.cached
        cached = f"; {self.cached:,} rows are in the cache already" if self.cached else ""
        if not math.isnan(self.limit_seconds) and not self.seconds >= self.limit_seconds:
            return (
                f"at least {duration(self.limit_seconds)} for {todo:,} rows (the rate limit: "
                f"{self.limit}){cached}"
            )
        if math.isnan(self.seconds):
            return (
                f"{todo:,} rows to score: time unknown until the first rows finish "
                f"({self.basis}){cached}"
            )
        return (
            f"about {duration(self.seconds)} for {todo:,} rows ({self.seconds_per_row:.2f} s/row, "
            f"{self.basis}){cached}"
        )


def _count(n: float) -> str:
    """``"840"``, ``"12k"``, ``"3.4M"``."""
    if n < 1000:
        return f"{n:,.0f}"
    if n < 1_000_000:
        return f"{n / 1000:,.0f}k"
    return f"{n / 1_000_000:,.1f}M"


def duration(seconds: float) -> str:
    """``"45 s"``, ``"12 min"``, ``"2 h 10 min"``."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    minutes = round(seconds / 60)
    return f"{minutes} min" if minutes < 120 else f"{minutes // 60} h {minutes % 60} min"


def _key(metric: Any) -> str:
    return cache_key(
        {"llm": metric.llm.fingerprint(), "embeddings": metric.embeddings.fingerprint()},
        RECORD_KIND,
        metric.strictness,
        metric.mode,
    )


def _cache(metric: Any) -> Cache | None:
    cache = getattr(metric, "cache", None)
    return cache if isinstance(cache, Cache) else None


def record_speed(metric: Any, *, rows: int, seconds: float, store: Any | None = None) -> None:
    """Remember ``rows`` uncached rows took ``seconds`` (ignored when too few to tell), in the
    metric's cache and in ``store`` (a :class:`relevancy.runs.RunStore`) when given."""
    if rows < _MIN_ROWS or seconds <= 0:
        return
    record = {
        "seconds_per_row": seconds / rows,
        "rows": rows,
        "concurrency": getattr(metric, "concurrency", 1),
        "measured": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    cache = _cache(metric)
    if cache is not None:
        cache.put_record(RECORD_KIND, _key(metric), record)
    if store is not None:
        store.set_meta(f"{RECORD_KIND}:{_key(metric)}", json.dumps(record))


def measured_speed(metric: Any, store: Any | None = None) -> dict[str, Any] | None:
    """The last speed recorded for these models and settings, if any: the newer of the cache's
    record and ``store``'s (the runs on this machine)."""
    cache = _cache(metric)
    found = [cache.get_record(RECORD_KIND, _key(metric))] if cache is not None else []
    if store is not None:
        text = store.get_meta(f"{RECORD_KIND}:{_key(metric)}")
        found.append(json.loads(text) if text else None)
    known = [r for r in found if r]
    return max(known, key=lambda r: str(r.get("measured", ""))) if known else None


def cached_mask(metric: Any, responses: Iterable[str]) -> list[bool]:
    """For each of ``responses``: are its generations in the metric's cache already?"""
    responses = list(responses)
    cache = _cache(metric)
    generator = getattr(metric, "_generator", None)
    if cache is None or generator is None:
        return [False] * len(responses)
    keys = [generator.key(r, metric.strictness) for r in responses]
    found = cache.cached_generations(keys)
    return [k in found for k in keys]


def cached_rows(metric: Any, responses: Iterable[str]) -> int:
    """How many of ``responses`` have their generations in the metric's cache already."""
    return sum(cached_mask(metric, responses))


def _line(x: np.ndarray, y: np.ndarray, per_char: float) -> tuple[float, float]:
    """Intercept and slope of y over x (least squares); the given slope when x barely varies."""
    if len(x) >= 3 and np.std(x) > 0.1 * max(float(np.mean(x)), 1.0):
        slope, base = np.polyfit(x, y, 1)
        if slope >= 0 and base >= 0:
            return float(base), float(slope)
    return max(float(np.mean(y) - per_char * np.mean(x)), 0.0), per_char


def usage_points(results: Iterable[Any]) -> list[tuple[int, int, int, int, int]]:
    """(answer chars, question + answer chars, prompt, completion, embedding tokens) of each
    result not from the cache: what :func:`record_usage` fits its lines through."""
    return [
        (
            len(r.response),
            len(r.response) + len(r.user_input),
            int(r.usage.get("prompt_tokens", 0)),
            int(r.usage.get("completion_tokens", 0)),
            int(r.usage.get("embedding_tokens", 0)),
        )
        for r in results
        if not r.cached and r.usage and not r.error
    ]


def record_usage(metric: Any, results: Sequence[Any] | Sequence[tuple[int, ...]]) -> None:
    """Remember the token rates of the rows not from the cache (results, or their
    :func:`usage_points`); ignored when fewer than 5."""
    cache = _cache(metric)
    points = [p if isinstance(p, tuple) else None for p in results]
    if any(p is None for p in points):
        points = usage_points(results)  # type: ignore[arg-type]
    if cache is None or len(points) < _MIN_ROWS:
        return
    answer, both, prompt, completion, embedded = (np.array(c, dtype=float) for c in zip(*points))
    p_base, p_slope = _line(answer, prompt, 1 / CHARS_PER_TOKEN)
    e_base, e_slope = _line(both, embedded, 1 / CHARS_PER_TOKEN)
    cache.put_record(
        TOKENS_KIND,
        _key(metric),
        {
            "prompt_base": p_base,
            "prompt_per_char": p_slope,
            "completion_per_row": float(np.mean(completion)),
            "embedding_base": e_base,
            "embedding_per_char": e_slope,
            "rows": len(points),
            "measured": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        },
    )


def measured_rates(metric: Any) -> TokenRates | None:
    """The token rates last recorded for these models and settings, if any."""
    cache = _cache(metric)
    got = cache.get_record(TOKENS_KIND, _key(metric)) if cache is not None else None
    if got is None:
        return None
    return TokenRates(
        got["prompt_base"],
        got["prompt_per_char"],
        got["completion_per_row"],
        got["embedding_base"],
        got["embedding_per_char"],
        f"measured on {got['rows']:,} rows on {got['measured'][:10]}",
    )


def rough_rates(metric: Any) -> TokenRates:
    """The rule of thumb before any run: 4 characters a token, the prompt's own length, 15
    tokens a generated question; the embedder sees the question, the answer (twice: whole and
    by sentence) and the generated questions."""
    template = sum(len(m["content"]) for m in chat_messages(""))
    n = float(getattr(metric, "strictness", 3))
    return TokenRates(
        prompt_base=template / CHARS_PER_TOKEN + 4 * 4,  # + a few tokens of chat markup
        prompt_per_char=1 / CHARS_PER_TOKEN,
        completion_per_row=n * TOKENS_PER_QUESTION,
        embedding_base=n * TOKENS_PER_QUESTION,
        embedding_per_char=2 / CHARS_PER_TOKEN,
        basis="rough: about 4 characters a token, until a run of these models is measured",
    )


def measure_sample(metric: Any, stats: InputStats, k: int = 20) -> list[Any]:
    """Score ``k`` of the sampled rows to measure speed and token rates for these models.

    The rows are scored through the metric as the real run would (so they are in the cache
    for it); returns their results. Fewer than 5 rows measure nothing.
    """
    import time

    k = min(max(0, k), len(stats.sample))
    picks = sorted({int(i) for i in np.linspace(0, len(stats.sample) - 1, k).round()}) if k else []
    pairs = [stats.sample[i] for i in picks]  # spread over the sample, not its first rows
    if not pairs:
        return []
    frame = pd.DataFrame(pairs, columns=["user_input", "response"])
    started = time.perf_counter()
    results = metric.score_many(frame)
    seconds = time.perf_counter() - started
    record_speed(metric, rows=sum(not r.cached for r in results), seconds=seconds)
    record_usage(metric, results)
    return list(results)


def limit_floor(
    metric: Any, todo: int, tokens: Mapping[str, float], *, rpm: float | None, tpm: float | None
) -> tuple[float, str]:
    """The least seconds ``todo`` rows take under the generator's limits (NaN when none is
    known), and the limits in words. A row sends one request (``n`` questions at once; each
    question its own request on a server seen to ignore ``n``) and is counted, as OpenAI counts
    at admission, its prompt plus ``max_tokens`` for each question."""
    rate = getattr(metric.llm, "rate", None)
    if rate is not None:
        rpm = rpm or rate.limits.get("requests")
        tpm = tpm or rate.limits.get("tokens")
    if not todo or not (rpm or tpm) or metric.llm.embedded:
        return math.nan, ""
    n = metric.strictness
    requests = n if getattr(metric.llm, "_ignores_n", False) else 1
    prompt = tokens.get("prompt_tokens", 0.0) / todo if tokens else 0.0
    per_row = prompt + getattr(metric.llm, "max_tokens", 0) * n
    times = []
    if rpm:
        times.append(todo * requests / rpm * 60)
    if tpm and per_row:
        times.append(todo * per_row / tpm * 60)
    words = " / ".join(f"{v:,.0f} {u}" for v, u in ((rpm, "RPM"), (tpm, "TPM")) if v)
    return (max(times) if times else math.nan), words


def estimate(
    metric: Any,
    rows: int | InputStats,
    *,
    cached: int = 0,
    store: Any | None = None,
    rpm: float | None = None,
    tpm: float | None = None,
) -> Estimate:
    """The expected duration of scoring ``rows`` rows, ``cached`` of them from the cache; with
    :class:`InputStats` (the rows' text) also the expected tokens (cost: :meth:`Estimate.cost`).
    ``store`` (a run store) adds the speed of the runs it recorded.
    ``rpm``/``tpm`` (the generator model's rate limits; default: those its answers' headers
    said) give :attr:`Estimate.limit_seconds`, the least time the limit allows.
    """
    stats = rows if isinstance(rows, InputStats) else None
    if stats is not None:
        rows, cached = stats.rows, stats.cached
    speed = measured_speed(metric, store)
    if speed is not None:
        per_row = float(speed["seconds_per_row"])
        basis = f"measured on {speed['rows']:,} rows on {speed['measured'][:10]}"
    elif metric.llm.embedded:
        per_row, basis = EMBEDDED_SECONDS_PER_ROW, "the embedded models' benchmark on 2 cores"
    else:
        per_row, basis = math.nan, "no run of these models measured yet"
    tokens: dict[str, float] = {}
    token_basis = ""
    if stats is not None:
        rates = measured_rates(metric) or rough_rates(metric)
        todo = stats.rows - stats.cached
        tokens = rates.tokens(
            todo,
            stats.question_chars,
            stats.answer_chars,
            stats.generator_chars or stats.answer_chars,  # stats made by hand may lack it
        )
        token_basis = rates.basis
    floor, limit = limit_floor(metric, rows - cached, tokens, rpm=rpm, tpm=tpm)
    return Estimate(
        rows,
        cached,
        (rows - cached) * per_row,
        per_row,
        basis,
        tokens,
        token_basis,
        llm=str(metric.llm.name),
        embeddings=str(metric.embeddings.name),
        limit_seconds=floor,
        limit=limit,
    )
