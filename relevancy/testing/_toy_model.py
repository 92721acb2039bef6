"""The toy "model" behind the test server: deterministic questions and embeddings.

The chat side reads a response and writes a question from its content words, with a
``noncommittal`` flag set when the text sounds evasive. The embedding side hashes words (and
lighter character trigrams) into a fixed number of buckets and L2-normalises the result, so
related words land close together. Nothing here is random or depends on ``PYTHONHASHSEED``.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

__all__ = [
    "CHAT_MODEL",
    "EMBEDDING_MODEL",
    "TEXT_MODES",
    "answer_text",
    "embed_text",
    "embed_token_ids",
    "is_noncommittal",
    "make_question",
    "message_text",
    "render_content",
    "word_count",
    "approx_tokens",
]

CHAT_MODEL = "toy-chat"
EMBEDDING_MODEL = "toy-embed"
#: Shapes of a reply given without ``response_format``.
TEXT_MODES = ("json", "prose", "lines")

# ----------------------------------------------------------------------------- chat

_WORD_RE = re.compile(r"[^\W_]+(?:'[^\W_]+)*")
_STOPWORDS = frozenset(
    word
    for line in (
        "a about above after again against all am an and any are as at be because been before",
        "being below between both but by can could did do does doing down during each few for",
        "from further had has have having he her here hers herself him himself his how i if in",
        "into is it its itself just me more most my myself no nor not now of off on once only",
        "or other our ours ourselves out over own same she should so some such than that the",
        "their theirs them themselves then there these they this those through to too under",
        "until up very was we were what when where which while who whom why will with would you",
        "your yours yourself yourselves also yes s t don i'm it's that's there's",
    )
    for word in line.split()
)
_EVASIVE_PHRASES = (
    "i don't know",
    "i do not know",
    "not sure",
    "it depends",
    "cannot help",
    "can't help",
    "no idea",
    "unclear",
    "can't say",
    "cannot say",
)
_QUESTION_PREFIXES = ("What about", "What is", "Which", "How about", "Why", "Where is")
_MAX_QUESTION_WORDS = 8


_JSON_RESPONSE_RE = re.compile(r'"response"\s*:\s*(?=")', re.IGNORECASE)


def answer_text(prompt: str) -> str:
    """The response a prompt asks about, stripped: the text after its last ``Response:`` marker
    (any case), or the value of its last ``"response": "..."`` JSON key when that comes later
    (Ragas' prompts put the input as JSON), or the whole prompt."""
    cut = prompt.lower().rfind("response:")
    keys = list(_JSON_RESPONSE_RE.finditer(prompt))
    if keys and keys[-1].start() > cut:
        try:
            value, _ = json.JSONDecoder().raw_decode(prompt, keys[-1].end())
            return str(value).strip()
        except json.JSONDecodeError:
            pass
    if cut >= 0:
        prompt = prompt[cut + len("response:") :]
    return prompt.strip()


def is_noncommittal(text: str) -> int:
    """1 when ``text`` contains an evasive phrase such as "I don't know", else 0."""
    lowered = text.lower().replace("\u2019", "'")
    return int(any(phrase in lowered for phrase in _EVASIVE_PHRASES))


def _content_words(text: str) -> list[str]:
    seen: set[str] = set()
    words: list[str] = []
    for word in _WORD_RE.findall(text.replace("\u2019", "'")):
        key = word.lower()
        if key in _STOPWORDS or key in seen:
            continue
        seen.add(key)
        words.append(word)
    return words


def make_question(text: str, index: int = 0) -> str:
    """The toy model's question number ``index`` for ``text``.

    The prefix cycles through a few question openers and the number of words taken shrinks a
    little, so the questions for one text are all different (beyond six a ``(variant k)`` tag
    keeps them apart).
    """
    words = _content_words(text) or ["this"]
    prefix = _QUESTION_PREFIXES[index % len(_QUESTION_PREFIXES)]
    take = max(1, _MAX_QUESTION_WORDS - index % 3)
    question = f"{prefix} {' '.join(words[:take])}"
    rounds = index // len(_QUESTION_PREFIXES)
    if rounds:
        question += f" (variant {rounds + 1})"
    return question + "?"


def render_content(question: str, noncommittal: int, shape: str) -> str:
    """One choice's message content in ``shape`` (one of :data:`TEXT_MODES`)."""
    payload = json.dumps({"question": question, "noncommittal": noncommittal}, ensure_ascii=False)
    if shape == "json":
        return payload
    if shape == "prose":
        return f"Sure! Here you go:\n```json\n{payload}\n```\nHope this helps."
    return f"Question: {question}\nNoncommittal: {noncommittal}"


def message_text(content: Any) -> str:
    """Text of a message ``content``: a string or a list of ``{"type": "text"}`` parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            part.get("text", "")
            for part in content
            if isinstance(part, dict) and isinstance(part.get("text"), str)
        ]
        return "\n".join(parts)
    return ""


def word_count(text: str) -> int:
    """The toy tokenizer: one token per whitespace-separated word."""
    return len(text.split())


_PIECE_RE = re.compile(r"[^\W_]+|[^\w\s]+")


def approx_tokens(text: str) -> int:
    """About what a BPE tokenizer counts: a word is a token per six letters, a run of
    punctuation a token per two marks. Within 10% of SmolLM2's BPE tokenizer on our prompt,
    Ragas' prompt, and the demo's questions and answers (measured when this was written)."""
    return sum(
        -(-len(piece) // (6 if piece[0].isalnum() else 2)) for piece in _PIECE_RE.findall(text)
    )


# ----------------------------------------------------------------------------- embeddings

_STOPWORD_WEIGHT = 0.25
# A word's trigrams together weigh as much as the word, so each weighs much less.
_TRIGRAM_WEIGHT = 1.0


@lru_cache(maxsize=1 << 16)
def _bucket(key: str, dim: int, seed: int) -> tuple[int, float]:
    """Stable (index, sign) for ``key``; independent of ``PYTHONHASHSEED``."""
    digest = hashlib.blake2b(f"{seed}\x00{key}".encode(), digest_size=8).digest()
    value = int.from_bytes(digest, "little")
    return value % dim, (1.0 if value >> 63 else -1.0)


def _add(vector: list[float], key: str, weight: float, seed: int) -> None:
    index, sign = _bucket(key, len(vector), seed)
    vector[index] += sign * weight


def _normalised(vector: list[float], seed: int) -> list[float]:
    norm = math.sqrt(math.fsum(x * x for x in vector))
    if norm == 0.0:  # empty text, or an unlucky cancellation: a fixed unit vector instead
        unit = [0.0] * len(vector)
        unit[_bucket("<empty>", len(vector), seed)[0]] = 1.0
        return unit
    return [x / norm for x in vector]


def embed_text(text: str, dim: int, seed: int = 0) -> list[float]:
    """Hashed bag of lowercased words plus lighter character trigrams, L2-normalised."""
    vector = [0.0] * dim
    for word in _WORD_RE.findall(text.lower().replace("\u2019", "'")):
        weight = _STOPWORD_WEIGHT if word in _STOPWORDS else 1.0
        _add(vector, "w:" + word, weight, seed)
        padded = f"#{word}#"
        trigrams = [padded[i : i + 3] for i in range(len(padded) - 2)]
        share = weight * _TRIGRAM_WEIGHT / math.sqrt(len(trigrams))
        for trigram in trigrams:
            _add(vector, "c:" + trigram, share, seed)
    return _normalised(vector, seed)


def embed_token_ids(tokens: Sequence[int], dim: int, seed: int) -> list[float]:
    """Hashed bag of token ids, L2-normalised (for ``input`` given as token ids)."""
    vector = [0.0] * dim
    for token in tokens:
        _add(vector, f"t:{token}", 1.0, seed)
    return _normalised(vector, seed)
