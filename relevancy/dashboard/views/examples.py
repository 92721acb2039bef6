"""The Home page's examples: the demo's questions with their answers, and their shipped scores."""

from __future__ import annotations

from functools import lru_cache

from relevancy.core.result import RelevancyResult
from relevancy.runs import RunData, demo_inputs

__all__ = ["demo_examples", "precomputed"]


@lru_cache(maxsize=1)
def demo_examples() -> dict[str, tuple[str, ...]]:
    """Each demo question with its answers (one per variant), in the demo's order."""
    out: dict[str, list[str]] = {}
    for question, answer in zip(demo_inputs()["user_input"], demo_inputs()["response"]):
        out.setdefault(question, []).append(answer)
    return {q: tuple(a) for q, a in out.items()}


def precomputed(
    question: str, answers: list[str], demo: RunData | None
) -> list[RelevancyResult | None] | None:
    """The demo run's results for these inputs (None for an empty answer), or None when any
    non-empty answer is not a demo row."""
    if demo is None:
        return None
    found: list[RelevancyResult | None] = []
    for answer in answers:
        if not answer.strip():
            found.append(None)
            continue
        match = next(
            (r for r in demo.results if r.user_input == question and r.response == answer), None
        )
        if match is None:
            return None
        found.append(match)
    return found if any(found) else None
