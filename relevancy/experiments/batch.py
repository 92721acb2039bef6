"""``relevancy experiment --batch-api``: an experiment's answers from OpenAI's Batch API.

Before answering, :func:`batch_answers` sends each API model's answers that are not in the
cache yet as one batch (OpenAI takes one model per batch): the request a live answer would send,
its ``custom_id`` the answer's cache key. It waits for the batch and puts every answer that came
back in the answer cache, so the answering that follows finds them there and asks live only for
what the batch did not give (a failed line, a line missing). The batch machinery is scoring's
(:class:`relevancy.backends.GenerationBatch` to submit, poll and read; the sidecar of
:mod:`relevancy.scoring.batch_api`): each model's batch id is written to
``OUTPUT.answers-MODEL.batch.json`` the moment it is created, so the same command run again after
an interruption waits for that batch instead of paying for a second one. The embedded model
answers live.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from relevancy.backends import BatchGone, GenerationBatch, cache_key
from relevancy.backends.answerers import answer_from_line
from relevancy.backends.cache import Cache
from relevancy.core.sync import run_sync
from relevancy.errors import InputError
from relevancy.experiments.answering import CACHE_KIND, Plan, answer_key
from relevancy.scoring.batch_api import _read_sidecar, _save, sidecar_path

__all__ = ["AnswerBatch", "batch_answers", "answers_sidecar"]


@dataclass
class AnswerBatch:
    """What one model's batch did (``batch_id`` None: every answer was cached already)."""

    model: str
    batch_id: str | None = None
    requests: int = 0
    resumed: bool = False
    answered: int = 0  #: answers it gave back, now in the cache
    failed: int = 0  #: lines that came back failed (answered live)
    missing: int = 0  #: answers no line gave (answered live)
    unreadable: int = 0  #: output lines that were not JSON
    notes: list[str] = field(default_factory=list)

    def describe(self) -> str:
        if self.batch_id is None:
            return f"{self.model}: every answer is in the cache, no batch needed"
        how = "resumed" if self.resumed else "submitted"
        parts = [f"{self.requests:,} requests", f"{self.answered:,} answered"]
        for n, what in (
            (self.failed, "failed"),
            (self.missing, "missing"),
            (self.unreadable, "unreadable"),
        ):
            if n:
                parts.append(f"{n:,} {what}")
        live = self.failed + self.missing
        return (
            f"{self.model}: {self.batch_id} {how}, "
            + ", ".join(parts)
            + (f"; {live:,} answered live" if live else "")
        )


def answers_sidecar(out: str | Path, model: str) -> Path:
    """Where the id of ``model``'s answer batch for output ``out`` is kept."""
    out, slug = Path(out), re.sub(r"[^\w.-]+", "_", model)
    return sidecar_path(out.with_name(f"{out.name}.answers-{slug}"))


def _todo(plan: Plan, model: str, answerer: Any, cache: Cache) -> dict[str, dict[str, Any]]:
    """Cache key → the request of each answer of ``model`` not in the cache yet."""
    rows = plan.records()
    todo: dict[str, dict[str, Any]] = {}
    for template, m, q, k in plan.cells():
        if m != model:
            continue
        seed = plan.settings.seed + k
        key = answer_key(answerer, template, rows[q], seed)
        if key not in todo and cache.get_record(CACHE_KIND, key) is None:
            todo[key] = answerer.body(template.messages(rows[q]), seed)
    return todo


def batch_answers(
    plan: Plan,
    answerers: Mapping[str, Any],
    cache: Cache | None,
    out: str | Path,
    *,
    progress: Callable[[int, int], None] | None = None,
    poll: float = 1.0,
) -> list[AnswerBatch]:
    """Each API model's uncached answers from one batch (or the batch its sidecar names), put
    in ``cache``; what each batch did. :class:`InputError` without a cache."""
    if cache is None:
        raise InputError("--batch-api keeps the batch's answers in the cache: drop --no-cache")
    done = []
    for model in plan.models:
        answerer = answerers[model]
        if getattr(answerer, "embedded", False):
            continue
        done.append(_one_model(plan, model, answerer, cache, out, progress, poll))
    return done


def _one_model(
    plan: Plan,
    model: str,
    answerer: Any,
    cache: Cache,
    out: str | Path,
    progress: Callable[[int, int], None] | None,
    poll: float,
) -> AnswerBatch:
    job = GenerationBatch(answerer)
    sidecar = answers_sidecar(out, model)
    fingerprint = cache_key(answerer.fingerprint(), "answer batch")
    run = AnswerBatch(model)
    saved = _read_sidecar(sidecar, run.notes)
    if saved.get("fingerprint") not in (fingerprint, None) or "batch_id" not in saved:
        saved = {}
    todo = _todo(plan, model, answerer, cache)
    if saved.get("status") == "submitted":  # interrupted: wait for the same batch
        run.batch_id, run.requests, run.resumed = saved["batch_id"], saved.get("requests", 0), True
    elif not todo:
        return run

    async def collect() -> tuple[list[dict[str, Any]], int]:
        batch = await job.wait(str(run.batch_id), progress=progress, poll=poll)
        return await job.output_lines(batch)

    async def go() -> tuple[list[dict[str, Any]], int]:
        try:
            if run.batch_id is not None:
                try:
                    return await collect()
                except BatchGone as gone:
                    saved.update(status=gone.status, why=str(gone))
                    _save(sidecar, saved)
                    run.batch_id, run.resumed = None, False
                    if not todo:
                        return [], 0
                    run.notes.append(f"{gone} ({sidecar.name} named it): a new batch is submitted")
            lines = [
                {"custom_id": k, "method": "POST", "url": "/v1/chat/completions", "body": body}
                for k, body in todo.items()
            ]
            info = await job.submit(lines)
            run.batch_id, run.requests = info["batch_id"], info["requests"]
            saved.update(info, fingerprint=fingerprint, status="submitted")
            _save(sidecar, saved)
            try:
                return await collect()
            except BatchGone as gone:
                saved.update(status=gone.status, why=str(gone))
                _save(sidecar, saved)
                run.notes.append(f"{gone}: its {len(todo):,} answers are asked for live")
                return [], 0
        finally:
            await answerer.aclose()

    lines, run.unreadable = run_sync(go())
    seen = set()
    for line in lines:
        key = str(line.get("custom_id"))
        if key not in todo:
            continue
        seen.add(key)
        answer = answer_from_line(line, str(run.batch_id))
        if answer.error is None and answer.text.strip():
            cache.put_record(CACHE_KIND, key, answer.to_dict())
            run.answered += 1
        else:
            run.failed += 1
    run.missing = sum(key not in seen for key in todo) if lines else 0
    if run.batch_id is not None and saved.get("status") == "submitted":
        saved.update(status="completed", answered=run.answered, failed=run.failed)
        _save(sidecar, saved)
    return run
