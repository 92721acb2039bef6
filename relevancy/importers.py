"""Reading what other tools export: Langfuse, LangSmith, Phoenix, OpenAI chat logs, HF datasets.

Each importer turns the records of one chunk into a table with ``user_input`` and ``response``
plus the fields worth keeping (trace id, model, prompt version, tags, timestamps) as extra
columns, which can then be chosen as the ``variant`` or used to split and filter results.
Records without a question or an answer are skipped and counted, never guessed.

:class:`Importer` detects the format from the first chunk's content (or takes the one it is
given), converts every chunk the same way and keeps an :class:`ImportReport`, whose
:meth:`~ImportReport.describe` says in one line what was found::

    Langfuse traces: 412 question/answer pairs found, 3 traces without an answer skipped

Payloads are read where each tool documents them: a plain string, a JSON object with a
``question``/``input``/``answer``/``output``-like key, a list of chat messages (OpenAI, Anthropic,
LangChain or OpenInference shape; the last user turn is the question and the assistant's reply
after it the answer), an OpenAI response (``choices``) or LangChain ``generations``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any

import numpy as np
import pandas as pd

from relevancy._errors import InputError

__all__ = [
    "SOURCE_FORMATS",
    "FORMAT_NAMES",
    "ImportReport",
    "Importer",
    "detect",
    "text_of",
    "langfuse",
    "langsmith",
    "phoenix",
    "openai_chat",
]

#: what ``--format`` accepts (``auto`` detects from the content)
SOURCE_FORMATS = ("auto", "table", "langfuse", "langsmith", "phoenix", "openai-chat", "hf")
FORMAT_NAMES = {
    "auto": "detect from the content",
    "table": "a table, columns matched by name",
    "langfuse": "Langfuse traces or observations export",
    "langsmith": "LangSmith runs export",
    "phoenix": "Arize Phoenix spans export",
    "openai-chat": "OpenAI chat-format messages",
    "hf": "Hugging Face dataset (save_to_disk folder, .arrow or .parquet)",
}
_NOT_TEXT = {"error", "errors", "exception", "status", "detail", "traceback"}  #: never an answer
_SAMPLE = 50  #: records looked at to detect the format
_MAX_METADATA = 20  #: metadata keys kept as columns per record
_LANGFUSE_TRACE_KEYS = {
    "sessionId", "session_id", "userId", "user_id", "release", "htmlPath", "html_path",
    "latency", "totalCost", "total_cost", "public", "bookmarked", "environment", "projectId",
    "project_id", "observations", "scores",
}  # fmt: skip
_LANGFUSE_TYPES = {
    "GENERATION", "SPAN", "EVENT", "AGENT", "TOOL", "CHAIN", "RETRIEVER", "EVALUATOR",
    "EMBEDDING", "GUARDRAIL",
}  # fmt: skip
_ROLE_NAMES = {
    "user": "user", "human": "user", "humanmessage": "user", "humanmessagechunk": "user",
    "assistant": "assistant", "ai": "assistant", "aimessage": "assistant",
    "aimessagechunk": "assistant", "model": "assistant", "system": "system",
    "developer": "system", "systemmessage": "system", "tool": "tool", "function": "tool",
    "toolmessage": "tool", "functionmessage": "tool",
}  # fmt: skip
_KEYS = {
    "q": ("question", "query", "user_input", "input", "inputs", "prompt", "prompts", "text",
          "content", "message", "user_message", "human_input", "q"),
    "a": ("answer", "response", "output", "outputs", "result", "completion", "generation",
          "text", "content", "message", "reply", "output_text", "a"),
}  # fmt: skip


# --- the report --------------------------------------------------------------------------------
@dataclass
class ImportReport:
    """What an import found: the format read and the records kept and skipped."""

    format: str = "table"  #: the layout read: one of ``SOURCE_FORMATS`` less auto and hf
    label: str = "Table"  #: in words: "Langfuse traces", "LangSmith runs"...
    source: str = ""  #: the container when it says something: "Hugging Face dataset (...)"
    detected: bool = True  #: False when the format was given, not detected
    found: int = 0  #: rows kept (question/answer pairs for an import)
    skipped: dict[tuple[str, str], int] = field(default_factory=dict)  #: (noun, why) -> count
    note: str = ""  #: how records were chosen ("root runs only")

    def skip(self, noun: str, why: str, n: int = 1) -> None:
        self.skipped[(noun, why)] = self.skipped.get((noun, why), 0) + n

    @property
    def n_skipped(self) -> int:
        return sum(self.skipped.values())

    @property
    def title(self) -> str:
        """The format in words: "Langfuse traces", "Hugging Face dataset (split train)"."""
        if self.source and self.format == "table":
            return self.source
        return f"{self.source}, {self.label}" if self.source else self.label

    def describe(self) -> str:
        """One line: "Langfuse traces: 412 question/answer pairs found, 3 traces without an
        answer skipped"."""
        if self.format == "table":
            return f"{self.title}: {_count(self.found, 'row')}, columns matched by name"
        parts = [f"{_count(self.found, 'question/answer pair')} found"]
        parts += [
            " ".join(filter(None, (_count(n, noun), why, "skipped")))
            for (noun, why), n in self.skipped.items()
        ]
        return f"{self.title}: " + ", ".join(parts) + (f" ({self.note})" if self.note else "")


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}" + ("" if n == 1 else "s")


