"""Prompt templates: a name and a text with ``{user_input}`` and any ``{column}`` of the questions.

A template's text is the user's message; a line of three dashes (``---``) splits it into a
system message (above) and the user's message (below). ``{{`` and ``}}`` are literal braces.
Everything here says what is wrong in one line (:class:`~relevancy.errors.InputError`), naming
the template and what to change.
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from relevancy.errors import InputError

__all__ = [
    "Template",
    "parse_prompt",
    "check_templates",
    "SEPARATOR",
    "VARIANT_JOIN",
]

#: the line that splits a template's text into its system and user parts
SEPARATOR = "---"
#: between a template's name and a model's in a variant (``concise · gpt-4o-mini``)
VARIANT_JOIN = " · "
_NAME = re.compile(r"^[^\s=@{}][^\n=@{}]{0,59}$")
_FORMATTER = string.Formatter()


@dataclass(frozen=True)
class Template:
    """A prompt template.

    Parameters
    ----------
    name : str
        Its short name: the first half of each of its variants' names.
    user : str
        The user's message, with ``{user_input}`` and any ``{column}`` of the questions.
    system : str
        The system message (``""``: none); it may hold fields too.
    """

    name: str
    user: str
    system: str = ""

    @classmethod
    def from_text(cls, name: str, text: str) -> Template:
        """A template from one text: a ``---`` line splits the system part from the user's."""
        lines = text.replace("\r\n", "\n").split("\n")
        cut = [i for i, line in enumerate(lines) if line.strip() == SEPARATOR]
        if not cut:
            return cls(check_name(name), text.strip())
        system, user = "\n".join(lines[: cut[0]]), "\n".join(lines[cut[0] + 1 :])
        return cls(check_name(name), user.strip(), system.strip())

    @property
    def text(self) -> str:
        """The template as one text (what :meth:`from_text` reads back)."""
        return f"{self.system}\n{SEPARATOR}\n{self.user}" if self.system else self.user

    def fields(self) -> list[str]:
        """The fields it names, in order, each once; :class:`InputError` for a malformed one."""
        found: list[str] = []
        for part in (self.system, self.user):
            try:
                parsed = list(_FORMATTER.parse(part))
            except ValueError as exc:
                raise InputError(
                    f"template {self.name!r}: {exc} (write {{{{ and }}}} for a literal brace)"
                ) from None
            for _, field, spec, conversion in parsed:
                if field is None:
                    continue
                if not field.isidentifier() or spec or conversion:
                    shown = "{" + field + ("!" + conversion if conversion else "")
                    shown += (":" + spec if spec else "") + "}"
                    raise InputError(
                        f"template {self.name!r}: {shown} is not a column name: write "
                        "{user_input} or {COLUMN} (and {{ }} for literal braces)"
                    )
                if field not in found:
                    found.append(field)
        return found

    def messages(self, values: Mapping[str, Any]) -> list[dict[str, str]]:
        """The chat messages for one question (``values``: its columns)."""
        text = {k: "" if _missing(v) else str(v) for k, v in values.items()}
        out = []
        if self.system:
            out.append({"role": "system", "content": _FORMATTER.vformat(self.system, (), text)})
        out.append({"role": "user", "content": _FORMATTER.vformat(self.user, (), text)})
        return out


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and value != value)


def check_name(name: str) -> str:
    """``name`` stripped, or :class:`InputError` when it cannot name a template."""
    name = str(name).strip()
    if not _NAME.match(name) or VARIANT_JOIN.strip() in name:
        raise InputError(
            f"template name {name!r}: give 1-60 characters on one line, without = @ {{ }} or ·"
        )
    return name


def parse_prompt(spec: str, *, base: Path | None = None) -> Template:
    """``NAME=TEXT`` or ``NAME=@FILE`` (a file's text, relative to ``base``) as a template."""
    name, sep, text = spec.partition("=")
    if not sep:
        raise InputError(f"--prompt {spec[:40]!r}: write NAME=TEXT or NAME=@FILE")
    if text.startswith("@"):
        path = Path(text[1:]).expanduser()
        if base is not None and not path.is_absolute():
            path = base / path
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            why = getattr(exc, "strerror", None) or type(exc).__name__
            raise InputError(
                f"template {name.strip()!r}: cannot read {str(path)!r} ({why}): give a UTF-8 "
                "text file"
            ) from None
    template = Template.from_text(name, text)
    if not template.user.strip():
        raise InputError(f"template {template.name!r} is empty: give the user's message")
    return template


def check_templates(templates: Sequence[Template], columns: Iterable[str]) -> list[str]:
    """Check ``templates`` against the questions' ``columns``: :class:`InputError` for an
    empty list, two templates with one name, or a field that is not a column (named, with the
    columns there are); the warnings (a template without ``{user_input}``) as lines."""
    if not templates:
        raise InputError("no prompt template: give --prompt NAME=TEXT (or [[prompts]] in a config)")
    columns = list(columns)
    seen: set[str] = set()
    warnings: list[str] = []
    for template in templates:
        if template.name in seen:
            raise InputError(f"two templates are named {template.name!r}: give each its own name")
        seen.add(template.name)
        fields = template.fields()
        missing = [f for f in fields if f not in columns]
        if missing:
            raise InputError(
                f"template {template.name!r} names {{{missing[0]}}}, which the questions lack; "
                f"their columns: {', '.join(columns)}"
            )
        if "user_input" not in fields:
            others = [f for f in fields if f != "user_input"]
            warnings.append(
                f"template {template.name!r} has no {{user_input}}: "
                + (
                    "the question itself is not in the prompt; only "
                    + ", ".join("{" + f + "}" for f in others)
                    + " changes from question to question"
                    if others
                    else "every question gets the same prompt"
                )
            )
    return warnings
