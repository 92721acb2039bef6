"""Reading payloads wherever a tool puts them: strings, JSON objects with a question/answer-like
key, chat messages of several shapes, OpenAI responses; and the rows an importer builds."""

from __future__ import annotations

import ast
import json
import math
import re
from datetime import date, datetime
from typing import Any

import numpy as np
import pandas as pd

from relevancy.io.importers.report import ImportReport

NOT_TEXT = {"error", "errors", "exception", "status", "detail", "traceback"}  #: never an answer


MAX_METADATA = 20  #: metadata keys kept as columns per record


ROLE_NAMES = {
    "user": "user",
    "human": "user",
    "humanmessage": "user",
    "humanmessagechunk": "user",
    "assistant": "assistant",
    "ai": "assistant",
    "aimessage": "assistant",
    "aimessagechunk": "assistant",
    "model": "assistant",
    "system": "system",
    "developer": "system",
    "systemmessage": "system",
    "tool": "tool",
    "function": "tool",
    "toolmessage": "tool",
    "functionmessage": "tool",
}


KEYS = {
    "q": (
        "question",
        "query",
        "user_input",
        "input",
        "inputs",
        "prompt",
        "prompts",
        "text",
        "content",
        "message",
        "user_message",
        "human_input",
        "q",
    ),
    "a": (
        "answer",
        "response",
        "output",
        "outputs",
        "result",
        "completion",
        "generation",
        "text",
        "content",
        "message",
        "reply",
        "output_text",
        "a",
    ),
}


# --- reading payloads --------------------------------------------------------------------------
def is_missing(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, float):
        return math.isnan(value)
    return value is pd.NaT or (isinstance(value, str) and not value.strip())


