"""What a score is made of: the generated questions, their similarities and the verdicts."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields
from typing import Any

import numpy as np

from relevancy.core.schema import derived_values

__all__ = ["Generation", "GenerationSet", "QuestionScore", "RelevancyResult"]


@dataclass(frozen=True)
class Generation:
    """One question an LLM wrote back from the response.

    ``noncommittal`` is the generator's own flag, or ``None`` when it does not give one.
    ``error`` says why the generation is unusable (then ``question`` is empty).
    """

    question: str
    noncommittal: bool | None = None
    error: str | None = None

    @property
    def usable(self) -> bool:
        return self.error is None and bool(self.question.strip())


@dataclass
class GenerationSet:
    """The N generations for one response, with what it cost to get them."""

    generations: list[Generation]
    model: str
    usage: dict[str, int] = field(default_factory=dict)
    requests: int = 0
    seconds: float = 0.0
    cached: bool = False
    #: False when a failure in the set may be transient (timeouts, HTTP errors): not cached.
    cacheable: bool = True

    def to_dict(self) -> dict[str, Any]:
        return {
            "generations": [asdict(g) for g in self.generations],
            "model": self.model,
            "usage": dict(self.usage),
            "requests": self.requests,
            "seconds": self.seconds,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any], *, cached: bool = False) -> GenerationSet:
        return cls(
            generations=[Generation(**g) for g in data["generations"]],
            model=data["model"],
            usage=dict(data.get("usage", {})),
            requests=int(data.get("requests", 0)),
            seconds=float(data.get("seconds", 0.0)),
            cached=cached,
        )


@dataclass
class QuestionScore:
    """A generated question beside its cosine similarity to the user's question."""

    question: str
    similarity: float | None
    noncommittal: bool | None
    error: str | None = None


@dataclass
class RelevancyResult:
    """The score of one (user_input, response) pair and everything that explains it.

    ``value`` is the score of ``mode`` (see ``relevancy/core/modes.py``). In ``"ragas"`` mode it is
    the Answer Relevancy: the mean of ``questions[i].similarity`` over usable questions, 0 when
    the response was judged noncommittal, NaN (with ``error``) when no generation was usable.
    ``ragas_value`` is that Ragas value in every mode (the same generations), so it equals
    ``value`` in ``"ragas"`` mode. ``parts`` is plain JSON, one ``{"text", "similarity"}`` per
    sentence of the answer (its similarity to the question; in ``"focus"`` mode also
    ``"context_similarity"``, what the score averages; in ``"blend"`` mode, for a multi-part
    question, also ``"part_similarity"``, its best similarity to a part: a sentence far from the
    question and from every part is one the score counts against the answer).
    ``question_parts`` says how well each part of a multi-part question is covered by the
    answer (``{"part", "coverage"}``). ``reason`` is the one main reason a score is what it is (see
    :func:`relevancy.core.triage.triage`: ``ok``, ``partial``, ``padded``, ``off_topic``,
    ``noncommittal``, ``generator_suspect`` or ``error``) and ``flags`` every reason that applies,
    hygiene of the generated questions (``duplicate_questions``, ``non_questions``) included.
    ``languages`` says which language the question, the answer and each generated question are in,
    and which one the generator was asked for (see ``relevancy.core.language.row_languages``; empty
    for results scored before it was recorded).
    """

    user_input: str
    response: str
    value: float
    questions: list[QuestionScore] = field(default_factory=list)
    noncommittal: bool = False
    noncommittal_method: str = ""
    noncommittal_detail: str = ""
    answer_similarity: float | None = None
    error: str | None = None
    llm: str = ""
    embeddings: str = ""
    strictness: int = 0
    mode: str = "ragas"
    ragas_value: float = float("nan")
    parts: list[dict[str, Any]] = field(default_factory=list)
    question_parts: list[dict[str, Any]] = field(default_factory=list)
    reason: str = ""
    flags: list[str] = field(default_factory=list)
    #: the vectors, as float32 arrays: ``(d,)`` and ``(usable questions, d)``. Lists given are
    #: converted (a Python float list takes 8 times the memory: 48 KB a row at 384 dimensions)
    user_input_embedding: np.ndarray | None = field(default=None, compare=False)
    question_embeddings: np.ndarray | None = field(default=None, compare=False)
    timings: dict[str, float] = field(default_factory=dict)
    usage: dict[str, int] = field(default_factory=dict)
    cached: bool = False
    notes: list[str] = field(default_factory=list)
    languages: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.mode == "ragas" and math.isnan(self.ragas_value):
            self.ragas_value = self.value
        if self.user_input_embedding is not None:
            self.user_input_embedding = np.asarray(self.user_input_embedding, dtype=np.float32)
        if self.question_embeddings is not None:
            vectors = np.asarray(self.question_embeddings, dtype=np.float32)
            if vectors.size == 0:  # no usable question: (0, d)
                dim = 0 if self.user_input_embedding is None else len(self.user_input_embedding)
                vectors = vectors.reshape(0, dim)
            self.question_embeddings = vectors

    @property
    def ok(self) -> bool:
        """True when the row has a number (not NaN)."""
        return not math.isnan(self.value)

    @property
    def questions_used(self) -> int:
        """How many of the ``strictness`` generated questions the score is made of (those with
        a similarity); fewer than ``strictness`` when a generation failed or was cut off."""
        return len(self.similarities)

    @property
    def similarities(self) -> list[float]:
        return [q.similarity for q in self.questions if q.similarity is not None]

    @property
    def similarity_std(self) -> float:
        """Spread of the N similarities (population standard deviation); NaN when none."""
        sims = self.similarities
        if not sims:
            return float("nan")
        mean = sum(sims) / len(sims)
        return math.sqrt(sum((s - mean) ** 2 for s in sims) / len(sims))

    def to_dict(self, *, embeddings: bool = True) -> dict[str, Any]:
        """Plain JSON-ready data: the fields (NaN becomes ``None``) and the derived values of
        :data:`relevancy.core.schema.COLUMNS` (``similarity_std``, ``seconds``, tokens,
        languages...), which :meth:`from_dict` ignores."""
        data = asdict(self)
        data["value"] = None if math.isnan(self.value) else self.value
        data["ragas_value"] = None if math.isnan(self.ragas_value) else self.ragas_value
        data.update(derived_values(self))
        if not embeddings:
            data.pop("user_input_embedding")
            data.pop("question_embeddings")
        else:  # JSON-ready: float lists
            for name in ("user_input_embedding", "question_embeddings"):
                if data[name] is not None:
                    data[name] = np.asarray(data[name], dtype=float).tolist()
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RelevancyResult:
        known = {f.name for f in fields(cls)}
        data = {k: v for k, v in data.items() if k in known}  # derived values are dropped
        value = data.pop("value")
        value = float("nan") if value is None else float(value)
        if "ragas_value" not in data:  # written before modes existed: that was the Ragas value
            data["ragas_value"] = value if data.get("mode", "ragas") == "ragas" else None
        ragas = data.pop("ragas_value")
        data["questions"] = [QuestionScore(**q) for q in data.get("questions", [])]
        data["parts"] = [dict(p) for p in data.get("parts") or []]
        data["question_parts"] = [dict(p) for p in data.get("question_parts") or []]
        data["flags"] = list(data.get("flags") or [])
        data["languages"] = dict(data.get("languages") or {})
        return cls(value=value, ragas_value=float("nan") if ragas is None else float(ragas), **data)
