"""Which language the question, the answer and each generated question are in.

An English prompt tends to write English questions for a question asked in another language,
and the cosine with the user's question then falls for that reason alone (with an English-only
embedder most of all). Every scored row records the languages it saw (``result.languages``);
a row whose generated questions are mostly in another language than the question gets the
``language_mismatch`` flag (``relevancy.core.triage.triage``).

Detection is ``py3langid`` (a maintained fork of langid.py, BSD; 97 languages, its model inside
the wheel: nothing is fetched), with normalised probabilities. Short texts are hard to place
(a 135M model's odd question such as "Arena for a joke?" comes out as Nigerian Pidgin), so two
texts count as being in different languages only when each is unlikely to be in the other's:
``P(lang(b) | a) < 0.01`` and ``P(lang(a) | b) < 0.01``. On the demo's generated questions this
separated every English question written for a French, Spanish or German question (at most
0.002) from English odd questions for English questions (0.03 to 0.24).

A text whose likeliest language is below :data:`CONFIDENT_FROM` is taken as English, the
default: a short English sentence full of names ("Leonardo da Vinci painted the Mona Lisa.":
Italian 0.09, Portuguese 0.09, English 0.04) is no evidence of another language, while short
questions really in another language come out at 0.56 or more ("Où est-il ?").
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from relevancy.core.prompt import LANGUAGE_NAMES

__all__ = [
    "DIFFERENT_BELOW",
    "CONFIDENT_FROM",
    "detect",
    "load",
    "ready",
    "probability",
    "different",
    "row_languages",
    "mismatched",
    "language_name",
    "describe_languages",
]

#: two texts are in different languages when each has less than this probability of being in
#: the other's language
DIFFERENT_BELOW = 0.01
#: below this probability of its likeliest language a text is taken as English (the default)
CONFIDENT_FROM = 0.5
#: the language an uncertain text is taken to be in
DEFAULT_LANGUAGE = "en"

_IDENTIFIER: Any = None
_LOCK = threading.Lock()


def _identifier() -> Any:
    global _IDENTIFIER
    with _LOCK:
        if _IDENTIFIER is None:
            from py3langid.langid import MODEL_FILE, LanguageIdentifier

            _IDENTIFIER = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
        return _IDENTIFIER


def ready() -> bool:
    """Whether the identifier's model is loaded (loading takes about 0.5 s; a row, 0.5 ms)."""
    return _IDENTIFIER is not None


def load() -> None:
    """Load the identifier's model now (for a caller that should not wait on it later)."""
    _identifier()


def _ranked(text: str) -> dict[str, float]:
    ident = _identifier()
    with _LOCK:
        return {lang: float(p) for lang, p in ident.rank(str(text))}


def detect(text: str) -> tuple[str, float]:
    """``(ISO 639-1 code, probability)`` of the most likely language of ``text`` (English,
    with its own probability, when no language reaches :data:`CONFIDENT_FROM`)."""
    ranked = _ranked(text)
    lang = _top(ranked)
    return lang, ranked.get(lang, 0.0)


def probability(text: str, lang: str) -> float:
    """How likely ``text`` is to be in ``lang`` (0 for a language the model does not know)."""
    return _ranked(text).get(lang, 0.0)


def different(a: str, b: str) -> bool:
    """True when ``a`` and ``b`` are, with confidence, in different languages."""
    return _different(_ranked(a), _ranked(b))


def _top(ranked: dict[str, float]) -> str:
    """The likeliest language, or the default when even that one is unlikely."""
    lang = max(ranked, key=ranked.__getitem__)
    return lang if ranked[lang] >= CONFIDENT_FROM else DEFAULT_LANGUAGE


def _different(ra: dict[str, float], rb: dict[str, float]) -> bool:
    la, lb = _top(ra), _top(rb)
    if la == lb:
        return False
    return ra.get(lb, 0.0) < DIFFERENT_BELOW and rb.get(la, 0.0) < DIFFERENT_BELOW


def row_languages(
    user_input: str,
    response: str,
    questions: Sequence[str | None],
    *,
    prompted: str | None = None,
) -> dict[str, Any]:
    """The languages of one row: ``question``, ``answer``, ``generated`` (one code per
    generated question, None for an unusable one), ``generated_differs`` (whether each is in
    another language than the question, None for an unusable one) and ``prompted`` (the
    language the generator was asked to write in, None when it was not asked)."""
    # each text is ranked once (a row's questions often repeat; the question is compared with
    # each of them): the same answer as detect() and different() text by text
    ranked: dict[str, dict[str, float]] = {}

    def rank(text: str) -> dict[str, float]:
        if text not in ranked:
            ranked[text] = _ranked(text)
        return ranked[text]

    generated: list[str | None] = []
    differs: list[bool | None] = []
    for q in questions:
        if q is None or not str(q).strip():
            generated.append(None)
            differs.append(None)
        else:
            generated.append(_top(rank(str(q))))
            differs.append(_different(rank(str(user_input)), rank(str(q))))
    return {
        "question": _top(rank(str(user_input))),
        "answer": _top(rank(str(response))),
        "generated": generated,
        "generated_differs": differs,
        "prompted": prompted,
    }


def mismatched(languages: dict[str, Any]) -> bool:
    """True when more than half of the usable generated questions are in another language
    than the question (the ``language_mismatch`` flag)."""
    differs = [d for d in languages.get("generated_differs") or [] if d is not None]
    return bool(differs) and 2 * sum(differs) > len(differs)


def language_name(code: str | None) -> str:
    """``"fr"`` -> ``"French"`` (the code itself when unnamed)."""
    if not code:
        return "unknown"
    return LANGUAGE_NAMES.get(code, code)


def describe_languages(languages: dict[str, Any]) -> str:
    """One line: the question's and the answer's language, the generated questions'."""
    if not languages:
        return ""
    q, a = languages.get("question"), languages.get("answer")
    usable = [
        (g, d)
        for g, d in zip(languages.get("generated") or [], languages.get("generated_differs") or [])
        if g
    ]
    other = sum(1 for _, d in usable if d)
    text = f"question in {language_name(q)}, answer in {language_name(a)}"
    if usable:
        names = sorted({language_name(g) for g, _ in usable})
        text += f"; generated questions in {', '.join(names)}"
        if other:
            text += f" ({other} of {len(usable)} in another language than the question)"
    if languages.get("prompted"):
        text += f"; the generator was asked to write in {language_name(languages['prompted'])}"
    return text