def plain(value: Any) -> Any:
    """numpy arrays as lists, JSON text as what it holds, a Python repr of a list or dict (what
    pandas writes to CSV for objects) as that list or dict; anything else as it is."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, str):
        s = value.strip()
        if s == "null":  # JSON's null, as a CSV export writes it
            return None
        if s[:1] in "[{" or (len(s) > 1 and s[0] == s[-1] == '"'):
            try:
                return json.loads(s)
            except ValueError:
                return python_literal(s, value)
    return value


MAX_LITERAL = 1_000_000  #: characters of a repr read with ``ast.literal_eval``; longer stays text


def python_literal(text: str, default: Any) -> Any:
    """A list or dict written as Python writes it (``[{'role': 'user', ...}]``), read safely
    (:func:`ast.literal_eval`: literals only, nothing is run); ``default`` if it is not one."""
    if len(text) > MAX_LITERAL or text[:1] not in "[{":
        return default
    try:
        found = ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return default
    return found if isinstance(found, (list, dict)) else default


_REPR = re.compile(r"\s*(?:array\(|\[\s*\{\s*'|\{\s*'[^']*'\s*:|\[\s*\[\s*')")


def looks_like_repr(text: str) -> bool:
    """Whether ``text`` looks like a Python list or dict (or numpy array) written as text."""
    return bool(_REPR.match(text))


def content_text(content: Any) -> str:
    """A message's content: a string (JSON text too: a structured reply is its text), or the
    text parts of a list of parts (OpenAI's ``{"type": "text", "text"}``, OpenInference's
    ``message_content.text``)."""
    if isinstance(content, str):
        parts = plain(content) if content.lstrip()[:2] in ("[{", "[ ") else None
        if not (isinstance(parts, list) and parts and all(_is_part(p) for p in parts)):
            return content if content.strip() else ""
        content = parts
    content = plain(content)
    if isinstance(content, list):
        texts = []
        for part in map(plain, content):
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, dict) and isinstance(_part_text(part), str):
                texts.append(_part_text(part))
        return "\n".join(t for t in texts if t.strip())
    if isinstance(content, dict) and isinstance(content.get("text"), str):
        return content["text"]
    return ""


def _part_text(part: dict[str, Any]) -> Any:
    inner = part.get("message_content")
    if isinstance(inner, dict):
        part = inner
    return part.get("text", part.get("message_content.text"))


def _is_part(part: Any) -> bool:
    return isinstance(part, dict) and bool({"type", "text", "message_content.type"} & set(part))


def as_message(item: Any) -> tuple[str, str] | None:
    """``(role, text)`` of one chat message in any of the shapes the tools write, else None."""
    item = plain(item)
    if not isinstance(item, dict):
        return None
    if "message.role" in item:  # OpenInference, flattened
        role = ROLE_NAMES.get(str(item["message.role"]).lower())
        content = first_of(item, "message.content", "message.contents")
        return (role, content_text(content)) if role else None
    if item.get("lc") == 1 and isinstance(item.get("kwargs"), dict):  # LangChain, serialized
        ids = item.get("id") or [""]
        kwargs = item["kwargs"]
        role = ROLE_NAMES.get(str(kwargs.get("type") or ids[-1]).lower())
        return (role, content_text(kwargs.get("content"))) if role else None
    role_value = item.get("role", item.get("type"))
    role = ROLE_NAMES.get(str(role_value).lower()) if isinstance(role_value, str) else None
    if role is None:
        inner = item.get("message")  # {"message": {...}}: OpenInference nested, ChatGeneration
        return as_message(inner) if isinstance(inner, dict) else None
    data = item.get("data") if isinstance(item.get("data"), dict) else {}  # LangChain dict
    content = first_of(item, "content", "contents")
    return role, content_text(content if content is not None else data.get("content"))


def as_messages(value: Any) -> list[tuple[str, str]] | None:
    """The chat messages in ``value`` (a list, or a list of lists), or None if it is not one."""
    value = plain(value)
    if not isinstance(value, list) or not value:
        return None
    if all(isinstance(plain(v), list) for v in value):  # LangChain batches: [[...]]
        value = [m for batch in value for m in plain(batch)]
    parsed = [as_message(v) for v in value]
    found = [m for m in parsed if m is not None]
    return found if found and len(found) * 2 >= len(value) else None


def chat_pair(messages: list[tuple[str, str]]) -> tuple[str, str]:
    """The last user turn and the assistant's last text reply after it ("" when missing)."""
    users = [i for i, (role, text) in enumerate(messages) if role == "user" and text.strip()]
    question = messages[users[-1]][1] if users else ""
    after = messages[users[-1] + 1 :] if users else messages
    replies = [text for role, text in after if role == "assistant" and text.strip()]
    return question, replies[-1] if replies else ""


def text_of(value: Any, side: str, _depth: int = 0) -> str:
    """The question (``side="q"``) or the answer (``"a"``) held by a payload, or "" if none.

    >>> text_of({"messages": [{"role": "user", "content": "Hi?"}]}, "q")
    'Hi?'
    >>> text_of('{"choices": [{"message": {"role": "assistant", "content": "Hello"}}]}', "a")
    'Hello'
    """
    if _depth > 8 or is_missing(value):
        return ""
    parsed = plain(value)
    if isinstance(parsed, str):
        return parsed
    found = _structured_text(parsed, side, _depth)
    if found or side != "a" or not is_reply_data(parsed):
        return found
    # a structured reply (JSON with no answer-like key) is the answer, as its JSON text
    if _is_json(value):
        return value.strip()
    return json.dumps(parsed, ensure_ascii=False, default=str) if _depth == 0 else ""


def _is_json(value: Any) -> bool:
    if not isinstance(value, str):
        return False
    try:
        json.loads(value)
    except ValueError:
        return False
    return True


#: keys of the envelopes payloads come in: never a reply's own data
ENVELOPE = {
    "messages",
    "choices",
    "generations",
    "role",
    "lc",
    "args",
    "kwargs",
    "message",
    "content",
    "candidates",
    "output_messages",
}


def is_reply_data(value: Any) -> bool:
    """Whether a parsed reply is the reply itself (``{"question": ..., "score": 3}``, a
    structured output): an object that is not a message or an envelope, not an error, and has
    no answer-like key (left empty)."""
    if not isinstance(value, dict) or not value or as_message(value) is not None:
        return False
    keys = {str(k).lower() for k in value}
    if any(k.startswith("message.") for k in keys):
        return False
    return not (keys & ENVELOPE or keys & set(KEYS["a"]) or keys <= NOT_TEXT)


