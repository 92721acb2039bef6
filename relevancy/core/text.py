"""How text is cut up: an answer into sentences, a question into its parts, a sentence into clauses.

One splitter each, used by the focus score, the explanations and the reports alike.
"""

from __future__ import annotations

import re

__all__ = [
    "MAX_SENTENCES",
    "QUESTION_WORDS",
    "split_sentences",
    "split_question_parts",
    "split_clauses",
    "looks_like_question",
]

#: Longer responses are cut to this many sentences.
MAX_SENTENCES = 64

_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+|\n+")
_HAS_WORD = re.compile(r"\w", re.UNICODE)
_QUESTION_WORDS = (
    r"what|where|when|who|whom|whose|which|why|how|is|are|was|were|do|does|did|can|could|"
    r"should|will|would|has|have|"
    r"qu(?:e|el|elle|els|elles|oi)|où|quand|comment|pourquoi|combien|qui|"  # fr
    r"qué|cuál|cuándo|cómo|dónde|quién|cuánto|por qué|"  # es
    r"was|wie|wo|wann|warum|welche[rsnm]?|wer"  # de
)
_PART_SPLIT = re.compile(
    rf"\s*(?:[;?]|,?\s+(?:and|et|y|und|also)\s+(?=(?:{_QUESTION_WORDS})\b))\s*", re.IGNORECASE
)
_CLAUSE_SPLIT = re.compile(
    r"\s*(?:[,;:]|\s(?:and|but|which|et|mais|qui|que|y|pero|und|aber)\s)\s*", re.IGNORECASE
)


#: words that open a question (English, French, Spanish, German, Italian), lower case
QUESTION_WORDS = frozenset(
    "what where when who whom whose which why how is are was were am do does did can could "  # noqa: SIM905
    "should shall will would has have had may might must "
    "que quoi qu'est-ce quel quelle quels quelles où ou quand comment pourquoi combien qui "
    "est-ce "
    "qué que cuál cual cuáles cuándo cuando cómo como dónde donde quién quien quiénes cuánto "
    "cuanto cuánta cuántos por "
    "was wie wo wann warum welche welcher welches welchen wer wieso weshalb woher wohin "
    "chi che cosa come dove quando perché quanto quanta quale quali".split()
)
_WORDS = re.compile(r"[\w'’-]+", re.UNICODE)


def looks_like_question(text: str) -> bool:
    """True for a question: ends in ``?``, at least three words, and a question word first (or
    second or third: "In which year...").

    >>> looks_like_question("In which year was it built?"), looks_like_question("Don't worry?")
    (True, False)
    """
    t = str(text).strip().lstrip("¿¡")
    words = [w.lower().replace("’", "'") for w in _WORDS.findall(t)]
    return t.endswith("?") and len(words) >= 3 and any(w in QUESTION_WORDS for w in words[:3])


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text``: split after ``. ! ?`` followed by space, and at line breaks.

    Pieces without a letter or digit (a lone ``-`` or ``*``) are dropped; at most
    ``MAX_SENTENCES`` are returned.

    Examples
    --------
    >>> split_sentences("Paris is the capital. It is in France!\\n- Edit: typo")
    ['Paris is the capital.', 'It is in France!', '- Edit: typo']
    """
    parts = [p.strip() for p in _SENTENCE_END.split(str(text))]
    return [p for p in parts if _HAS_WORD.search(p)][:MAX_SENTENCES]


def split_question_parts(question: str) -> list[str]:
    """The parts of a multi-part question: split on ``?``/``;`` and on "and" + question word.

    >>> split_question_parts("Where is France and what is its capital?")
    ['Where is France', 'what is its capital']
    """
    parts = [p.strip(" ,.!?") for p in _PART_SPLIT.split(str(question))]
    return [p for p in parts if len(p.split()) >= 2]


def split_clauses(sentence: str) -> list[str]:
    """Clauses of a sentence (split on , ; : and conjunctions), at least two words each."""
    return [c for c in _CLAUSE_SPLIT.split(sentence) if len(c.split()) >= 2]


_NUMBER_ASKED = re.compile(
    r"^\s*(?:how\s+(?:many|much|tall|long|far|old|big|high|deep|heavy|fast|often|large|wide)"
    r"|when|what\s+year|in\s+what\s+year|which\s+year)\b",
    re.IGNORECASE,
)
_NAME_ASKED = re.compile(r"^\s*(?:who|whom|whose|where|which\s+\w+s?\b)", re.IGNORECASE)
_DIGITS = re.compile(r"\b\d[\d,.]*(?!\w)")  # "8,849", not the "19" of "19th"
_NAME = re.compile(r"(?<![.!?]\s)(?<!^)\b[A-Z][\w'’-]+", re.UNICODE)


def answer_of_kind(part: str, question: str, answer: str) -> list[str]:
    """What in ``answer`` is of the kind an English question ``part`` asks for, and not already in
    ``question``: numbers for "how many / how tall / when ...", names (capitalised words not
    opening a sentence) for "who / where / which countries ...". Empty when the part asks for no
    such kind, or the answer has none.

    An embedding compares the wording of a part with the answer's clauses and can miss a short
    factual answer ("which countries is it between" against "... between Nepal and China"); this
    is the check that it is there.

    >>> answer_of_kind("which countries is it between", "How tall is Mount Everest and which "
    ...                "countries is it between?", "It sits between Nepal and China.")
    ['Nepal', 'China']
    >>> answer_of_kind("how tall is it", "Where is Kilimanjaro and how tall is it?",
    ...                "Kilimanjaro is in Tanzania.")
    []
    """
    asked = {w.lower() for w in _WORDS.findall(question)}
    if _NUMBER_ASKED.match(part):
        found = [n.rstrip(",.") for n in _DIGITS.findall(answer)]
    elif _NAME_ASKED.match(part):
        found = [n for s in split_sentences(answer) for n in _NAME.findall(s)]
    else:
        return []
    return list(dict.fromkeys(x for x in found if x and x.lower() not in asked))
