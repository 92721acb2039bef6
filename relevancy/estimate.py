"""How long a run will take, before it starts: rows x this backend's measured time per row.

Every finished run records its speed in the cache (wall seconds per row that was not served
from the cache, with the concurrency it ran at), keyed by what changes it: both backends'
fingerprints, strictness and mode. An estimate uses the last record for the same models; with
none, the embedded default falls back to its benchmarked speed and an API model says it will
know after the first rows. Rows whose generations are already in the cache count as instant.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from relevancy._cache import Cache, cache_key

__all__ = [
    "EMBEDDED_SECONDS_PER_ROW",
    "Estimate",
    "record_speed",
    "measured_speed",
    "cached_rows",
    "estimate",
    "duration",
]

#: the embedded default on 2 cores, strictness 3 (bench/RESULTS.md, "Throughput": 0.57 rows/s)
EMBEDDED_SECONDS_PER_ROW = 1.75
RECORD_KIND = "speed"
_MIN_ROWS = 5  #: runs with fewer uncached rows than this are too small to measure a speed


@dataclass(frozen=True)
class Estimate:
    """A run's expected duration (``seconds`` is NaN when nothing is known yet)."""

    rows: int
    cached: int  #: rows whose generations are already in the cache
    seconds: float
    seconds_per_row: float
    basis: str  #: where the speed comes from, in words

    def describe(self) -> str:
        """``"about 12 min for 9,800 rows (0.75 s/row, measured ...); 200 rows from the cache"``."""
        todo = self.rows - self.cached
        cached = f"; {self.cached:,} rows are in the cache already" if self.cached else ""
        if math.isnan(self.seconds):
            return (
                f"{todo:,} rows to score: time unknown until the first rows finish "
                f"({self.basis}){cached}"
            )
        return (
            f"about {duration(self.seconds)} for {todo:,} rows ({self.seconds_per_row:.2f} s/row, "
            f"{self.basis}){cached}"
        )


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


def record_speed(metric: Any, *, rows: int, seconds: float) -> None:
    """Remember ``rows`` uncached rows took ``seconds`` (ignored when too few to tell)."""
    cache = _cache(metric)
    if cache is None or rows < _MIN_ROWS or seconds <= 0:
        return
    cache.put_record(
        RECORD_KIND,
        _key(metric),
        {
            "seconds_per_row": seconds / rows,
            "rows": rows,
            "concurrency": getattr(metric, "concurrency", 1),
            "measured": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        },
    )


def measured_speed(metric: Any) -> dict[str, Any] | None:
    """The last speed recorded for these models and settings, if any."""
    cache = _cache(metric)
    return cache.get_record(RECORD_KIND, _key(metric)) if cache is not None else None


def cached_rows(metric: Any, responses: Iterable[str]) -> int:
    """How many of ``responses`` have their generations in the metric's cache already."""
    cache = _cache(metric)
    generator = getattr(metric, "_generator", None)
    if cache is None or generator is None:
        return 0
    keys = [generator.key(r, metric.strictness) for r in responses]
    found = cache.cached_generations(keys)
    return sum(k in found for k in keys)


def estimate(metric: Any, rows: int, *, cached: int = 0) -> Estimate:
    """The expected duration of scoring ``rows`` rows, ``cached`` of them from the cache."""
    speed = measured_speed(metric)
    if speed is not None:
        per_row = float(speed["seconds_per_row"])
        basis = f"measured on {speed['rows']:,} rows on {speed['measured'][:10]}"
    elif getattr(metric.llm, "embedded", False):
        per_row, basis = EMBEDDED_SECONDS_PER_ROW, "the embedded models' benchmark on 2 cores"
    else:
        per_row, basis = math.nan, "no run of these models measured yet"
    return Estimate(rows, cached, (rows - cached) * per_row, per_row, basis)