def _structured_text(value: Any, side: str, _depth: int) -> str:
    """:func:`text_of` of a parsed payload (anything but a string)."""
    if isinstance(value, bool):
        return ""
    if isinstance(value, (int, float, np.integer, np.floating)):
        return "" if is_missing(float(value)) else str(value)
    messages = as_messages(value)
    if messages is not None:
        return chat_pair(messages)[0 if side == "q" else 1]
    if isinstance(value, list):
        if all(isinstance(v, str) for v in value):
            return "\n".join(v for v in value if v.strip())
        for item in value:
            if text := text_of(item, side, _depth + 1):
                return text
        return ""
    if not isinstance(value, dict):
        return ""
    message = as_message(value)
    if message is not None:
        return message[1]
    for key in ("messages", "choices", "generations"):
        if key in value and (text := text_of(value[key], side, _depth + 1)):
            return text
    if value.get("lc") == 1 and isinstance(value.get("kwargs"), dict):
        return text_of(value["kwargs"], side, _depth + 1)
    for key in KEYS[side]:
        if key in value and (text := text_of(value[key], side, _depth + 1)):
            return text
    if "args" in value or "kwargs" in value:  # a decorated function's call (Langfuse @observe)
        return text_of(value.get("kwargs"), side, _depth + 1) or text_of(
            value.get("args"), side, _depth + 1
        )
    if len(value) == 1 and next(iter(value)) not in NOT_TEXT:
        return text_of(next(iter(value.values())), side, _depth + 1)
    return ""


