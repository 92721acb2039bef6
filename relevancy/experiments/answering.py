"""Answering an experiment: every template x model x question (x repeat), once, cached.

Each answer is stored in the persistent cache (:class:`~relevancy.backends.cache.Cache`, kind
``experiment_answer``) the moment it arrives, under a key made of the model's fingerprint
(backend, server, model, temperature, token cap), the template's text, the seed and the values
of the question's columns that the template names. A run killed half-way (even by SIGKILL)
finds what it had answered there and sends only the rest; a rerun with one template changed
answers only that template. A failed answer (an unknown model, a refusal by the server) or an
empty one is a row with its error, never stored, so it is tried again next time.
"""

from __future__ import annotations

import asyncio
import hashlib
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from relevancy.analysis.cost import Price, price_for
from relevancy.backends.answerers import LOCAL_MODEL, Answer, LocalAnswerer, OpenAIAnswerer
from relevancy.backends.cache import Cache, cache_key
from relevancy.experiments.templates import VARIANT_JOIN, Template
from relevancy.scoring.batch_api import BATCH_DISCOUNT

__all__ = [
    "variant_name",
    "AnswerSettings",
    "Plan",
    "Estimate",
    "make_answerer",
    "answer_key",
    "estimate",
    "answer_all",
    "CACHE_KIND",
    "ANSWER_COLUMNS",
    "EMPTY_ANSWER",
    "is_refusal",
]

CACHE_KIND = "experiment_answer"
#: the columns an experiment adds to each row, besides the question set's
ANSWER_COLUMNS = (
    "variant",
    "template",
    "model",
    "repeat",
    "prompt",
    "template_text",
    "answer_error",
    "answer_prompt_tokens",
    "answer_completion_tokens",
    "answer_seconds",
    "answer_cost",
    "answer_finish_reason",
    "answer_cached",
)
#: answers in flight at once per model (the rate controller sends fewer when the limit says so)
IN_FLIGHT = 64
#: an empty answer's flag: kept as a row, not cached (a rerun asks again), scored as the metric
#: scores an empty response (no score, with its reason)
EMPTY_ANSWER = (
    "the model answered with nothing (not cached: a rerun asks again; an empty response has "
    "no score)"
)
#: how a declining answer opens (apostrophes made straight, case folded): a refusal when the
#: answer starts with one, however the sentence goes on; "sorry" later in an answer is not one
_CANNOT = (
    r"(?:can't|cannot|can not|won't|will not|am unable to|'m unable to|am not able to"
    r"|'m not able to|am not going to|'m not going to|do not|don't)"
)
_REFUSAL = re.compile(
    r"^(?:"
    r"(?:i'm|i am|we're|we are)(?: (?:really|very|so|truly))? sorry\b"
    r"|(?:i )?apologi[sz]e\b|my apologies\b"
    r"|sorry(?: ?[,.!:;-]| but\b| i\b| we\b)"
    rf"|(?:i|we) {_CANNOT} (?:help(?! but\b)|assist|provide|answer|comply|do that|support|respond"
    r"|fulfil|share|give|discuss|engage|create|write)"
    r"|(?:i|we) (?:must|have to|need to|will have to) decline"
    r"|(?:i'm|i am) (?:unable|not able) to\b"
    r"|i (?:don't|do not) know,? (?:and |so |but )?i (?:can't|cannot)\b"
    rf"|unfortunately,? (?:i|we) {_CANNOT}"
    r"|as an ai\b.{0,80}\b(?:can't|cannot|unable|not able)\b"
    r")"
)
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'", "\u00b4": "'"})


def is_refusal(text: str) -> bool:
    """Whether an answer opens by declining (``I'm sorry, but I can't help with that.``, ``I
    can't assist with that request.``, ``Sorry, I cannot help...``); curly apostrophes count as
    straight ones. Only the opening counts: an answer that is sorry later is an answer."""
    opening = " ".join(text.translate(_APOSTROPHES).strip().lower().split())[:200]
    return bool(_REFUSAL.match(opening))


@dataclass(frozen=True)
class AnswerSettings:
    """What every answer model is sent: temperature, token cap, seed (repeat ``k`` uses
    ``seed + k``), and how many samples per question (``repeats``)."""

    temperature: float = 0.0
    max_tokens: int = 300
    seed: int = 0
    repeats: int = 1


