"""``AnswerRelevancy``: the metric object that ties generator, embedder, cache and formula.

The formula itself is in ``relevancy/core/formula.py``; this module gathers its inputs, decides
noncommittal, and records everything that explains the number.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from relevancy.backends import (
    CachedGenerator,
    Embedder,
    EmbeddingService,
    QuestionGenerator,
    check_backend,
    make_embedder,
    make_generator,
)
from relevancy.backends.cache import Cache
from relevancy.core.formula import cosine_similarities, relevancy_score
from relevancy.core.language import detect, row_languages
from relevancy.core.language import load as load_languages
from relevancy.core.language import ready as languages_ready
from relevancy.core.modes import (
    blend_breakdown,
    check_mode,
    focus_breakdown,
    off_question,
    resolve_mode,
)
from relevancy.core.noncommittal import (
    DEFAULT_EXEMPLAR_THRESHOLD,
    DETECTORS,
    EVASIVE_EXEMPLARS,
    exemplar_verdict,
    llm_verdict,
    without_question_words,
)
from relevancy.core.redact import redact
from relevancy.core.result import Generation, QuestionScore, RelevancyResult
from relevancy.core.sync import run_sync
from relevancy.core.text import split_clauses, split_question_parts, split_sentences
from relevancy.core.triage import DEFAULT_THRESHOLD, triage
from relevancy.errors import InputError, RelevancyError
from relevancy.io import COLUMN_ALIASES, check_text, cut_note, normalize_columns
from relevancy.scoring._concurrency import (  # noqa: F401  (imported from here elsewhere)
    API_CONCURRENCY,
    EMBEDDED_CONCURRENCY,
    default_concurrency,
    rate_status,
    rate_summary,
)

__all__ = ["AnswerRelevancy", "ProgressCallback", "PROMPT_LANGUAGES"]

#: what ``prompt_language`` may be, and what each means
PROMPT_LANGUAGES = {
    "answer": "the prompt as it is: questions in the response's language",
    "question": "questions asked in the language of the user's question",
}

#: ``progress(done, total)`` after each row.
ProgressCallback = Callable[[int, int], None]
#: ``on_result(index, result)`` as soon as a row is scored (for checkpoints and live views).
ResultCallback = Callable[[int, RelevancyResult], None]


class AnswerRelevancy:
    """Answer Relevancy of a response to a user's question (the Ragas definition).

    An LLM reads the response and writes ``strictness`` questions it answers; the score is the
    mean cosine similarity of those questions to ``user_input``, 0 when the response is judged
    noncommittal, NaN (with the reason in ``result.error``) when no generation is usable::

        score = (1/N) * sum_i cos(E(q_i), E(user_input))

    Parameters
    ----------
    llm : QuestionGenerator, optional
        Default: the embedded SmolLM2-135M generator (offline, no key).
    embeddings : Embedder, optional
        Default: the embedded all-MiniLM-L6-v2 int8 embedder.
    strictness : int, default 3
        N, the number of questions generated per response (1 to 10).
    noncommittal : {"auto", "llm", "exemplars", "off"}, default "auto"
        How the noncommittal verdict is decided; see ``relevancy/core/noncommittal.py``.
    noncommittal_threshold : float, optional
        Similarity to an evasive exemplar at which the ``"exemplars"`` detector fires (the
        response, or the response without the question's words, whichever is closer). Default:
        the embedder's own ``exemplar_threshold`` when it has one (multilingual-e5), else 0.35
        (MiniLM's, chosen and measured in bench/RESULTS.md, "Noncommittal detection").
    mode : {"auto", "ragas", "focus", "blend"}, default "auto"
        What ``result.value`` is: ``"ragas"`` the Ragas value exactly; ``"focus"`` a
        sentence-level view that prefers short, one-note answers; ``"blend"`` half the Ragas
        value, half the answer's own similarity to the question less its sentences that answer
        nothing asked (see ``relevancy/core/modes.py`` for where each was measured to help and to
        hurt); ``"auto"``: ``"ragas"`` for every backend. ``result.ragas_value`` holds the
        Ragas value in every mode.
    cache : Cache, bool or path, default True
        ``True``: the user cache folder; ``False``/``None``: no cache; a path or a ``Cache``.
    concurrency : int, optional
        Rows scored at once in batch mode. Default: 4 for the embedded generator (it runs one
        row at a time anyway); for an API generator, its rate controller's most requests at
        once (64, or ``concurrency`` given to :func:`relevancy.build_metric`): the requests
        actually sent at once adapt to the server's rate limit, and 429s are waited out.
    prompt_language : {"answer", "question"}, default "answer"
        The language the generator is asked to write its questions in: ``"answer"``, the
        prompt as it is (it asks for the language of the response); ``"question"``, the
        language detected in the user's question (``relevancy.core.language``), so a French
        question gets French questions whatever the answer's language. Every result records
        the languages it saw in ``result.languages``.
    min_questions : int, optional
        The fewest usable generated questions a row's verdict may rest on (1 to
        ``strictness``; default: all ``strictness`` of them). A row scored from fewer (a
        generation failed or was cut off) keeps its number, but its main reason is
        ``incomplete_generation``, not ``ok``; ``result.questions_used`` says how many were
        used, and the flag ``incomplete_generation`` is set whenever it is below
        ``strictness``.
    threshold : float, default 0.5
        The "low score" threshold each row's main reason is decided at (``result.reason``): a
        row below it is never ``ok``. The number itself does not depend on it.

    Examples
    --------
    >>> from relevancy import AnswerRelevancy
    >>> metric = AnswerRelevancy()  # doctest: +SKIP
    >>> result = metric.score(
    ...     user_input="When was the first super bowl?",
    ...     response="The first superbowl was held on Jan 15, 1967",
    ... )  # doctest: +SKIP
    >>> [(q.question, round(q.similarity, 2)) for q in result.questions]  # doctest: +SKIP
    """

    def __init__(
        self,
        *,
        llm: QuestionGenerator | None = None,
        embeddings: Embedder | None = None,
        strictness: int = 3,
        noncommittal: str = "auto",
        noncommittal_threshold: float | None = None,
        mode: str = "auto",
        cache: Cache | bool | str | None = True,
        concurrency: int | None = None,
        prompt_language: str = "answer",
        min_questions: int | None = None,
        threshold: float = DEFAULT_THRESHOLD,
    ) -> None:
        if (
            isinstance(strictness, bool)
            or not isinstance(strictness, int)
            or not (1 <= strictness <= 10)
        ):
            raise InputError(f"strictness must be an integer from 1 to 10, got {strictness!r}")
        if noncommittal not in DETECTORS:
            raise InputError(
                f"noncommittal must be one of {', '.join(DETECTORS)}; got {noncommittal!r}"
            )
        try:
            check_mode(mode)
        except ValueError as exc:
            raise InputError(str(exc)) from None
        if min_questions is not None and (
            isinstance(min_questions, bool)
            or not isinstance(min_questions, int)
            or not (1 <= min_questions <= strictness)
        ):
            raise InputError(
                f"min_questions must be an integer from 1 to strictness ({strictness}), got "
                f"{min_questions!r}"
            )
        if not isinstance(threshold, (int, float)) or not math.isfinite(threshold):
            raise InputError(f"threshold must be a finite number, got {threshold!r}")
        if concurrency is not None and (
            isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1
        ):
            raise InputError(f"concurrency must be a positive integer, got {concurrency!r}")
        llm = make_generator("local") if llm is None else llm
        embeddings = make_embedder("local") if embeddings is None else embeddings
        check_backend(llm, "llm")
        check_backend(embeddings, "embeddings")
        if noncommittal_threshold is None:
            exemplar = embeddings.exemplar_threshold
            noncommittal_threshold = DEFAULT_EXEMPLAR_THRESHOLD if exemplar is None else exemplar
        if not (-1.0 <= float(noncommittal_threshold) <= 1.0):
            raise InputError(
                f"noncommittal_threshold must be between -1 and 1, got {noncommittal_threshold!r}"
            )
        if prompt_language not in PROMPT_LANGUAGES:
            raise InputError(
                f"prompt_language must be one of {', '.join(PROMPT_LANGUAGES)}; got "
                f"{prompt_language!r}"
            )
        if prompt_language == "question" and not llm.supports_language:
            raise InputError(
                f"the generator {llm.name} cannot be asked for a language: use "
                "prompt_language='answer'"
            )
        if cache is True:
            cache = Cache()
        elif cache is False or cache is None:
            cache = None
        elif not isinstance(cache, Cache):
            cache = Cache(cache)
        self.cache: Cache | None = cache
        self.llm = llm
        self.embeddings = embeddings
        self.strictness = strictness
        self.min_questions = strictness if min_questions is None else min_questions
        self.threshold = float(threshold)
        self.noncommittal = noncommittal
        self.noncommittal_threshold = float(noncommittal_threshold)
        self.concurrency = concurrency or default_concurrency(llm)
        self.prompt_language = prompt_language
        self.mode = resolve_mode(mode, embedded=is_embedded(llm, embeddings))
        self._generator = CachedGenerator(llm, cache)
        self._embedder = EmbeddingService(embeddings, cache)

    def generation_key(self, response: str) -> str:
        """The cache key of ``response``'s generations with this metric (``--batch-api``)."""
        return self._generator.key(response, self.strictness)

    def rate_status(self) -> str | None:
        """The API backends' requests at once, and whether they wait for the rate limit."""
        return rate_status(self.llm, self.embeddings)

    def rate_summary(self) -> str | None:
        """What the rate limit cost so far: 429s, seconds waited, requests failed (or None)."""
        return rate_summary(self.llm, self.embeddings)

    # one row -----------------------------------------------------------------------------
    def score(self, *, user_input: str, response: str) -> RelevancyResult:
        """Score one pair (blocking). Bad input raises :class:`InputError`."""
        return run_sync(self._then_close(self.ascore(user_input=user_input, response=response)))

    async def ascore(self, *, user_input: str, response: str) -> RelevancyResult:
        """Score one pair. Bad input raises; a backend failure gives a NaN result with ``error``."""
        check_text("user_input", user_input)
        check_text("response", response)
        return await self._score_row(user_input, response)

    def _detector(self, flags: list[bool | None]) -> str:
        if self.noncommittal != "auto":
            return self.noncommittal
        return "llm" if flags and all(f is not None for f in flags) else "exemplars"

    async def _score_row(self, user_input: str, response: str) -> RelevancyResult:
        """One row, in named steps: generate, embed, decide noncommittal, score."""
        started = time.perf_counter()
        result = RelevancyResult(
            user_input=user_input,
            response=response,
            value=float("nan"),
            llm=self.llm.name,
            embeddings=self.embeddings.name,
            strictness=self.strictness,
            mode=self.mode,
        )
        limit = self.llm.max_response_chars
        if limit and len(response) > limit:
            result.notes.append(cut_note(len(response), limit))
        asked = None
        if self.prompt_language == "question":
            asked = (await asyncio.to_thread(detect, user_input))[0]
        try:
            generated = await self._generator.agenerate(response, self.strictness, asked)
        except Exception as exc:
            result.error = redact(f"generation failed: {exc}")
            result.reason, result.flags = "error", ["error"]
            result.timings = {"total_s": time.perf_counter() - started}
            return result
        t_gen = time.perf_counter() - started
        result.usage = dict(generated.usage)
        result.cached = generated.cached
        usable = [g for g in generated.generations if g.usable]
        detector = self._detector([g.noncommittal for g in usable])
        plan = _EmbeddingPlan.make(user_input, response, usable, detector)
        t0 = time.perf_counter()
        try:
            vectors, embedded_tokens = await self._embedder.embed_counted(plan.texts)
        except Exception as exc:
            result.error = redact(f"embedding failed: {exc}")
            result.reason, result.flags = "error", ["error"]
            result.questions = [
                QuestionScore(g.question, None, g.noncommittal, g.error)
                for g in generated.generations
            ]
            result.timings = {"generation_s": t_gen, "total_s": time.perf_counter() - started}
            return result
        t_emb = time.perf_counter() - t0
        if embedded_tokens is not None:
            result.usage["embedding_tokens"] = embedded_tokens
        v = plan.split(vectors)
        sims = cosine_similarities(v.questions, v.user_input) if usable else np.zeros(0)
        result.answer_similarity = float(cosine_similarities(v.response[None, :], v.user_input)[0])
        verdict, detail = self._verdict(detector, usable, v)
        result.noncommittal, result.noncommittal_method = verdict, detector
        result.noncommittal_detail = detail
        result.questions = _question_scores(generated.generations, sims.tolist())
        flags = (
            [bool(g.noncommittal) for g in usable] if detector == "llm" else [verdict] * len(usable)
        )
        result.ragas_value = relevancy_score(sims.tolist(), flags)
        result.value = result.ragas_value
        sent_sims = cosine_similarities(v.sentences, v.user_input) if plan.sentences else []
        result.parts = [
            {"text": t, "similarity": float(c)} for t, c in zip(plan.sentences, sent_sims)
        ]
        result.question_parts = _coverage(plan, v)
        if self.mode == "focus":
            focus = focus_breakdown(sent_sims, result.ragas_value, noncommittal=verdict)
            for part, context in zip(result.parts, focus.in_context):
                part["context_similarity"] = context
            result.value = focus.value
        elif self.mode == "blend":
            by_part = _best_part_similarities(plan, v)
            if by_part is not None:
                for part, best in zip(result.parts, by_part):
                    part["part_similarity"] = best
            off = off_question(sent_sims, by_part)
            result.value = blend_breakdown(
                result.answer_similarity, off, result.ragas_value, noncommittal=verdict
            ).value
        if math.isnan(result.value) and not math.isnan(result.ragas_value):
            result.error = f"{self.mode} mode: the response has no sentence with a word in it"
        elif math.isnan(result.value):
            reasons = sorted({q.error or "empty question" for q in result.questions})
            result.error = redact(
                f"all {len(generated.generations)} generations failed: " + "; ".join(reasons)
            )
        # float32 copies (not views that would keep the row's other vectors alive)
        result.user_input_embedding = v.user_input.astype(np.float32)
        result.question_embeddings = v.questions.astype(np.float32)
        texts = [g.question if g.usable else None for g in generated.generations]
        if not languages_ready():  # its model loads once, off the event loop
            await asyncio.to_thread(load_languages)
        # inline (0.5 ms a row): a thread hop here would stagger the rows and split the
        # embedder's batches across rows
        result.languages = row_languages(user_input, response, texts, prompted=asked)
        triaged = triage(result, self.threshold, min_questions=self.min_questions)
        result.reason, result.flags = triaged.reason, list(triaged.flags)
        result.timings = {
            "generation_s": t_gen,
            "embedding_s": t_emb,
            "total_s": time.perf_counter() - started,
        }
        return result

    def _verdict(self, detector: str, usable: list[Generation], v: _Vectors) -> tuple[bool, str]:
        """The noncommittal verdict and how it was reached."""
        if detector == "llm":
            return llm_verdict([g.noncommittal for g in usable])
        if detector == "exemplars":
            return exemplar_verdict(
                v.response, v.exemplars, self.noncommittal_threshold, stripped_vector=v.stripped
            )
        return False, "noncommittal detection is off"

    # many rows ---------------------------------------------------------------------------
    def score_many(
        self,
        data: Any,
        *,
        concurrency: int | None = None,
        progress: ProgressCallback | None = None,
        on_result: ResultCallback | None = None,
    ) -> list[RelevancyResult]:
        """Score a DataFrame or a list of records; see :meth:`ascore_many`."""
        return run_sync(
            self._then_close(
                self.ascore_many(
                    data, concurrency=concurrency, progress=progress, on_result=on_result
                )
            )
        )

    async def _then_close(self, coro: Any) -> Any:
        try:
            return await coro
        finally:
            await self.aclose()

    async def aclose(self) -> None:
        """Close the backends' network connections opened in the running event loop.

        The blocking methods do this for you; call it when you are done with the async ones.
        """
        await self.llm.aclose()
        await self.embeddings.aclose()

    async def ascore_many(
        self,
        data: Any,
        *,
        concurrency: int | None = None,
        progress: ProgressCallback | None = None,
        on_result: ResultCallback | None = None,
    ) -> list[RelevancyResult]:
        """Score many pairs with bounded concurrency; results come back in input order.

        ``data`` is a pandas DataFrame (columns ``user_input`` and ``response``, or an alias
        such as ``question``/``answer``), a list of mappings, or a list of ``(user_input,
        response)`` tuples. A row that fails, or has empty text, never aborts the batch: its
        result is NaN and carries the reason in ``error``.
        """
        pairs = _pairs(data)
        limit = asyncio.Semaphore(concurrency or self.concurrency)
        total = len(pairs)
        done = 0
        results: list[RelevancyResult | None] = [None] * total

        async def run(i: int, user_input: Any, response: Any) -> None:
            nonlocal done
            async with limit:
                try:
                    check_text("user_input", user_input)
                    check_text("response", response)
                    result = await self._score_row(user_input, response)
                except RelevancyError as exc:
                    result = _failed(user_input, response, str(exc), self)
                except Exception as exc:  # a bug or an unexpected backend error: keep the batch
                    result = _failed(
                        user_input, response, redact(f"{type(exc).__name__}: {exc}"), self
                    )
            results[i] = result
            done += 1
            if on_result is not None:
                on_result(i, result)
            if progress is not None:
                progress(done, total)

        await asyncio.gather(*(run(i, u, r) for i, (u, r) in enumerate(pairs)))
        return [r for r in results if r is not None]


def is_embedded(llm: Any, embeddings: Any) -> bool:
    """True when both backends are embedded offline models (their ``embedded`` attribute)."""
    return bool(llm.embedded and embeddings.embedded)


def _question_scores(generations: list[Generation], sims: list[float]) -> list[QuestionScore]:
    """One entry per generation: usable ones with their similarity, the others with why not."""
    it = iter(sims)
    out = []
    for g in generations:
        if g.usable:
            out.append(QuestionScore(g.question, next(it), g.noncommittal))
        else:
            out.append(QuestionScore(g.question, None, g.noncommittal, g.error or "empty question"))
    return out


class _Vectors:
    """The embeddings of one row, by role."""

    def __init__(self, **parts: np.ndarray | None) -> None:
        self.user_input = parts["user_input"]
        self.response = parts["response"]
        self.questions = parts["questions"]
        self.exemplars = parts["exemplars"]
        self.stripped = parts["stripped"]
        self.sentences = parts["sentences"]
        self.clauses = parts["clauses"]
        self.question_parts = parts["question_parts"]


class _EmbeddingPlan:
    """Every text one row needs embedded, in one call: question, answer, generated questions,
    (for the exemplar detector) the evasive exemplars and the answer without the question's
    words, the answer's sentences (the sentence view, and what a focus score is made of), and
    for a multi-part question its parts and the answer's clauses (how well each part is
    covered)."""

    def __init__(
        self, texts: list[str], counts: dict[str, int], groups: dict[str, list[str]]
    ) -> None:
        self.texts, self.counts = texts, counts
        self.sentences, self.parts = groups["sentences"], groups["question_parts"]

    @classmethod
    def make(
        cls, user_input: str, response: str, usable: list[Generation], detector: str
    ) -> _EmbeddingPlan:
        sentences = split_sentences(response)
        parts = split_question_parts(user_input)
        parts = parts if len(parts) >= 2 else []
        groups: dict[str, list[str]] = {
            "user_input": [user_input],
            "response": [response],
            "questions": [g.question for g in usable],
            "exemplars": [],
            "stripped": [],
            "sentences": sentences,
            "clauses": [c for s in sentences for c in split_clauses(s) if c != s] if parts else [],
            "question_parts": parts,
        }
        if detector == "exemplars":
            groups["exemplars"] = list(EVASIVE_EXEMPLARS)
            stripped = without_question_words(user_input, response)
            if stripped and stripped != response:
                groups["stripped"] = [stripped]
        texts = [t for group in groups.values() for t in group]
        return cls(texts, {k: len(v) for k, v in groups.items()}, groups)

    def split(self, vectors: np.ndarray) -> _Vectors:
        parts: dict[str, np.ndarray | None] = {}
        start = 0
        for name, n in self.counts.items():
            parts[name] = vectors[start : start + n]
            start += n
        parts["user_input"] = parts["user_input"][0]  # type: ignore[index]
        parts["response"] = parts["response"][0]  # type: ignore[index]
        parts["stripped"] = parts["stripped"][0] if self.counts["stripped"] else None  # type: ignore[index]
        return _Vectors(**parts)


def _coverage(plan: _EmbeddingPlan, v: _Vectors) -> list[dict[str, Any]]:
    """How well each part of a multi-part question is covered: its best cosine with any
    sentence or clause of the answer."""
    if not plan.parts or v.sentences is None or not len(v.sentences):
        return []
    pieces = np.vstack([v.sentences, v.clauses]) if len(v.clauses) else v.sentences
    return [
        {"part": part, "coverage": float(cosine_similarities(pieces, vec).max())}
        for part, vec in zip(plan.parts, v.question_parts)
    ]


def _best_part_similarities(plan: _EmbeddingPlan, v: _Vectors) -> list[float] | None:
    """Each sentence's best cosine with a part of a multi-part question (None: one part)."""
    if not plan.parts or v.sentences is None or not len(v.sentences):
        return None
    sims = np.stack([cosine_similarities(v.sentences, vec) for vec in v.question_parts])
    return [float(x) for x in sims.max(axis=0)]


def _failed(user_input: Any, response: Any, error: str, metric: AnswerRelevancy) -> RelevancyResult:
    return RelevancyResult(
        user_input="" if user_input is None else str(user_input),
        response="" if response is None else str(response),
        value=float("nan"),
        error=error,
        llm=metric.llm.name,
        embeddings=metric.embeddings.name,
        strictness=metric.strictness,
        mode=metric.mode,
    )


def _pairs(data: Any) -> list[tuple[Any, Any]]:
    if isinstance(data, pd.DataFrame):
        frame = normalize_columns(data)
        return [
            (None if _isna(u) else u, None if _isna(r) else r)
            for u, r in zip(frame["user_input"], frame["response"])
        ]
    if isinstance(data, Mapping) or not isinstance(data, Iterable) or isinstance(data, str):
        raise InputError(
            f"data must be a DataFrame or a list of records, got {type(data).__name__}"
        )
    pairs = []
    for i, item in enumerate(data):
        if isinstance(item, Mapping):
            u = next((item[k] for k in COLUMN_ALIASES["user_input"] if k in item), None)
            r = next((item[k] for k in COLUMN_ALIASES["response"] if k in item), None)
            pairs.append((u, r))
        elif isinstance(item, Sequence) and not isinstance(item, str) and len(item) == 2:
            pairs.append((item[0], item[1]))
        else:
            raise InputError(
                f"row {i} must be a mapping with user_input/response or a (user_input, response) "
                f"pair, got {item!r:.80}"
            )
    return pairs


def _isna(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))