# --- reading payloads --------------------------------------------------------------------------
def _missing(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, float):
        return math.isnan(value)
    return value is pd.NaT or (isinstance(value, str) and not value.strip())


def _plain(value: Any) -> Any:
    """numpy arrays as lists, JSON text as what it holds; anything else as it is."""
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
                return value
    return value


def _content_text(content: Any) -> str:
    """A message's content: a string, or the text parts of a list of parts."""
    content = _plain(content)
    if isinstance(content, str):
        return content if content.strip() else ""
    if isinstance(content, list):
        texts = []
        for part in map(_plain, content):
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, dict) and isinstance(part.get("text"), str):
                texts.append(part["text"])
        return "\n".join(t for t in texts if t.strip())
    if isinstance(content, dict) and isinstance(content.get("text"), str):
        return content["text"]
    return ""


def _message(item: Any) -> tuple[str, str] | None:
    """``(role, text)`` of one chat message in any of the shapes the tools write, else None."""
    item = _plain(item)
    if not isinstance(item, dict):
        return None
    if "message.role" in item:  # OpenInference, flattened
        role = _ROLE_NAMES.get(str(item["message.role"]).lower())
        content = item.get("message.content", item.get("message.contents"))
        return (role, _content_text(content)) if role else None
    if item.get("lc") == 1 and isinstance(item.get("kwargs"), dict):  # LangChain, serialized
        ids = item.get("id") or [""]
        kwargs = item["kwargs"]
        role = _ROLE_NAMES.get(str(kwargs.get("type") or ids[-1]).lower())
        return (role, _content_text(kwargs.get("content"))) if role else None
    role_value = item.get("role", item.get("type"))
    role = _ROLE_NAMES.get(str(role_value).lower()) if isinstance(role_value, str) else None
    if role is None:
        inner = item.get("message")  # {"message": {...}}: OpenInference nested, ChatGeneration
        return _message(inner) if isinstance(inner, dict) else None
    data = item.get("data") if isinstance(item.get("data"), dict) else {}  # LangChain dict
    return role, _content_text(item.get("content", data.get("content")))


def _messages(value: Any) -> list[tuple[str, str]] | None:
    """The chat messages in ``value`` (a list, or a list of lists), or None if it is not one."""
    value = _plain(value)
    if not isinstance(value, list) or not value:
        return None
    if all(isinstance(_plain(v), list) for v in value):  # LangChain batches: [[...]]
        value = [m for batch in value for m in _plain(batch)]
    parsed = [_message(v) for v in value]
    found = [m for m in parsed if m is not None]
    return found if found and len(found) * 2 >= len(value) else None


