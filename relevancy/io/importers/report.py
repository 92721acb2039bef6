"""What an import found, in one line (:meth:`ImportReport.describe`)."""

from __future__ import annotations

from dataclasses import dataclass, field

#: skipped lines listed by line number (the rest are counted)
KEEP_BAD_LINES = 20


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
    #: lines of a JSONL or CSV file that could not be read and were skipped: (line, why), the
    #: first :data:`KEEP_BAD_LINES`; ``n_bad_lines`` counts them all
    bad_lines: list[tuple[int, str]] = field(default_factory=list)
    n_bad_lines: int = 0
    #: records read but not understood (a span with a value of the wrong type): (what, why),
    #: the first :data:`KEEP_BAD_LINES`; ``n_bad_records`` counts them all
    bad_records: list[tuple[str, str]] = field(default_factory=list)
    n_bad_records: int = 0
    #: keep a record that has a question but no answer (a followed source: the row is kept and
    #: fails for that reason of its own, said in the run, instead of vanishing)
    keep_unanswered: bool = False

    def bad_line(self, line: int, why: str) -> None:
        """Note a line of the file that could not be read (it is skipped)."""
        self.n_bad_lines += 1
        if len(self.bad_lines) < KEEP_BAD_LINES:
            self.bad_lines.append((line, why))

    def bad_record(self, what: str, why: str) -> None:
        """Note a record that could not be read (``what``: ``"span 5f2a..."``); it is skipped."""
        self.n_bad_records += 1
        if len(self.bad_records) < KEEP_BAD_LINES:
            self.bad_records.append((what, why))

    def describe_bad_lines(self) -> list[str]:
        """One line per skipped line or record kept, then one for the rest of each: for the
        CLI's notes."""
        lines = [f"line {n} skipped: {why}" for n, why in self.bad_lines]
        if self.n_bad_lines > len(self.bad_lines):
            lines.append(f"... and {self.n_bad_lines - len(self.bad_lines):,} more lines skipped")
        lines += [f"{what} skipped: {why}" for what, why in self.bad_records]
        if self.n_bad_records > len(self.bad_records):
            more = self.n_bad_records - len(self.bad_records)
            lines.append(f"... and {more:,} more records skipped")
        return lines

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
            return f"{self.title}: {count_of(self.found, 'row')}, columns matched by name"
        parts = [f"{count_of(self.found, 'question/answer pair')} found"]
        parts += [
            " ".join(filter(None, (count_of(n, noun), why, "skipped")))
            for (noun, why), n in self.skipped.items()
        ]
        return f"{self.title}: " + ", ".join(parts) + (f" ({self.note})" if self.note else "")


def count_of(n: int, noun: str) -> str:
    return f"{n:,} {noun}" + ("" if n == 1 else "s")
