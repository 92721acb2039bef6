"""Deciding whether a response is noncommittal (evasive, vague).

Two detectors, chosen with ``AnswerRelevancy(noncommittal=...)``:

``"llm"``
    The generator's own flags, as Ragas does: noncommittal when *all* N generations are flagged.
``"exemplars"``
    The response's embedding is compared with a fixed set of evasive answers; noncommittal when
    the closest one is at least ``threshold`` similar. Used by the embedded default because the
    135M model's own flag is noise (about 40% accurate when measured).
``"auto"`` (default)
    ``"llm"`` when the generator gives flags (API models), else ``"exemplars"``.
``"off"``
    Never zero a score.
"""

from __future__ import annotations

import numpy as np

from relevancy._formula import cosine_similarities

__all__ = ["EVASIVE_EXEMPLARS", "DETECTORS", "exemplar_verdict", "llm_verdict"]

DETECTORS = ("auto", "llm", "exemplars", "off")

EVASIVE_EXEMPLARS: tuple[str, ...] = (
    "I don't know.",
    "I'm not sure.",
    "I have no idea.",
    "I don't have that information.",
    "I cannot answer that question.",
    "Sorry, I can't help with that.",
    "It depends.",
    "That's hard to say.",
    "There is no way to know for certain.",
    "I'd rather not say.",
    "I am unable to provide an answer to that.",
    "Nobody really knows.",
)


def llm_verdict(flags: list[bool | None]) -> tuple[bool, str]:
    """Noncommittal when every usable generation was flagged by the LLM."""
    known = [bool(f) for f in flags if f is not None]
    flagged = sum(known)
    verdict = bool(known) and flagged == len(known)
    return verdict, f"{flagged} of {len(known)} generations flagged noncommittal by the LLM"


def exemplar_verdict(
    response_vector: np.ndarray, exemplar_vectors: np.ndarray, threshold: float
) -> tuple[bool, str]:
    """Noncommittal when the response is close to one of the evasive exemplars."""
    sims = cosine_similarities(exemplar_vectors, response_vector)
    best = int(np.argmax(sims))
    verdict = bool(sims[best] >= threshold)
    relation = ">=" if verdict else "<"
    return verdict, (
        f"closest evasive exemplar {EVASIVE_EXEMPLARS[best]!r} at similarity "
        f"{sims[best]:.2f} {relation} threshold {threshold:.2f}"
    )
