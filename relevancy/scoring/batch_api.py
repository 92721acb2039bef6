"""``relevancy score --batch-api``: a file's generations from OpenAI's Batch API, at half price.

:func:`run_batch` reads the file, writes one request per answer whose generations are not in
the cache yet (the body a live request would send; its ``custom_id`` the generations' cache
key), submits them as one batch, polls it and puts every answer it returns into the cache. The
run that follows is then the usual one: it reads the generations from the cache and embeds
live (embedding tokens cost a fraction of generation's and have their own, larger limits), so
the results have exactly the shape of a live run's.

The batch's id is written next to the output (``OUTPUT.batch.json``) as soon as it is created,
and saved with the run in the run store. The same command run again after an interruption
finds it there and waits for that batch instead of paying for a second one.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from relevancy.analysis.cost import Price, money, price_for
from relevancy.backends import GenerationBatch, cache_key
from relevancy.core.sync import run_sync
from relevancy.errors import InputError
from relevancy.io import iter_table

__all__ = ["BATCH_DISCOUNT", "BatchRun", "batch_cost", "run_batch", "sidecar_path"]

#: what the Batch API charges, as a share of the live price (OpenAI: half)
BATCH_DISCOUNT = 0.5


@dataclass
class BatchRun:
    """What the batch did: its id (None when every answer was in the cache already)."""

    batch_id: str | None
    requests: int = 0
    resumed: bool = False
    llm: str = ""
    usage: dict[str, int] = field(default_factory=dict)
    failed: int = 0

    def cost(self, prices: Mapping[str, Price] | None = None) -> float:
        """The generation tokens' dollars at the batch price (NaN without a price)."""
        price = price_for(self.llm, prices)
        if price is None:
            return math.nan
        live = self.usage.get("prompt_tokens", 0) * price.input
        live += self.usage.get("completion_tokens", 0) * price.output
        return BATCH_DISCOUNT * live / 1e6

    def describe(self, prices: Mapping[str, Price] | None = None) -> str:
        if self.batch_id is None:
            return "every answer's questions are in the cache: no batch needed"
        how = "resumed" if self.resumed else "submitted"
        dollars = self.cost(prices)
        cost = (
            f"; generation {money(dollars)} at the batch price (half of live: "
            f"{money(dollars / BATCH_DISCOUNT)})"
            if math.isfinite(dollars)
            else f"; no price for {self.llm}"
        )
        failed = f", {self.failed:,} failed (scored live)" if self.failed else ""
        return f"{self.batch_id} {how}: {self.requests:,} requests{failed}{cost}"

    def to_settings(self) -> dict[str, Any]:
        """What the run store keeps of it (the run's ``settings["batch_api"]``)."""
        return asdict(self)


def sidecar_path(out: str | Path) -> Path:
    """Where the batch's id is kept for ``out``: ``OUTPUT.batch.json``."""
    out = Path(out)
    return out.with_name(out.name + ".batch.json")


def batch_cost(estimated: Any, prices: Mapping[str, Price] | None = None) -> float:
    """An :class:`~relevancy.scoring.estimate.Estimate`'s dollars with generation at the batch
    price (embeddings live)."""
    whole, gen = estimated.cost(prices), price_for(estimated.llm, prices)
    if not math.isfinite(whole) or gen is None:
        return math.nan
    t = estimated.tokens
    generation = (t["prompt_tokens"] * gen.input + t["completion_tokens"] * gen.output) / 1e6
    return whole - (1 - BATCH_DISCOUNT) * generation


def _todo(metric: Any, path: Path, source_format: str, chunk_rows: int) -> dict[str, str]:
    """Cache key → answer, for the answers whose generations are not cached yet."""
    todo: dict[str, str] = {}
    for chunk in iter_table(path, chunk_rows=chunk_rows, source_format=source_format):
        for response in chunk["response"].tolist():
            if not isinstance(response, str) or not response.strip():
                continue
            key = metric.generation_key(response)
            if key not in todo and metric.cache.get_generations(key) is None:
                todo[key] = response
    return todo


def run_batch(
    metric: Any,
    path: str | Path,
    out: str | Path,
    *,
    source_format: str = "auto",
    chunk_rows: int = 2000,
    progress: Callable[[int, int], None] | None = None,
    poll: float = 1.0,
) -> BatchRun:
    """Generate the file's uncached answers' questions with one batch (or resume the batch
    ``OUTPUT.batch.json`` names) and put them in the metric's cache.

    Raises :class:`InputError` without a cache or with ``prompt_language="question"``,
    :class:`relevancy.ConfigError` for a generator that is not OpenAI-compatible and
    :class:`relevancy.GenerationError` when the batch fails, expires or is cancelled.
    """
    if metric.cache is None:
        raise InputError("--batch-api keeps the batch's questions in the cache: drop --no-cache")
    if metric.prompt_language != "answer":
        raise InputError("--batch-api works with --prompt-language answer only")
    job = GenerationBatch(metric.llm)
    sidecar = sidecar_path(out)
    fingerprint = cache_key(metric.llm.fingerprint(), "batch", metric.strictness)
    saved = json.loads(sidecar.read_text(encoding="utf-8")) if sidecar.exists() else {}
    if saved.get("fingerprint") != fingerprint:
        saved = {}
    todo = _todo(metric, Path(path), source_format, chunk_rows)
    run = BatchRun(None, llm=str(metric.llm.name))
    if saved.get("status") == "submitted":  # interrupted: wait for the same batch
        run.batch_id, run.requests, run.resumed = saved["batch_id"], saved["requests"], True
    elif not todo:
        return run

    async def go() -> dict[str, Any]:
        try:
            if run.batch_id is None:
                lines = [job.request_line(k, r, metric.strictness) for k, r in todo.items()]
                info = await job.submit(lines)
                run.batch_id, run.requests = info["batch_id"], info["requests"]
                saved.update(info, fingerprint=fingerprint, status="submitted")
                sidecar.write_text(json.dumps(saved, indent=1), encoding="utf-8")
            batch = await job.wait(run.batch_id, progress=progress, poll=poll)
            return await job.results(batch, metric.strictness)
        finally:
            await metric.llm.aclose()

    sets = run_sync(go())
    usage = {"prompt_tokens": 0, "completion_tokens": 0}
    for key, found in sets.items():
        for name in usage:
            usage[name] += int(found.usage.get(name, 0))
        if found.cacheable:
            metric.cache.put_generations(key, found)
        else:
            run.failed += 1
    run.usage = usage
    saved.update(status="completed", usage=usage, failed=run.failed)
    sidecar.write_text(json.dumps(saved, indent=1), encoding="utf-8")
    return run
