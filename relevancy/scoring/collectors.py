"""What a run keeps as its chunks are scored (:mod:`relevancy.scoring.pipeline`).

Each collector takes every :class:`~relevancy.scoring.pipeline.ScoredChunk` and keeps only
what it needs, so memory stays flat with the number of rows:

* :class:`Tally`: each row's score, Ragas value and noncommittal verdict (a float and two
  bools), errors and reasons counted, cached rows, rows with a negative cosine;
* :class:`Labels`: the human labels and each row's question (for the agreement);
* :class:`ChanceSample`: a reservoir of rows' vectors (for the chance level);
* :class:`Usage`: tokens and seconds per model (billed repeats included);
* :class:`TokenPoints`: the first fresh rows' lengths and tokens (to learn token rates);
* :class:`Languages`: the questions' languages and the mismatches;
* :class:`Stability`: with repeats, each row's sd, the flips and the near duplicates;
* sinks: :class:`FileSink` (the output table), :class:`StoreSink` (the run store).

Collectors that need the results themselves (vectors, token points, repeats) skip chunks that
came back from Ray as tables.
"""

from __future__ import annotations

import array
import collections
import json
import random
from typing import Any

import numpy as np
import pandas as pd

from relevancy.analysis.agreement import parse_labels
from relevancy.analysis.chance import MAX_ROWS, ChanceLevel, chance_level
from relevancy.analysis.cost import group_usage
from relevancy.core.language import different
from relevancy.io import TableWriter, results_to_frame
from relevancy.runs import RunStore
from relevancy.scoring.estimate import usage_points
from relevancy.scoring.pipeline import ScoredChunk

__all__ = [
    "Tally",
    "Labels",
    "ChanceSample",
    "Usage",
    "TokenPoints",
    "Languages",
    "Stability",
    "FileSink",
    "StoreSink",
]


class Tally:
    """Per row: the score, the Ragas value and the noncommittal verdict; errors, reasons, cached
    rows, rows scored from fewer questions than asked (``incomplete``) and rows with a
    generated question at a negative cosine, counted."""

    def __init__(self) -> None:
        # packed (8 bytes a score, 1 a flag): a million rows' Python floats in lists took 72 MB
        self.values = array.array("d")
        self.ragas = array.array("d")
        self.noncommittal = array.array("b")
        self.errors: collections.Counter[str] = collections.Counter()
        self.reasons: collections.Counter[str] = collections.Counter()
        self.cached = 0
        self.negative = 0
        self.incomplete = 0

    def add(self, chunk: ScoredChunk) -> None:
        frame = chunk.frame
        for packed, column in ((self.values, "score"), (self.ragas, "ragas_value")):
            values = pd.to_numeric(frame[column], errors="coerce").to_numpy(dtype=np.float64)
            packed.frombytes(values.tobytes())
        flags = frame["noncommittal"].fillna(False).astype(bool).to_numpy(dtype=np.int8)
        self.noncommittal.frombytes(flags.tobytes())
        self.errors.update(str(e) for e in frame["error"] if isinstance(e, str) and e)
        self.reasons.update(
            str(r) if isinstance(r, str) and r else "error" for r in frame["reason"]
        )
        self.cached += int(frame["cached"].fillna(False).astype(bool).sum())
        if "questions_used" in frame.columns:
            used = pd.to_numeric(frame["questions_used"], errors="coerce")
            asked = pd.to_numeric(frame["strictness"], errors="coerce")
            scored = pd.to_numeric(frame["score"], errors="coerce").notna()
            self.incomplete += int((scored & (used < asked)).sum())
        for text in frame["similarities"]:
            sims = json.loads(text) if isinstance(text, str) and text else []
            self.negative += any(s is not None and s < 0 for s in sims)


class Labels:
    """The human labels of a file with a label column, and each row's question (a hash) so
    that the agreement's intervals resample whole questions."""

    def __init__(self) -> None:
        self.labels: list[np.ndarray] = []
        self.groups: list[int] = []

    def add(self, chunk: ScoredChunk) -> None:
        inputs = chunk.inputs
        if "label" not in inputs.columns:
            return
        column = inputs.attrs.get("label_column", "label")
        start = chunk.rows[0] if chunk.rows else 0
        self.labels.append(parse_labels(inputs["label"].tolist(), column=column, start=start))
        self.groups += [hash(q) for q in inputs["user_input"]]

    def arrays(self) -> tuple[np.ndarray | None, np.ndarray | None]:
        if not self.labels:
            return None, None
        return np.concatenate(self.labels), np.asarray(self.groups, dtype=np.int64)


