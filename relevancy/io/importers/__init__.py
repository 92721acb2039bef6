"""Reading what other tools export: Langfuse, LangSmith, Phoenix (spans in every shape,
dataset examples), MLflow traces, OpenAI chat records, Batch API files and request/response logs,
Hugging Face datasets.

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

from collections.abc import Iterable
from typing import Any

import pandas as pd

from relevancy.errors import InputError
from relevancy.io.importers._payloads import (
    as_messages,
    first_of,
    flatten,
    looks_like_repr,
    text_of,
)
from relevancy.io.importers.langfuse import LANGFUSE_TRACE_KEYS, LANGFUSE_TYPES, langfuse
from relevancy.io.importers.langsmith import is_langsmith_root, langsmith
from relevancy.io.importers.mlflow import is_mlflow_trace, mlflow_traces
from relevancy.io.importers.openai_batch import OpenAIRequests, batch_line, is_request_log
from relevancy.io.importers.openai_chat import openai_chat
from relevancy.io.importers.phoenix import is_otlp_span, is_phoenix_root, phoenix, readable_span
from relevancy.io.importers.phoenix_datasets import is_dataset_example, phoenix_examples
from relevancy.io.importers.report import ImportReport

__all__ = [
    "SOURCE_FORMATS",
    "FORMAT_NAMES",
    "ImportReport",
    "Importer",
    "detect",
    "text_of",
    "looks_like_repr",
    "langfuse",
    "langsmith",
    "phoenix",
    "phoenix_examples",
    "mlflow_traces",
    "openai_chat",
    "OpenAIRequests",
]

#: what ``--format`` accepts (``auto`` detects from the content)
SOURCE_FORMATS = (
    "auto",
    "table",
    "langfuse",
    "langsmith",
    "phoenix",
    "mlflow",
    "openai-chat",
    "openai-batch",
    "openai-log",
    "hf",
)
FORMAT_NAMES = {
    "auto": "detect from the content",
    "table": "a table, columns matched by name",
    "langfuse": "Langfuse traces or observations export",
    "langsmith": "LangSmith runs export",
    "phoenix": "Arize Phoenix spans (client frame, REST or OTLP JSON) or dataset examples",
    "mlflow": "MLflow traces (search_traces frame, CLI JSON, Trace.to_json)",
    "openai-chat": "OpenAI chat-format messages (fine-tuning or evals JSONL)",
    "openai-batch": "OpenAI Batch API input and output files, joined on custom_id",
    "openai-log": "OpenAI request/response records",
    "hf": "Hugging Face dataset (save_to_disk folder, .arrow or .parquet)",
}
_SAMPLE = 50  #: records looked at to detect the format


# --- detection ---------------------------------------------------------------------------------
def _looks_like(record: dict[str, Any]) -> str | None:
    keys = set(record)
    if "run_type" in keys and keys & {"inputs", "outputs"}:
        return "langsmith"
    if is_mlflow_trace(record):
        return "mlflow"
    if is_otlp_span(record):
        return "phoenix"
    flat = flatten(record)
    if {"attributes.input.value", "attributes.output.value"} & set(flat) or (
        "context.span_id" in flat and "span_kind" in flat
    ):
        return "phoenix"
    if (
        keys & {"traceId", "trace_id"}
        and str(record.get("type") or "").upper() in LANGFUSE_TYPES
        and keys & {"input", "output"}
    ):
        return "langfuse"
    if "timestamp" in keys and keys & {"input", "output"} and keys & LANGFUSE_TRACE_KEYS:
        return "langfuse"
    if batch_line(record):
        return "openai-batch"
    if is_request_log(record):
        return "openai-log"
    if is_dataset_example(record):
        return "phoenix"
    if as_messages(record.get("messages")) is not None:
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
    "mlflow": "MLflow traces",
    "openai-chat": "OpenAI chat messages",
    "openai-batch": "OpenAI batch requests",
    "openai-log": "OpenAI requests",
}
_FIELDS = {
    "langfuse": "an input or output",
    "langsmith": "inputs or outputs",
    "phoenix": "attributes.input.value or attributes.output.value (or an input and an output)",
    "mlflow": "a request or a response",
    "openai-chat": "a list of chat messages",
    "openai-batch": "a custom_id with a request body or a response",
    "openai-log": "a request with messages and a response",
}
_HINTS = {
    "langfuse": "export traces (or generations) that have both an input and an output",
    "langsmith": "export runs that finished with outputs (root runs hold the question and answer)",
    "phoenix": "export spans whose input.value and output.value are set",
    "mlflow": "export traces that finished with a response",
    "openai-chat": "each record needs a user message followed by an assistant reply",
    "openai-batch": "give the batch's input file and its output file (one folder, or one file)",
    "openai-log": "each record needs a request with messages and the response to it",
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
        #: batch requests wait here for their responses (and the other way round)
        self._requests: OpenAIRequests | None = None

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
            if options.get("examples"):
                return phoenix_examples(records, report)
            return phoenix(records, report, roots_only=options["roots_only"])
        if report.format == "mlflow":
            return mlflow_traces(records, report)
        if self._requests is not None:
            return self._requests(records, report)
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
            observations = sum(bool(first_of(r, "traceId", "trace_id")) for r in sample)
            observations_mode = bool(sample) and observations * 2 >= len(sample)
            generations = any(str(r.get("type") or "").upper() == "GENERATION" for r in records)
            self._options = {
                "observations": observations_mode,
                "generations_only": observations_mode and generations,
            }
            report.label = "Langfuse observations" if observations_mode else "Langfuse traces"
            if observations_mode and generations:
                report.note = "generations only"
        elif report.format == "phoenix" and _mostly(is_dataset_example, sample):
            self._options = {"examples": True}
            report.label = "Phoenix dataset examples"
        elif report.format in ("langsmith", "phoenix"):
            is_root = is_langsmith_root if report.format == "langsmith" else is_phoenix_root
            roots = [
                is_root(readable_span(r) if report.format == "phoenix" else r) for r in records
            ]
            self._options = {"roots_only": any(roots)}
            if report.format == "phoenix" and _mostly(is_otlp_span, sample):
                report.label = "Phoenix spans (OTLP)"
        elif report.format in ("openai-batch", "openai-log"):
            self._requests = OpenAIRequests()
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
            return as_messages(record.get("messages")) is not None
        if kind == "langsmith":
            return bool({"inputs", "outputs"} & set(record))
        if kind == "phoenix":
            if is_dataset_example(record):
                return True
            flat = readable_span(record)
            return any(k.startswith(("attributes.input", "attributes.output")) for k in flat)
        if kind == "mlflow":
            return is_mlflow_trace(record)
        if kind in ("openai-batch", "openai-log"):
            return batch_line(record) is not None or is_request_log(record)
        return bool({"input", "output"} & set(record))

    def finish(self) -> ImportReport:
        """The report, once every chunk is read; an import with no pair at all is an error."""
        report = self.report
        if self._requests is not None:
            self._requests.finish(report)
        if report.format != "table" and not report.found:
            redacted = any("redacted" in why for _, why in report.skipped)
            hint = (
                "the tracing hid them (OPENINFERENCE_HIDE_INPUTS, ..._HIDE_OUTPUTS): score "
                "spans traced without it"
                if redacted
                else _HINTS.get(report.format, "check the export")
            )
            raise InputError(
                f"{self.name!r} has no question/answer pair to score ({report.describe()}): {hint}"
            )
        return report


def _mostly(test: Any, sample: list[dict[str, Any]]) -> bool:
    return bool(sample) and sum(bool(test(r)) for r in sample) * 2 >= len(sample)