def _chat_pair(messages: list[tuple[str, str]]) -> tuple[str, str]:
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
    if _depth > 8 or _missing(value):
        return ""
    value = _plain(value)
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return ""
    if isinstance(value, (int, float, np.integer, np.floating)):
        return "" if _missing(float(value)) else str(value)
    messages = _messages(value)
    if messages is not None:
        return _chat_pair(messages)[0 if side == "q" else 1]
    if isinstance(value, list):
        if all(isinstance(v, str) for v in value):
            return "\n".join(v for v in value if v.strip())
        for item in value:
            if text := text_of(item, side, _depth + 1):
                return text
        return ""
    if not isinstance(value, dict):
        return ""
    message = _message(value)
    if message is not None:
        return message[1]
    for key in ("messages", "choices", "generations"):
        if key in value and (text := text_of(value[key], side, _depth + 1)):
            return text
    if value.get("lc") == 1 and isinstance(value.get("kwargs"), dict):
        return text_of(value["kwargs"], side, _depth + 1)
    for key in _KEYS[side]:
        if key in value and (text := text_of(value[key], side, _depth + 1)):
            return text
    if "args" in value or "kwargs" in value:  # a decorated function's call (Langfuse @observe)
        return text_of(value.get("kwargs"), side, _depth + 1) or text_of(
            value.get("args"), side, _depth + 1
        )
    if len(value) == 1 and next(iter(value)) not in _NOT_TEXT:
        return text_of(next(iter(value.values())), side, _depth + 1)
    return ""


