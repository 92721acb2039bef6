"""OpenAI chat-format records: the last user turn and the assistant's reply after it (or, in
the OpenAI evals layout, the ``ideal`` answer)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pandas as pd

from relevancy.io.importers._payloads import (
    all_scalars,
    as_messages,
    as_time,
    chat_pair,
    is_missing,
    metadata_columns,
    pair_row,
    pairs_table,
    plain,
    text_of,
)
from relevancy.io.importers.report import ImportReport

#: top-level fields read as times (epoch numbers become ISO text, as other importers give them)
TIME_KEYS = {"created", "created_at", "timestamp", "time", "start_time", "request_time"}


def openai_chat(records: Iterable[dict[str, Any]], report: ImportReport) -> pd.DataFrame:
    """OpenAI chat-format records (``{"messages": [...]}``): the last user turn is the question,
    the assistant's reply after it the answer; the system prompt and other fields are kept."""
    rows = []
    for r in records:
        messages = as_messages(r.get("messages")) or []
        question, answer = chat_pair(messages)
        if not answer.strip() and not is_missing(r.get("ideal")):  # OpenAI evals: the answer
            answer = text_of(r.get("ideal"), "a")
        if not question.strip():
            report.skip("conversation", "without a user turn")
            continue
        if not answer.strip():
            report.skip("conversation", "without an assistant reply")
            continue
        report.found += 1
        systems = [text for role, text in messages if role == "system" and text.strip()]
        extras: dict[str, Any] = {
            "system_prompt": systems[0] if systems else None,
            "turns": sum(role == "user" for role, _ in messages),
        }
        for key, value in r.items():
            if key in ("messages", "ideal"):
                continue
            value = plain(value) if not isinstance(value, str) else value
            if key == "metadata" and isinstance(value, dict):
                extras.update(metadata_columns(value))
            elif key in TIME_KEYS:
                extras[key] = as_time(value)
            elif not isinstance(value, (dict, list)) or all_scalars(value):
                extras[key] = value
        rows.append(pair_row(question, answer, extras))
    return pairs_table(rows)