@dataclass
class Plan:
    """The cross product to answer: ``templates`` x ``models`` x ``questions`` x repeats."""

    templates: Sequence[Template]
    models: Sequence[str]
    questions: pd.DataFrame
    settings: AnswerSettings = field(default_factory=AnswerSettings)
    #: variants left out (a saved run has them already: :mod:`relevancy.experiments.extend`)
    skip: frozenset[str] = frozenset()
    #: rows of a saved run asked again, after the rest (their answer failed): each its
    #: question's columns with ``template``, ``model`` and ``repeat``; index: the run's rows
    retry: pd.DataFrame | None = None

    @property
    def variants(self) -> list[str]:
        return [variant_name(t.name, m) for t in self.templates for m in self.models]

    @property
    def retried(self) -> int:
        """The rows asked again."""
        return 0 if self.retry is None else len(self.retry)

    @property
    def size(self) -> int:
        """The answers the plan needs."""
        todo = [v for v in self.variants if v not in self.skip]
        return len(todo) * len(self.questions) * self.settings.repeats + self.retried

    def records(self) -> list[dict[str, Any]]:
        """The values of each question a cell names: the question set's, then the retried
        rows' questions."""
        rows = self.questions.to_dict("records")
        if self.retry is not None:
            own = [c for c in ("response", *ANSWER_COLUMNS) if c in self.retry.columns]
            rows += self.retry.drop(columns=own).to_dict("records")
        return rows

    def cells(self) -> list[tuple[Template, str, int, int]]:
        """``(template, model, question row, repeat)`` for every answer, template by template,
        then the retried rows (their question row counted after the question set's)."""
        out = [
            (t, m, q, k)
            for t in self.templates
            for m in self.models
            if variant_name(t.name, m) not in self.skip
            for q in range(len(self.questions))
            for k in range(self.settings.repeats)
        ]
        if self.retry is not None:
            named = {t.name: t for t in self.templates}
            repeats = pd.to_numeric(
                self.retry["repeat"] if "repeat" in self.retry else pd.Series(0, self.retry.index),
                errors="coerce",
            )
            for i, (template, model) in enumerate(zip(self.retry["template"], self.retry["model"])):
                k = repeats.iloc[i]
                out.append(
                    (
                        named[str(template)],
                        str(model),
                        len(self.questions) + i,
                        int(k if k == k else 0),
                    )
                )
        return out


def variant_name(template: str, model: str) -> str:
    return f"{template}{VARIANT_JOIN}{model}"


def make_answerer(
    model: str,
    settings: AnswerSettings,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    timeout: float = 60.0,
    concurrency: int | None = None,
) -> Any:
    """The answerer ``model`` names: ``local`` for the embedded one, else a chat model at
    ``base_url`` (an OpenAI-compatible endpoint)."""
    if model == LOCAL_MODEL:
        return LocalAnswerer(temperature=settings.temperature, max_tokens=settings.max_tokens)
    return OpenAIAnswerer(
        model,
        base_url=base_url,
        api_key=api_key,
        temperature=settings.temperature,
        max_tokens=settings.max_tokens,
        timeout=timeout,
        concurrency=concurrency,
    )


def answer_key(answerer: Any, template: Template, values: Mapping[str, Any], seed: int) -> str:
    """The cache key of one answer (see the module docstring)."""
    used = {f: _plain(values.get(f)) for f in template.fields()}
    return cache_key(answerer.fingerprint(), CACHE_KIND, template.text, used, seed)


def _plain(value: Any) -> Any:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return value if isinstance(value, (str, int, float, bool)) else str(value)


@dataclass
class Estimate:
    """What an experiment will cost before it runs."""

    answers: int  #: answers in the plan
    cached: int  #: of them, in the cache already
    prompt_tokens: int  #: of the answers to send, about (4 characters a token)
    completion_tokens: int  #: at most (the token cap each)
    dollars: float | None  #: at list prices; None when a model's price is unknown

    @property
    def requests(self) -> int:
        return self.answers - self.cached


def estimate(
    plan: Plan,
    answerers: Mapping[str, Any],
    cache: Cache | None,
    prices: Mapping[str, Price] | None = None,
) -> Estimate:
    """Answers to send, tokens and cost (the token cap taken as each answer's length)."""
    keys, prompt = [], 0
    rows = plan.records()
    for template, model, q, k in plan.cells():
        keys.append(answer_key(answerers[model], template, rows[q], plan.settings.seed + k))
    found = cache_records(cache, keys)
    dollars: float | None = 0.0
    for (template, model, q, _k), key in zip(plan.cells(), keys):
        if key in found:
            continue
        chars = sum(len(m["content"]) for m in template.messages(rows[q]))
        prompt += chars // 4 + 1
        price = _price(model, prices)
        if price is None:
            dollars = None
        elif dollars is not None:
            dollars += (chars / 4 * price.input + plan.settings.max_tokens * price.output) / 1e6
    todo = len(keys) - len(found)
    return Estimate(len(keys), len(found), prompt, todo * plan.settings.max_tokens, dollars)


def _price(model: str, prices: Mapping[str, Price] | None) -> Price | None:
    return price_for("local:" if model == LOCAL_MODEL else f"openai:{model}", prices)