def _flatten(record: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested objects as dotted keys: ``{"attributes": {"input": {"value": x}}}`` ->
    ``{"attributes.input.value": x}`` (Phoenix writes both shapes)."""
    out: dict[str, Any] = {}
    for key, value in record.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            out.update(_flatten(value, name + "."))
        else:
            out[name] = value
    return out


def _get(record: dict[str, Any], *keys: str) -> Any:
    """The first of ``keys`` present with a value (camelCase and snake_case spellings)."""
    for key in keys:
        value = record.get(key)
        if not _missing(value):
            return value
    return None


def _cell(value: Any) -> Any:
    """A value fit for a table cell: scalars as they are, times as ISO text, lists joined."""
    value = _plain(value) if not isinstance(value, str) else value
    if _missing(value):
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


def _metadata(value: Any) -> dict[str, Any]:
    """A metadata object's plain values as ``metadata.KEY`` columns (nested ones are left out)."""
    value = _plain(value)
    if not isinstance(value, dict):
        return {}
    out: dict[str, Any] = {}
    for key, item in value.items():
        item = _plain(item) if not isinstance(item, str) else item
        if isinstance(item, dict) or (isinstance(item, list) and not _scalars(item)):
            continue
        out[f"metadata.{key}"] = _cell(item)
        if len(out) >= _MAX_METADATA:
            break
    return out


def _scalars(items: list[Any]) -> bool:
    return all(isinstance(v, (str, int, float, bool)) for v in items)


def _table(rows: list[dict[str, Any]]) -> pd.DataFrame:
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


def _row(question: str, answer: str, extras: dict[str, Any]) -> dict[str, Any]:
    kept = {}
    for key, value in extras.items():
        if key in ("user_input", "response"):
            key = f"source_{key}"
        value = _cell(value)
        if value is not None:
            kept[key] = value
    return {"user_input": question, "response": answer, **kept}


def _pair(
    report: ImportReport, noun: str, question: str, answer: str, *, failed: bool = False
) -> bool:
    """Count a record without a question or an answer as skipped; True when it is a pair."""
    if not question.strip():
        report.skip(noun, "without a question")
        return False
    if not answer.strip():
        report.skip(noun, "that failed" if failed else "without an answer")
        return False
    report.found += 1
    return True


# --- the importers -----------------------------------------------------------------------------
def langfuse(
    records: Iterable[dict[str, Any]], report: ImportReport, *, observations: bool = False,
    generations_only: bool = True,
) -> pd.DataFrame:  # fmt: skip
    """Langfuse traces (their ``input`` and ``output``) or observations (each generation's last
    user message and its output); camelCase (API, UI export) or snake_case (blob export)."""
    rows = []
    for r in records:
        if observations:
            kind = str(r.get("type") or "").upper()
            if generations_only and kind != "GENERATION":
                report.skip("observation", "other than generations")
                continue
            noun = "generation" if kind == "GENERATION" else "observation"
        else:
            noun = "trace"
        question = text_of(r.get("input"), "q")
        answer = text_of(r.get("output"), "a")
        failed = str(r.get("level") or "").upper() == "ERROR"
        if not _pair(report, noun, question, answer, failed=failed):
            continue
        if observations:
            extras = {
                "observation_id": r.get("id"),
                "trace_id": _get(r, "traceId", "trace_id"),
                "name": r.get("name"),
                "model": _get(r, "model", "providedModelName", "provided_model_name"),
                "prompt_name": _get(r, "promptName", "prompt_name"),
                "prompt_version": _get(r, "promptVersion", "prompt_version"),
                "start_time": _get(r, "startTime", "start_time"),
                "end_time": _get(r, "endTime", "end_time"),
                "trace_name": _get(r, "traceName", "trace_name"),
            }
        else:
            extras = {
                "trace_id": r.get("id"),
                "name": r.get("name"),
                "timestamp": r.get("timestamp"),
                "release": r.get("release"),
                "latency": r.get("latency"),
                "total_cost": _get(r, "totalCost", "total_cost"),
            }
        extras.update({
            "version": r.get("version"),
            "environment": r.get("environment"),
            "user_id": _get(r, "userId", "user_id"),
            "session_id": _get(r, "sessionId", "session_id"),
            "tags": r.get("tags"),
            **_metadata(r.get("metadata")),
        })  # fmt: skip
        rows.append(_row(question, answer, extras))
    return _table(rows)


def _langsmith_root(r: dict[str, Any]) -> bool:
    if "is_root" in r and not _missing(r["is_root"]):
        return bool(r["is_root"])
    return _missing(r.get("parent_run_id")) and not _plain(r.get("parent_run_ids"))


def langsmith(
    records: Iterable[dict[str, Any]], report: ImportReport, *, roots_only: bool = True
) -> pd.DataFrame:
    """LangSmith runs: the root run of each trace (its ``inputs`` and ``outputs``); the child
    runs (LLM calls, retrievers, tools) are counted and skipped."""
    rows = []
    for r in records:
        if roots_only and not _langsmith_root(r):
            report.skip("child run", "")
            continue
        question = text_of(r.get("inputs"), "q")
        answer = text_of(r.get("outputs"), "a")
        if not _pair(report, "run", question, answer, failed=not _missing(r.get("error"))):
            continue
        extra = _plain(r.get("extra"))
        extra = extra if isinstance(extra, dict) else {}
        meta = _plain(extra.get("metadata"))
        meta = meta if isinstance(meta, dict) else {}
        params = _plain(extra.get("invocation_params"))
        params = params if isinstance(params, dict) else {}
        extras = {
            "run_id": r.get("id"),
            "trace_id": r.get("trace_id"),
            "name": r.get("name"),
            "run_type": r.get("run_type"),
            "model": _get(meta, "ls_model_name") or _get(params, "model", "model_name"),
            "start_time": r.get("start_time"),
            "end_time": r.get("end_time"),
            "status": r.get("status"),
            "tags": r.get("tags"),
            "session_id": r.get("session_id"),
            "example_id": r.get("reference_example_id"),
            "total_tokens": r.get("total_tokens"),
            **_metadata({k: v for k, v in meta.items() if not k.startswith("ls_")}),
        }
        rows.append(_row(question, answer, extras))
    return _table(rows)


def _phoenix_root(r: dict[str, Any]) -> bool:
    return _missing(r.get("parent_id"))


def phoenix(
    records: Iterable[dict[str, Any]], report: ImportReport, *, roots_only: bool = True
) -> pd.DataFrame:
    """Arize Phoenix spans: ``attributes.input.value`` and ``attributes.output.value`` (or an
    LLM span's input and output messages) of each trace's root span; child spans are skipped."""
    rows = []
    for record in records:
        r = _flatten(record)
        if roots_only and not _phoenix_root(r):
            report.skip("child span", "")
            continue
        question = text_of(r.get("attributes.input.value"), "q") or text_of(
            r.get("attributes.llm.input_messages"), "q"
        )
        answer = text_of(r.get("attributes.output.value"), "a") or text_of(
            r.get("attributes.llm.output_messages"), "a"
        )
        failed = str(r.get("status_code") or "").upper() == "ERROR"
        if not _pair(report, "span", question, answer, failed=failed):
            continue
        extras = {
            "span_id": _get(r, "context.span_id", "span_id"),
            "trace_id": _get(r, "context.trace_id", "trace_id"),
            "name": r.get("name"),
            "span_kind": _get(r, "span_kind", "attributes.openinference.span.kind"),
            "model": r.get("attributes.llm.model_name"),
            "prompt_version": r.get("attributes.llm.prompt_template.version"),
            "start_time": r.get("start_time"),
            "end_time": r.get("end_time"),
            "status_code": r.get("status_code"),
            "tags": r.get("attributes.tag.tags"),
            "session_id": r.get("attributes.session.id"),
            "user_id": r.get("attributes.user.id"),
            **_metadata(r.get("attributes.metadata")),
            **{
                k[len("attributes.") :]: v
                for k, v in r.items()
                if k.startswith("attributes.metadata.")
            },
        }
        rows.append(_row(question, answer, extras))
    return _table(rows)


def openai_chat(records: Iterable[dict[str, Any]], report: ImportReport) -> pd.DataFrame:
    """OpenAI chat-format records (``{"messages": [...]}``): the last user turn is the question,
    the assistant's reply after it the answer; the system prompt and other fields are kept."""
    rows = []
    for r in records:
        messages = _messages(r.get("messages")) or []
        question, answer = _chat_pair(messages)
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
            if key == "messages":
                continue
            value = _plain(value) if not isinstance(value, str) else value
            if key == "metadata" and isinstance(value, dict):
                extras.update(_metadata(value))
            elif not isinstance(value, (dict, list)) or _scalars(value):
                extras[key] = value
        rows.append(_row(question, answer, extras))
    return _table(rows)


# --- detection ---------------------------------------------------------------------------------
def _looks_like(record: dict[str, Any]) -> str | None:
    keys = set(record)
    if "run_type" in keys and keys & {"inputs", "outputs"}:
        return "langsmith"
    flat = _flatten(record)
    if {"attributes.input.value", "attributes.output.value"} & set(flat) or (
        "context.span_id" in flat and "span_kind" in flat
    ):
        return "phoenix"
    if (
        keys & {"traceId", "trace_id"}
        and str(record.get("type") or "").upper() in _LANGFUSE_TYPES
        and keys & {"input", "output"}
    ):
        return "langfuse"
    if "timestamp" in keys and keys & {"input", "output"} and keys & _LANGFUSE_TRACE_KEYS:
        return "langfuse"
    if _messages(record.get("messages")) is not None:
        return "openai-chat"
    return None


def detect(records: list[dict[str, Any]], *, among: Iterable[str] | None = None) -> str:
    """The format most of the first records look like (``"table"`` when none stands out)."""
    sample = records[:_SAMPLE]
    votes: dict[str, int] = {}
    for record in sample:
        kind = _looks_like(record)
        if kind and (among is None or kind in among):
            votes[kind] = votes.get(kind, 0) + 1
    if votes:
        best = max(votes, key=lambda k: votes[k])
        if votes[best] * 2 >= len(sample):
            return best
    return "table"


def _records(chunk: list[dict[str, Any]] | pd.DataFrame) -> list[dict[str, Any]]:
    if isinstance(chunk, pd.DataFrame):
        return chunk.to_dict(orient="records")
    return chunk


_LABELS = {
    "table": "Table",
    "langsmith": "LangSmith runs",
    "phoenix": "Phoenix spans",
    "openai-chat": "OpenAI chat messages",
}
_FIELDS = {
    "langfuse": "an input or output",
    "langsmith": "inputs or outputs",
    "phoenix": "attributes.input.value or attributes.output.value",
    "openai-chat": "a list of chat messages",
}
_HINTS = {
    "langfuse": "export traces (or generations) that have both an input and an output",
    "langsmith": "export runs that finished with outputs (root runs hold the question and answer)",
    "phoenix": "export spans whose input.value and output.value are set",
    "openai-chat": "each record needs a user message followed by an assistant reply",
}


class Importer:
    """Detect the format on the first chunk, then convert every chunk into a question/answer
    table the same way (``importer(chunk)``); :attr:`report` keeps the counts.

    ``source_format`` is one of :data:`SOURCE_FORMATS`; ``source`` names a container worth
    naming ("Hugging Face dataset (split train)"); with ``"hf"`` only the table and chat
    layouts are looked for.
    """

    def __init__(
        self,
        name: str,
        source_format: str = "auto",
        *,
        source: str = "",
        report: ImportReport | None = None,
    ) -> None:
        if source_format not in SOURCE_FORMATS:
            raise InputError(
                f"unknown format {source_format!r}: use one of {', '.join(SOURCE_FORMATS)}"
            )
        self.name = name
        self.wanted = source_format
        self.report = report if report is not None else ImportReport()
        self.report.source = source
        self._options: dict[str, Any] | None = None

    def __call__(self, chunk: list[dict[str, Any]] | pd.DataFrame) -> pd.DataFrame:
        report = self.report
        records = None
        if self._options is None:
            records = _records(chunk)
            self._start(records)
        if report.format == "table":
            frame = chunk if isinstance(chunk, pd.DataFrame) else pd.DataFrame(chunk)
            report.found += len(frame)
            return frame
        records = records if records is not None else _records(chunk)
        options = self._options or {}
        if report.format == "langfuse":
            return langfuse(records, report, **options)
        if report.format == "langsmith":
            return langsmith(records, report, **options)
        if report.format == "phoenix":
            return phoenix(records, report, **options)
        return openai_chat(records, report)

    def _start(self, records: list[dict[str, Any]]) -> None:
        """Choose the format (detected or given) and how records are picked, once."""
        report = self.report
        if self.wanted in ("auto", "hf"):
            among = ("openai-chat",) if self.wanted == "hf" else None
            report.format, report.detected = detect(records, among=among), True
        else:
            report.format, report.detected = self.wanted, False
        report.label = _LABELS.get(report.format, "")
        sample = records[:_SAMPLE]
        self._options = {}
        # how records are picked is decided on the whole first chunk (CHUNK_ROWS records in the
        # CLI), so that a long first trace of child runs does not hide the roots
        if report.format == "langfuse":
            observations = sum(bool(_get(r, "traceId", "trace_id")) for r in sample)
            observations_mode = bool(sample) and observations * 2 >= len(sample)
            generations = any(str(r.get("type") or "").upper() == "GENERATION" for r in records)
            self._options = {
                "observations": observations_mode,
                "generations_only": observations_mode and generations,
            }
            report.label = "Langfuse observations" if observations_mode else "Langfuse traces"
            if observations_mode and generations:
                report.note = "generations only"
        elif report.format in ("langsmith", "phoenix"):
            is_root = _langsmith_root if report.format == "langsmith" else _phoenix_root
            roots = [is_root(_flatten(r) if report.format == "phoenix" else r) for r in records]
            self._options = {"roots_only": any(roots)}
            if any(roots) and not all(roots):
                unit = "run" if report.format == "langsmith" else "span"
                report.note = f"each trace read from its root {unit}"
        usable = any(self._usable(r) for r in sample)
        if not report.detected and report.format != "table" and sample and not usable:
            raise InputError(
                f"{self.name!r} cannot be read as {report.format!r} (none of its first "
                f"records has {_FIELDS[report.format]}): set the format to auto, or to the tool "
                "that wrote it"
            )

    def _usable(self, record: dict[str, Any]) -> bool:
        kind = self.report.format
        if kind == "openai-chat":
            return _messages(record.get("messages")) is not None
        if kind == "langsmith":
            return bool({"inputs", "outputs"} & set(record))
        if kind == "phoenix":
            flat = _flatten(record)
            return any(k.startswith(("attributes.input", "attributes.output")) for k in flat)
        return bool({"input", "output"} & set(record))

    def finish(self) -> ImportReport:
        """The report, once every chunk is read; an import with no pair at all is an error."""
        report = self.report
        if report.format != "table" and not report.found:
            raise InputError(
                f"{self.name!r} has no question/answer pair to score ({report.describe()}): "
                + _HINTS.get(report.format, "check the export")
            )
        return report
