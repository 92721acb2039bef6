"""Synthetic runs of any size, for the large-run benchmark and the browser test of a big run.

Rows come in pairs of answer variants (``prompt-A``, ``prompt-B``) to the same question; each
result has three generated questions with 384-d unit vectors clustered by topic (as MiniLM's
are), about 8% of the rows are noncommittal (0), and a user column ``kind`` says which; a
``created_at`` column spreads the rows over a month (for the Over time page). Inputs
and results are made a batch at a time, so a 100,000-row run never sits in memory::

    store = RunStore(path)
    run_id = store.create_run("big", {"backend": "embedded"}, synthetic_inputs(100_000))
    for batch in synthetic_results(100_000):
        store.append_results(run_id, batch)
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np
import pandas as pd

from relevancy.core.result import QuestionScore, RelevancyResult

__all__ = ["DIM", "synthetic_inputs", "synthetic_results", "write_synthetic_run"]

DIM = 384


def _evasive(i: int) -> bool:
    return (i * 2654435761) % 100 < 8  # about 8% of the rows, the same in every pass


def _topics(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, max(2, n // 50), size=max(1, n // 2))


#: the rows' times: a month of logs, row after row (prompt-B, the second half, came later)
_START = pd.Timestamp("2026-11-01T00:00:00Z")
_MONTH_S = 30 * 86_400


def _texts(i: int, n_q: int, topic: int, n: int) -> dict[str, str]:
    q = i % n_q
    variant = "prompt-A" if i < n_q else "prompt-B"
    at = _START + pd.Timedelta(seconds=int(i * _MONTH_S / max(n, 1)))
    return {
        "id": f"q{q}",
        "variant": variant,
        "user_input": f"Synthetic question {q} about topic {topic}: what happens?",
        "response": f"Synthetic answer {i} ({variant}) about topic {topic}.",
        "kind": "evasive" if _evasive(i) else "ok",
        "created_at": at.strftime("%Y-%m-%dT%H:%M:%SZ"),
    }


def _label(i: int, every: int) -> float:
    """A person's label for one row in ``every`` (NaN for the others): not relevant (0) for
    the noncommittal rows, relevant (1) for the rest but one in ten, as a labeller errs."""
    if not every or i % every != 7 % every:
        return math.nan
    return 0.0 if _evasive(i) or (i // every) % 10 == 3 else 1.0


def synthetic_inputs(
    n: int, *, batch: int = 5000, seed: int = 0, labelled_every: int = 0
) -> Iterator[pd.DataFrame]:
    """The run's input rows, a frame of ``batch`` rows at a time; with ``labelled_every`` K, a
    ``label`` column holds a person's label for one row in K (the Agreement page's input)."""
    topic_of = _topics(n, seed)
    for start in range(0, n, batch):
        rows = range(start, min(n, start + batch))
        frame = pd.DataFrame(
            [_texts(i, len(topic_of), int(topic_of[i % len(topic_of)]), n) for i in rows]
        )
        if labelled_every:
            frame["label"] = [_label(i, labelled_every) for i in rows]
        yield frame


def synthetic_results(
    n: int, *, batch: int = 250, seed: int = 0
) -> Iterator[list[tuple[int, RelevancyResult]]]:
    """``[(row, result)]`` for the same rows as :func:`synthetic_inputs`, a batch at a time."""
    topic_of = _topics(n, seed)
    n_q = len(topic_of)
    topics = np.random.default_rng([seed, 1]).normal(size=(max(2, n // 50), DIM))
    rng = np.random.default_rng([seed, 2])
    for start in range(0, n, batch):
        out = []
        for i in range(start, min(n, start + batch)):
            q = i % n_q
            ui = topics[topic_of[q]] + 0.6 * np.random.default_rng([seed, 3, q]).normal(size=DIM)
            ui /= np.linalg.norm(ui)
            qv = ui + rng.uniform(0.3, 1.6) * rng.normal(size=(3, DIM)) / math.sqrt(DIM) * 6
            qv /= np.linalg.norm(qv, axis=1, keepdims=True)
            sims = (qv @ ui).tolist()
            texts = _texts(i, n_q, int(topic_of[q]), n)
            evasive = _evasive(i)
            result = RelevancyResult(
                user_input=texts["user_input"],
                response=texts["response"],
                value=0.0 if evasive else float(np.mean(sims)),
                questions=[
                    QuestionScore(f"Generated question {i}.{k}?", s, None)
                    for k, s in enumerate(sims)
                ],
                noncommittal=evasive,
                noncommittal_method="exemplars",
                noncommittal_detail="synthetic",
                answer_similarity=float(rng.uniform(0.1, 0.9)),
                llm="local:SmolLM2-135M-Instruct-Q4_1",
                embeddings="local:all-MiniLM-L6-v2-int8",
                strictness=3,
                user_input_embedding=ui,
                question_embeddings=qv,
                timings={"total_s": 1.0},
                usage={"prompt_tokens": 90, "completion_tokens": 40},
            )
            out.append((i, result))
        yield out


def write_synthetic_run(store: object, n: int, *, name: str = "synthetic", seed: int = 0) -> int:
    """A complete synthetic run of ``n`` rows in ``store`` (a RunStore); returns its id."""
    run_id = store.create_run(  # type: ignore[attr-defined]
        name, {"backend": "embedded", "synthetic": True}, synthetic_inputs(n, seed=seed)
    )
    for batch in synthetic_results(n, seed=seed):
        store.append_results(run_id, batch)  # type: ignore[attr-defined]
    return run_id