def flatten(record: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested objects as dotted keys: ``{"attributes": {"input": {"value": x}}}`` ->
    ``{"attributes.input.value": x}`` (Phoenix writes both shapes)."""
    out: dict[str, Any] = {}
    for key, value in record.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            out.update(flatten(value, name + "."))
        else:
            out[name] = value
    return out


def unflatten(record: dict[str, Any]) -> dict[str, Any]:
    """Dotted keys as nested objects and numbered ones as lists, the way OpenTelemetry
    attributes are written: ``{"llm.input_messages.0.message.role": "user"}`` ->
    ``{"llm": {"input_messages": [{"message": {"role": "user"}}]}}``. A key that would nest
    under a value already there is kept as it is."""
    root: dict[str, Any] = {}
    for key, value in record.items():
        parts = str(key).split(".")
        node = root
        for part in parts[:-1]:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                node = None
                break
            node = child
        if node is None or isinstance(node.get(parts[-1]), dict):
            root.setdefault(str(key), value)
        else:
            node[parts[-1]] = value
    return _as_lists(root)


def _as_lists(node: Any) -> Any:
    if not isinstance(node, dict):
        return node
    node = {k: _as_lists(v) for k, v in node.items()}
    if node and all(isinstance(k, str) and k.isdigit() for k in node):
        return [node[k] for k in sorted(node, key=int)]
    return node


def numbered(record: dict[str, Any], prefix: str) -> list[Any] | None:
    """The list written as numbered keys under ``prefix`` (``prefix.0.message.role``...), each
    item unflattened; None when there is none."""
    items: dict[int, dict[str, Any]] = {}
    start = prefix + "."
    for key, value in record.items():
        if isinstance(key, str) and key.startswith(start):
            index, _, rest = key[len(start) :].partition(".")
            if index.isdigit() and rest:
                items.setdefault(int(index), {})[rest] = value
    return [unflatten(items[i]) for i in sorted(items)] or None


def as_time(value: Any) -> Any:
    """A time as ISO 8601 text. Numbers (or digit strings) are epoch seconds, milliseconds,
    microseconds or nanoseconds, told apart by their size; a number too small to be a time
    since 1973 is left as it is, and so is anything else (text, datetimes)."""
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        return value
    if is_missing(float(value)):
        return None
    magnitude = abs(float(value))
    for unit, above in (("ns", 1e17), ("us", 1e14), ("ms", 1e11), ("s", 1e8)):
        if magnitude >= above:
            stamp = pd.Timestamp(int(value) if unit == "ns" else float(value), unit=unit, tz="UTC")
            return stamp.floor("us").isoformat()
    return value


def first_of(record: dict[str, Any], *keys: str) -> Any:
    """The first of ``keys`` present with a value (camelCase and snake_case spellings)."""
    for key in keys:
        value = record.get(key)
        if not is_missing(value):
            return value
    return None


def cell(value: Any) -> Any:
    """A value fit for a table cell: scalars as they are, times as ISO text, lists joined."""
    value = plain(value) if not isinstance(value, str) else value
    if is_missing(value):
        return None
    if isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, (np.integer, np.floating, np.bool_)):
        return value.item()
    if isinstance(value, (datetime, date, pd.Timestamp)):
        return value.isoformat()
    if isinstance(value, list) and all(isinstance(v, (str, int, float)) for v in value):
        return ", ".join(str(v) for v in value)
    return json.dumps(value, ensure_ascii=False, default=str)


def metadata_columns(value: Any) -> dict[str, Any]:
    """A metadata object's plain values as ``metadata.KEY`` columns (nested ones are left out)."""
    value = plain(value)
    if not isinstance(value, dict):
        return {}
    out: dict[str, Any] = {}
    for key, item in value.items():
        item = plain(item) if not isinstance(item, str) else item
        if isinstance(item, dict) or (isinstance(item, list) and not all_scalars(item)):
            continue
        out[f"metadata.{key}"] = cell(item)
        if len(out) >= MAX_METADATA:
            break
    return out


def all_scalars(items: list[Any]) -> bool:
    return all(isinstance(v, (str, int, float, bool)) for v in items)


def pairs_table(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """Rows of ``{"user_input", "response", **extras}`` as a table (the two first, always)."""
    columns: dict[str, None] = {"user_input": None, "response": None}
    for row in rows:
        columns.update(dict.fromkeys(row))
    frame = pd.DataFrame(rows, columns=list(columns))
    frame = frame.astype(object).where(frame.notna(), None)
    for column in frame.columns[2:]:
        kinds = {type(v) for v in frame[column] if v is not None}
        if len(kinds) > 1 and not kinds <= {int, float}:  # 3 and "v3": text, as Parquet needs
            frame[column] = frame[column].map(lambda v: None if v is None else str(v))
    return frame


def pair_row(question: str, answer: str, extras: dict[str, Any]) -> dict[str, Any]:
    kept = {}
    for key, value in extras.items():
        if key in ("user_input", "response"):
            key = f"source_{key}"
        value = cell(value)
        if value is not None:
            kept[key] = value
    return {"user_input": question, "response": answer, **kept}


#: what OpenInference writes in place of a hidden input or output
#: (``OPENINFERENCE_HIDE_INPUTS``, ``..._HIDE_OUTPUTS``, ``..._HIDE_INPUT_TEXT``...)
REDACTED = "__REDACTED__"


def is_redacted(text: str) -> bool:
    """Text that is only the tracing's redaction placeholder (once or more)."""
    return REDACTED in text and not text.replace(REDACTED, "").strip(" \n\t:,;.-")


def keep_pair(
    report: ImportReport, noun: str, question: str, answer: str, *, failed: bool = False
) -> bool:
    """Count a record without a question or an answer as skipped; True when it is a pair. A
    question or answer the tracing redacted (OpenInference's ``__REDACTED__``) is not there.
    With ``report.keep_unanswered`` a question without an answer is kept (its row fails)."""
    if not question.strip():
        report.skip(noun, "without a question")
        return False
    if not answer.strip() and not report.keep_unanswered:
        report.skip(noun, "that failed" if failed else "without an answer")
        return False
    if is_redacted(question) or is_redacted(answer):
        which = "question" if is_redacted(question) else "answer"
        report.skip(noun, f"with the {which} redacted by the tracing ({REDACTED})")
        return False
    report.found += 1
    return True