class ChanceSample:
    """A reservoir of up to :data:`relevancy.analysis.chance.MAX_ROWS` rows' vectors."""

    def __init__(self, seed: int = 0) -> None:
        self.sample: list[
            tuple[Any, ...]
        ] = []  # (question vector, generated vectors, key, embedder)
        self.picker = random.Random(seed)
        self.seen = 0

    def add(self, chunk: ScoredChunk) -> None:
        for r in chunk.results or []:
            self.seen += 1
            if r.user_input_embedding is None or r.question_embeddings is None:
                continue
            if not len(r.question_embeddings):
                continue
            item = (
                np.asarray(r.user_input_embedding, dtype=np.float32),
                np.asarray(r.question_embeddings, dtype=np.float32),
                r.user_input,
                r.embeddings,
            )
            if len(self.sample) < MAX_ROWS:
                self.sample.append(item)
            elif (k := self.picker.randrange(self.seen)) < MAX_ROWS:
                self.sample[k] = item

    def level(self) -> ChanceLevel | None:
        """The chance level of the sampled rows with the most common embedder."""
        if not self.sample:
            return None
        embedder = collections.Counter(s[3] for s in self.sample).most_common(1)[0][0]
        rows = [s for s in self.sample if s[3] == embedder]
        return chance_level(
            np.stack([s[0] for s in rows]),
            [s[1] for s in rows],
            [s[2] for s in rows],
            embedder=embedder,
        )


class Usage:
    """Tokens and seconds per (llm, embeddings, cached); repeats are billed too."""

    def __init__(self) -> None:
        self.parts: list[pd.DataFrame] = []

    def add(self, chunk: ScoredChunk) -> None:
        self.parts.append(group_usage(chunk.frame))
        for runs in chunk.repeats:
            self.parts.append(group_usage(results_to_frame(runs, chunk.inputs)))

    def totals(self) -> pd.DataFrame:
        return group_usage(pd.concat(self.parts)) if self.parts else pd.DataFrame()


class TokenPoints:
    """Length and tokens of the first ``keep`` fresh rows (to learn these models' token rates)."""

    def __init__(self, keep: int = 2000) -> None:
        self.keep = keep
        self.points: list[tuple[int, ...]] = []

    def add(self, chunk: ScoredChunk) -> None:
        if chunk.results is not None and len(self.points) < self.keep:
            self.points += usage_points(chunk.results)[: self.keep - len(self.points)]


class Languages:
    """Rows by the detected language of their question; rows flagged ``language_mismatch``;
    answers (with confidence) in another language than their question."""

    def __init__(self) -> None:
        self.questions: collections.Counter[str] = collections.Counter()
        self.mismatch = 0
        self.answer_other = 0

    def add(self, chunk: ScoredChunk) -> None:
        frame = chunk.frame
        if "question_language" not in frame.columns:
            return
        seen = frame["question_language"].fillna("").astype(str)
        detected = frame[seen != ""]
        self.questions.update(x for x in seen if x)
        self.mismatch += int(detected["flags"].astype(str).str.contains("language_mismatch").sum())
        self.answer_other += sum(
            different(str(q), str(a)) for q, a in zip(detected["user_input"], detected["response"])
        )


class Stability:
    """With repeats: each row's sd, noncommittal flips, rows with near-duplicate questions,
    and how many repeats were scored afresh (not from the cache)."""

    def __init__(self) -> None:
        self.seeds: list[int] = []
        self.sds: list[float] = []
        self.flips = 0
        self.near = 0
        self.fresh_repeats = 0

    def add(self, chunk: ScoredChunk) -> None:
        if not chunk.stability:
            return
        self.seeds = chunk.seeds
        self.sds += [s.sd for s in chunk.stability]
        self.flips += sum(s.flips for s in chunk.stability)
        self.near += sum(s.duplicate_repeats > 0 for s in chunk.stability)
        self.fresh_repeats += sum(not r.cached for runs in chunk.repeats for r in runs)


class FileSink:
    """Each chunk's table appended to an output file (:class:`relevancy.io.TableWriter`)."""

    def __init__(self, writer: TableWriter) -> None:
        self.writer = writer

    def add(self, chunk: ScoredChunk) -> None:
        self.writer.write(chunk.frame)


class StoreSink:
    """Each chunk's results (and repeats) saved in a run of the store. The dashboard saves
    each row as it finishes instead (``on_result``), so a Cancel keeps it: then this sink only
    adds the repeats."""

    def __init__(self, store: RunStore, run_id: int, *, results: bool = True) -> None:
        self.store, self.run_id, self.results = store, run_id, results

    def on_result(self, row: int, result: Any) -> None:
        self.store.append_results(self.run_id, [(row, result)])

    def add(self, chunk: ScoredChunk) -> None:
        if chunk.results is None:
            return
        if self.results:
            self.store.append_results(self.run_id, zip(chunk.rows, chunk.results))
        if chunk.repeats:
            by_seed = [chunk.results, *chunk.repeats]
            self.store.append_repeats(
                self.run_id,
                (
                    (row, seed, runs[i])
                    for seed, runs in zip(chunk.seeds, by_seed)
                    for i, row in enumerate(chunk.rows)
                ),
            )
