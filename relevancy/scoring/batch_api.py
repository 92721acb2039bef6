"""``relevancy score --batch-api``: a file's generations from OpenAI's Batch API, at half price.

:func:`run_batch` reads the file, writes one request per answer whose generations are not in
the cache yet (the body a live request would send; its ``custom_id`` the generations' cache
key), submits them as one batch, polls it and puts every usable answer it returns into the
cache. The run that follows is then the usual one: it reads the generations from the cache and
embeds live (embedding tokens cost a fraction of generation's and have their own, larger
limits), so the results have exactly the shape of a live run's.

The batch's id is written next to the output (``OUTPUT.batch.json``, replaced whole, never
half-written) as soon as it is created, and saved with the run in the run store. The same
command run again after an interruption finds it there and waits for that batch instead of
paying for a second one. Nothing strands a rerun: a batch that the server does not know, or
that ended ``failed``, ``expired`` or ``cancelled``, is recorded so and replaced by a new one
(a resumed batch) or its answers are scored live (a batch just submitted), each said in a note;
a sidecar cut short is read for the batch it names. Answers the batch did not give back usably
(a line missing, unreadable or failed; fewer choices than asked; an output that is not the JSON
asked for) are not cached and are generated live at the live price, counted in
:meth:`BatchRun.describe`; :func:`live_generation` says what they cost once the run is done.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from relevancy.analysis.cost import Price, money, price_for
from relevancy.backends import BatchGone, GenerationBatch, cache_key
from relevancy.core.sync import run_sync
from relevancy.errors import InputError
from relevancy.io import iter_table

__all__ = [
    "BATCH_DISCOUNT",
    "BatchRun",
    "batch_cost",
    "live_generation",
    "run_batch",
    "sidecar_path",
]

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
    failed: int = 0  #: lines that came back failed, short or unusable
    missing: int = 0  #: answers asked for that no line of the output gave
    unreadable: int = 0  #: output lines that were not JSON (a file cut short)
    unknown: int = 0  #: lines under a custom_id that no answer of the file has (ignored)
    notes: list[str] = field(default_factory=list)  #: what happened to earlier batches
    ended: str = ""  #: how the batch ended when it gave no output (failed, expired...)

    @property
    def live(self) -> int:
        """Answers whose questions the run generates live, at the live price."""
        return self.failed + self.missing

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
        how = self.ended or ("resumed" if self.resumed else "submitted")
        dollars = self.cost(prices)
        cost = (
            f"; generation {money(dollars)} at the batch price (half of live: "
            f"{money(dollars / BATCH_DISCOUNT)})"
            if math.isfinite(dollars)
            else f"; no price for {self.llm}"
        )
        parts = [f"{self.requests:,} requests"]
        for n, what in (
            (self.failed, "failed, short or unusable"),
            (0 if self.ended else self.missing, "missing from its output"),
            (self.unreadable, "output line" + "s" * (self.unreadable != 1) + " unreadable"),
            (self.unknown, "under unknown custom_ids (ignored)"),
        ):
            if n:
                parts.append(f"{n:,} {what}")
        live = f"; {self.live:,} answers generated live, at the live price" if self.live else ""
        return f"{self.batch_id} {how}: " + ", ".join(parts) + live + cost

    def to_settings(self) -> dict[str, Any]:
        """What the run store keeps of it (the run's ``settings["batch_api"]``)."""
        return asdict(self)


def sidecar_path(out: str | Path) -> Path:
    """Where the batch's id is kept for ``out``: ``OUTPUT.batch.json``."""
    out = Path(out)
    return out.with_name(out.name + ".batch.json")


def live_generation(
    usage: pd.DataFrame, llm: str, prices: Mapping[str, Price] | None = None
) -> str | None:
    """What a ``--batch-api`` run generated live (its rows whose questions were not in the
    cache), from the run's usage totals: ``"3 rows generated live: 812 tokens, $0.0004 at the
    live price"``; None when every row's questions came from the batch."""
    if usage is None or usage.empty or "cached" not in usage.columns:
        return None
    live = usage[~usage["cached"].fillna(False).astype(bool)]
    tokens = live.get("prompt_tokens", 0) + live.get("completion_tokens", 0)
    live = live[pd.to_numeric(tokens, errors="coerce").fillna(0) > 0]
    if live.empty:
        return None
    rows = int(live["rows"].sum()) if "rows" in live.columns else len(live)
    prompt, completion = int(live["prompt_tokens"].sum()), int(live["completion_tokens"].sum())
    price = price_for(llm, prices)
    dollars = (
        f"{money((prompt * price.input + completion * price.output) / 1e6)} at the live price"
        if price is not None
        else f"no price for {llm}"
    )
    return f"{rows:,} rows generated live: {prompt + completion:,} tokens, {dollars}"


def _save(sidecar: Path, saved: Mapping[str, Any]) -> None:
    """Write the sidecar whole: a new file moved over the old one, never half of it."""
    part = sidecar.with_name(sidecar.name + ".part")
    part.write_text(json.dumps(saved, indent=1), encoding="utf-8")
    os.replace(part, sidecar)


def _read_sidecar(sidecar: Path, notes: list[str]) -> dict[str, Any]:
    """What ``OUTPUT.batch.json`` says; one cut short is read for the batch it names (or an
    :class:`InputError` that says to delete it when it names none)."""
    if not sidecar.exists():
        return {}
    text = sidecar.read_text(encoding="utf-8", errors="replace")
    try:
        saved = json.loads(text)
    except ValueError:
        saved = None
    if isinstance(saved, dict):
        return saved
    found = {
        key: re.search(rf'"{key}"\s*:\s*"([^"\\]+)"', text) for key in ("batch_id", "fingerprint")
    }
    if found["batch_id"] is None:
        raise InputError(
            f"{sidecar} is cut short or not JSON and names no batch: delete it and run again "
            "(a new batch is submitted)"
        )
    batch_id = found["batch_id"].group(1)
    notes.append(f"{sidecar.name} was cut short: waiting for the batch it names, {batch_id}")
    fingerprint = found["fingerprint"].group(1) if found["fingerprint"] else None
    return {"batch_id": batch_id, "status": "submitted", "fingerprint": fingerprint}


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
    ``OUTPUT.batch.json`` names) and put the usable ones in the metric's cache.

    A resumed batch that the server does not know, or that ended without its output, is
    replaced by a new one; a new one that ends so leaves its answers to the live run (both
    said in :attr:`BatchRun.notes`). Raises :class:`InputError` without a cache, with
    ``prompt_language="question"`` or for a sidecar that names no batch,
    :class:`relevancy.ConfigError` for a generator that is not OpenAI-compatible and
    :class:`relevancy.GenerationError` (one line) when the server cannot be reached or
    refuses: the same command run again picks up the batch.
    """
    if metric.cache is None:
        raise InputError("--batch-api keeps the batch's questions in the cache: drop --no-cache")
    if metric.prompt_language != "answer":
        raise InputError("--batch-api works with --prompt-language answer only")
    job = GenerationBatch(metric.llm)
    sidecar = sidecar_path(out)
    fingerprint = cache_key(metric.llm.fingerprint(), "batch", metric.strictness)
    run = BatchRun(None, llm=str(metric.llm.name))
    saved = _read_sidecar(sidecar, run.notes)
    if saved.get("fingerprint") not in (fingerprint, None) or "batch_id" not in saved:
        if saved.get("status") == "submitted":
            run.notes.append(
                f"{sidecar.name} names batch {saved.get('batch_id')}, made with other settings "
                "(model, server or --strictness): it is left alone"
            )
        saved = {}
    todo = _todo(metric, Path(path), source_format, chunk_rows)
    if saved.get("status") == "submitted":  # interrupted: wait for the same batch
        run.batch_id, run.requests, run.resumed = saved["batch_id"], saved.get("requests", 0), True
    elif not todo:
        return run

    async def collect() -> Any:
        batch = await job.wait(str(run.batch_id), progress=progress, poll=poll)
        return await job.results(batch, metric.strictness)

    async def go() -> Any:
        try:
            if run.batch_id is not None:
                try:
                    return await collect()
                except BatchGone as gone:  # a rerun must not wait on it again
                    saved.update(status=gone.status, why=str(gone))
                    _save(sidecar, saved)
                    run.batch_id, run.requests, run.resumed = None, 0, False
                    if not todo:
                        run.notes.append(f"{gone}; every answer is in the cache now")
                        return {}
                    run.notes.append(f"{gone} ({sidecar.name} named it): a new batch is submitted")
            lines = [job.request_line(k, r, metric.strictness) for k, r in todo.items()]
            info = await job.submit(lines)
            run.batch_id, run.requests = info["batch_id"], info["requests"]
            saved.update(info, fingerprint=fingerprint, status="submitted")
            _save(sidecar, saved)
            try:
                return await collect()
            except BatchGone as gone:
                saved.update(status=gone.status, why=str(gone))
                _save(sidecar, saved)
                run.ended = gone.status
                run.notes.append(f"{gone}: its {len(todo):,} answers are generated live")
                return {}
        finally:
            await metric.llm.aclose()

    sets = run_sync(go())
    run.unreadable = getattr(sets, "unreadable", 0)
    usage = {"prompt_tokens": 0, "completion_tokens": 0}
    for key, found in sets.items():
        if key not in todo:  # cached meanwhile, or no answer of this file has it
            run.unknown += metric.cache.get_generations(key) is None
            continue
        for name in usage:
            usage[name] += int(found.usage.get(name, 0))
        if found.cacheable:
            metric.cache.put_generations(key, found)
        else:
            run.failed += 1
    run.missing = sum(key not in sets for key in todo)
    run.usage = usage
    if run.batch_id is not None and saved.get("status") == "submitted":
        saved.update(status="completed", usage=usage, failed=run.failed, missing=run.missing)
        _save(sidecar, saved)
    return run
