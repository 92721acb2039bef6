"""The toy server as an answer model: chat prompts answered, differently per prompt and model.

Off unless the server is given answer models (``srv.answer_models = ("toy-a", "toy-b")``).
Then a chat request to one of them is answered as an assistant would, deterministically:

* the answer's first sentence restates the content words of the last user message (less the
  instruction words a template wraps a question in: answer, briefly, detail...), so it is on
  topic;
* the prompt (system and user text) steers the rest: ``brief``, ``concise`` or ``one sentence``
  stop there; ``detail``, ``explain`` or ``thorough`` add two filler sentences; ``refuse`` or
  ``decline`` answer ``I don't know, I cannot help with that.``; anything else adds one filler
  sentence;
* model ``k`` of the answer models (counting from 0) adds ``k`` more filler sentences.

So variants really differ: padding lowers a score, a refusal is noncommittal. A request for a
model that is neither an answer model nor the toy chat or embedding model gets a 404
(``model_not_found``), as from a server that does not know it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from relevancy.testing._toy_model import _content_words, message_text

__all__ = ["toy_answer", "INSTRUCTION_WORDS", "FILLER"]

INSTRUCTION_WORDS = frozenset(
    [
        "answer",
        "answers",
        "briefly",
        "brief",
        "concise",
        "sentence",
        "one",
        "detail",
        "detailed",
        "explain",
        "thorough",
        "thoroughly",
        "please",
        "reply",
        "respond",
        "question",
        "following",
        "user",
        "asks",
        "asked",
        "refuse",
        "decline",
        "helpful",
        "assistant",
        "words",
    ]
)
FILLER = (
    "Many people find this an interesting subject to think about.",
    "Weather and seasons change the mood of every city in different ways.",
    "Good music and long walks help everyone relax after work.",
    "Libraries keep old newspapers that few visitors ever read.",
)
_REFUSAL = "I don't know, I cannot help with that."


def _has(text: str, *words: str) -> bool:
    return any(w in text for w in words)


def toy_answer(messages: Sequence[dict[str, Any]], model: str, models: Sequence[str]) -> str:
    """The toy answer to ``messages`` from ``model`` (one of ``models``)."""
    users = [message_text(m.get("content")) for m in messages if m.get("role") == "user"]
    prompt = " ".join(message_text(m.get("content")) for m in messages).lower()
    if _has(prompt, "refuse", "decline"):
        return _REFUSAL
    words = [
        w for w in _content_words(users[-1] if users else "") if w.lower() not in INSTRUCTION_WORDS
    ]
    first = (" ".join(words) or "This") + "."
    first = first[0].upper() + first[1:]
    if _has(prompt, "brief", "concise", "one sentence"):
        padding = 0
    elif _has(prompt, "detail", "explain", "thorough"):
        padding = 2
    else:
        padding = 1
    padding += list(models).index(model) if model in models else 0
    return " ".join([first, *(FILLER[i % len(FILLER)] for i in range(padding))])
