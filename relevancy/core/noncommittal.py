"""Deciding whether a response is noncommittal (evasive, vague).

Two detectors, chosen with ``AnswerRelevancy(noncommittal=...)``:

``"llm"``
    The generator's own flags, as Ragas does: noncommittal when *all* N generations are flagged.
``"exemplars"``
    The response's embedding is compared with a fixed set of evasive answers; noncommittal when
    the closest one is at least ``threshold`` similar. An evasion that repeats the question ("I'm
    not sure when the Eiffel Tower was built") embeds close to the question, not to "I don't
    know", so the response is also compared with the question's words left out ("I'm not sure
    the built") and the higher similarity counts. Used by the embedded default because the
    135M model's own flag is noise (46-52% accurate; this detector 84% on the held-out half of
    the same items, with no answer wrongly zeroed: bench/RESULTS.md, "Noncommittal detection").
``"auto"`` (default)
    ``"llm"`` when the generator gives flags (API models), else ``"exemplars"``.
``"off"``
    Never zero a score.
"""

from __future__ import annotations

import re

import numpy as np

from relevancy.core.formula import cosine_similarities

__all__ = [
    "EVASIVE_EXEMPLARS",
    "DETECTORS",
    "DETECTOR_DESCRIPTIONS",
    "DEFAULT_EXEMPLAR_THRESHOLD",
    "evasive_wording",
    "exemplar_verdict",
    "llm_verdict",
    "without_question_words",
]

DETECTORS = ("auto", "llm", "exemplars", "off")
#: One line per detector (the CLI's help and the dashboard's choices).
DETECTOR_DESCRIPTIONS = {
    "auto": "the LLM's flags for API models, similarity to evasive exemplars for the embedded one",
    "llm": "the generator's own flag, noncommittal when all N generations are flagged (Ragas)",
    "exemplars": "similarity of the answer to evasive replies",
    "off": "never zero a score",
}

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


#: Chosen on the development half of ``tests/data/noncommittal_set.jsonl``: the best balanced
#: accuracy that zeroes no real answer there.
DEFAULT_EXEMPLAR_THRESHOLD = 0.35

_WORD = re.compile(r"\w[\w']*", re.UNICODE)
# Words too common to say what a question is about; kept in the response.
_FUNCTION_WORDS = frozenset(
    "a an the of in on at to is are was were be been do does did what when who why how which "  # noqa: SIM905
    "whose whom where for and or it its this that these those with by from as".split()
)


def without_question_words(user_input: str, response: str) -> str:
    """``response`` with the words it shares with ``user_input`` left out (case-insensitive).

    Function words ("the", "when", "is" ...) stay; a plural ``s`` is ignored when matching.

    Examples
    --------
    >>> without_question_words("When was the Eiffel Tower built?",
    ...                        "I'm not sure when the Eiffel Tower was built.")
    "I'm not sure when the was ."
    """
    asked = {w.lower() for w in _WORD.findall(user_input)} - _FUNCTION_WORDS
    asked |= {w[:-1] for w in asked if w.endswith("s")}

    def keep(match: re.Match[str]) -> str:
        word = match.group(0).lower()
        return "" if word in asked or word.rstrip("s") in asked else match.group(0)

    return re.sub(r"\s+", " ", _WORD.sub(keep, response)).strip()


def llm_verdict(flags: list[bool | None]) -> tuple[bool, str]:
    """Noncommittal when every usable generation was flagged by the LLM."""
    known = [bool(f) for f in flags if f is not None]
    flagged = sum(known)
    verdict = bool(known) and flagged == len(known)
    return verdict, f"{flagged} of {len(known)} generations flagged noncommittal by the LLM"


def exemplar_verdict(
    response_vector: np.ndarray,
    exemplar_vectors: np.ndarray,
    threshold: float,
    *,
    stripped_vector: np.ndarray | None = None,
) -> tuple[bool, str]:
    """Noncommittal when the response is close to one of the evasive exemplars.

    ``stripped_vector`` is the embedding of :func:`without_question_words`; when given, the
    higher of the two similarities decides, and the detail says which text it came from.
    """
    sims = cosine_similarities(exemplar_vectors, response_vector)
    where = ""
    if stripped_vector is not None:
        stripped = cosine_similarities(exemplar_vectors, stripped_vector)
        if stripped.max() > sims.max():
            sims, where = stripped, " (the response without the question's words)"
    best = int(np.argmax(sims))
    verdict = bool(sims[best] >= threshold)
    relation = ">=" if verdict else "<"
    return verdict, (
        f"closest evasive exemplar {EVASIVE_EXEMPLARS[best]!r} at similarity "
        f"{sims[best]:.2f}{where} {relation} threshold {threshold:.2f}"
    )


_EVASIONS = re.compile(
    r"\b(?:"
    r"I\s+(?:can(?:no|'|’)?t|cannot|am\s+(?:not\s+able|unable)\s+to|'m\s+(?:not\s+able|unable)\s+to"
    r"|won't|will\s+not)\s+(?:help|answer|say|give|tell|provide|explain|comment|advise|guess)"
    r"|I\s+(?:do\s+not|don't|don’t)\s+know"
    r"|I(?:'m|’m|\s+am)\s+not\s+(?:sure|certain)"
    r"|I(?:'d|’d|\s+would)\s+rather\s+not"
    r"|(?:best|better)\s+to\s+(?:ask|consult|check\s+with|speak\s+to|talk\s+to)"
    r"|please\s+(?:ask|consult|see|contact)\s+(?:a|an|your)\b"
    r"|(?:hard|difficult|impossible)\s+to\s+say"
    r"|it\s+(?:really\s+)?depends"
    r"|there\s+(?:is|isn't|isn’t)\s+(?:no\s+)?(?:one|single)\s+answer"
    r"|(?:nobody|no\s+one)\s+(?:really\s+)?knows"
    r"|je\s+ne\s+sais\s+pas|no\s+(?:lo\s+)?sé|ich\s+weiß\s+(?:es\s+)?nicht|keine\s+Ahnung"
    r")",
    re.IGNORECASE,
)


def evasive_wording(response: str) -> str:
    """The first words of ``response`` that dodge a question ("I can't help", "I'm not sure",
    "best to ask", "it depends"...), or ``""``.

    Not a detector on its own (an answer may hedge and still answer): the triage calls a row that
    scores below the threshold with such words noncommittal, whatever the detector said.

    >>> evasive_wording("I can't help with medical questions. Please ask a doctor.")
    "I can't help"
    >>> evasive_wording("Paris is the capital of France.")
    ''
    """
    found = _EVASIONS.search(str(response))
    return found.group(0) if found else ""