def cache_records(cache: Cache | None, keys: Sequence[str]) -> set[str]:
    """Which of ``keys`` have an answer stored."""
    if cache is None:
        return set()
    return {k for k in dict.fromkeys(keys) if cache.get_record(CACHE_KIND, k) is not None}


def _flag(answer: Answer) -> str | None:
    """Why an answer that came back is suspect (kept and scored all the same), else None."""
    if answer.error:
        return answer.error
    if answer.refusal:
        return f"refused: {answer.refusal[:200]}"
    if not answer.text.strip():
        return EMPTY_ANSWER
    if answer.finish_reason == "content_filter":
        return "cut by the server's content filter"
    if is_refusal(answer.text):
        return "refused (the answer declines)"
    return None


async def answer_all(
    plan: Plan,
    answerers: Mapping[str, Any],
    cache: Cache | None,
    *,
    progress: Callable[[int], None] | None = None,
    prices: Mapping[str, Price] | None = None,
) -> pd.DataFrame:
    """Every answer of ``plan``: one row each (the question's columns, then
    :data:`ANSWER_COLUMNS`, and ``response``), in :meth:`Plan.cells` order.

    ``answerers`` maps each model name to its answerer; ``progress(n)`` is told of each answer
    as it is done (cached ones first, at once).
    """
    rows = plan.records()
    cells = plan.cells()
    keys = [answer_key(answerers[m], t, rows[q], plan.settings.seed + k) for t, m, q, k in cells]
    answers: list[Answer | None] = [None] * len(cells)
    if cache is not None:
        for i, key in enumerate(keys):
            hit = cache.get_record(CACHE_KIND, key)
            if hit is not None:
                answers[i] = Answer.from_dict({**hit, "cached": True})
        done = sum(a is not None for a in answers)
        if done and progress is not None:
            progress(done)
    gates = {
        m: asyncio.Semaphore(1 if getattr(a, "embedded", False) else IN_FLIGHT)
        for m, a in answerers.items()
    }
    sent: dict[str, asyncio.Task[Answer]] = {}  # one request per key, shared by duplicates

    async def one(i: int) -> None:
        template, model, q, k = cells[i]
        key = keys[i]
        if key not in sent:
            sent[key] = asyncio.ensure_future(
                _ask(
                    answerers[model], gates[model], template.messages(rows[q]), k, plan, key, cache
                )
            )
        answers[i] = await sent[key]
        if progress is not None:
            progress(1)

    await asyncio.gather(*(one(i) for i, a in enumerate(answers) if a is None))
    for answerer in answerers.values():
        await answerer.aclose()
    return _frame(plan, cells, rows, [a for a in answers if a is not None], prices)


async def _ask(
    answerer: Any,
    gate: asyncio.Semaphore,
    messages: list[dict[str, str]],
    repeat: int,
    plan: Plan,
    key: str,
    cache: Cache | None,
) -> Answer:
    async with gate:
        answer = await answerer.aanswer(messages, plan.settings.seed + repeat)
    if cache is not None and answer.error is None and answer.text.strip():
        await asyncio.to_thread(cache.put_record, CACHE_KIND, key, answer.to_dict())
    return answer


def prompt_text(messages: list[dict[str, str]]) -> str:
    """What was sent, as one text (the system message, a ``---`` line, the user's)."""
    return "\n---\n".join(m["content"] for m in messages)


def _frame(
    plan: Plan,
    cells: list[tuple[Template, str, int, int]],
    rows: list[dict[str, Any]],
    answers: list[Answer],
    prices: Mapping[str, Price] | None,
) -> pd.DataFrame:
    out = []
    for (template, model, q, k), answer in zip(cells, answers):
        price = _price(model, prices)
        cost = (
            (answer.prompt_tokens * price.input + answer.completion_tokens * price.output) / 1e6
            if price is not None
            else float("nan")
        )
        if answer.batch_id:  # answered by the Batch API, at its price
            cost *= BATCH_DISCOUNT
        record = dict(rows[q])
        if "id" not in record:
            record["id"] = f"q{q + 1:03d}"
        record.update(
            response=answer.text,
            variant=variant_name(template.name, model),
            template=template.name,
            model=model,
            repeat=k,
            prompt=prompt_text(template.messages(rows[q])),
            template_text=template.text,
            answer_error=_flag(answer),
            answer_prompt_tokens=answer.prompt_tokens,
            answer_completion_tokens=answer.completion_tokens,
            answer_seconds=round(answer.seconds, 4),
            answer_cost=cost,
            answer_finish_reason=answer.finish_reason,
            answer_cached=answer.cached,
        )
        out.append(record)
    return pd.DataFrame(out)


def digest(text: str) -> str:
    """A short digest of a template's text (what a run's settings name it by)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]
