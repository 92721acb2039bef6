"""An experiment's TOML file: the prompts, the models, their settings, the questions and the judge.

::

    questions = "questions.csv"      # or "demo", or "run:NAME"
    models = ["gpt-4o-mini", "gpt-4.1-mini"]   # "local": the embedded model
    base_url = "http://127.0.0.1:8080/v1"      # optional; the key comes from OPENAI_API_KEY
    temperature = 0.0
    max_tokens = 300
    seed = 0
    repeats = 1
    save_run = "prompts-2025-06"
    output = "experiment.csv"

    [judge]                          # the options of `relevancy score`
    llm = "openai:gpt-4o-mini"
    embeddings = "openai:text-embedding-3-small"

    [[prompts]]
    name = "concise"
    system = "Answer in one sentence."
    user = "{user_input}"

    [[prompts]]
    name = "grounded"
    file = "prompts/grounded.txt"    # relative to this file; a --- line splits system/user

An API key is never read from the file (it would be checked into a repository): the
environment gives it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from relevancy.core.modes import MODES
from relevancy.core.noncommittal import DETECTORS
from relevancy.errors import InputError
from relevancy.experiments.templates import Template, check_name, parse_prompt
from relevancy.scoring.metric import PROMPT_LANGUAGES

try:  # Python 3.11+
    import tomllib
except ImportError:  # pragma: no cover - Python 3.10
    tomllib = None  # type: ignore[assignment]

__all__ = ["ExperimentConfig", "load_config", "TOP_KEYS", "JUDGE_KEYS"]

TOP_KEYS = (
    "questions",
    "models",
    "base_url",
    "temperature",
    "max_tokens",
    "seed",
    "repeats",
    "save_run",
    "output",
    "prompts",
    "judge",
)
#: what ``[judge]`` may set: `relevancy score`'s options, by their long names
JUDGE_KEYS = (
    "llm",
    "embeddings",
    "strictness",
    "mode",
    "noncommittal",
    "threshold",
    "seed",
    "min_questions",
    "prompt_language",
    "timeout",
)
_TYPES: dict[str, tuple[type, ...]] = {
    "questions": (str,),
    "base_url": (str,),
    "temperature": (int, float),
    "max_tokens": (int,),
    "seed": (int,),
    "repeats": (int,),
    "save_run": (str,),
    "output": (str,),
}
#: the numbers' ranges, as the command line's options check them (low, high)
SEED_MAX = 2**31 - 1
_RANGES: dict[str, tuple[float, float]] = {
    "temperature": (0, 2),
    "max_tokens": (1, 100_000),
    "seed": (0, SEED_MAX),
    "repeats": (1, 100),
}
#: ``[judge]``'s checks: numbers (kinds, low, high) and choices
_JUDGE_NUMBERS: dict[str, tuple[tuple[type, ...], float, float]] = {
    "strictness": ((int,), 1, 10),
    "min_questions": ((int,), 1, 10),
    "threshold": ((int, float), -1, 1),
    "seed": ((int,), 0, SEED_MAX),
    "timeout": ((int, float), 0, 86_400),
}
_KIND_WORDS = {int: "an integer", float: "a number", str: "a string"}


def _kind(kinds: tuple[type, ...]) -> str:
    return (
        "a number" if float in kinds else " or ".join(_KIND_WORDS.get(k, k.__name__) for k in kinds)
    )


def _checked(name: str, key: str, value: Any, kinds: tuple[type, ...], span: Any = None) -> Any:
    """``value`` when it is of ``kinds`` (within ``span``), else :class:`InputError` in one line
    naming the key, the value and what is allowed."""
    wanted = _kind(kinds) + (f" from {span[0]} to {span[1]}" if span is not None else "")
    fits = isinstance(value, kinds) and not isinstance(value, bool)
    if not fits or (span is not None and not span[0] <= value <= span[1]):
        raise InputError(f"{name}: {key} must be {wanted}, got {value!r}")
    return value


@dataclass
class ExperimentConfig:
    """What a config file says; ``None`` (or empty) where it says nothing."""

    path: Path
    templates: list[Template] = field(default_factory=list)
    models: list[str] = field(default_factory=list)
    values: dict[str, Any] = field(default_factory=dict)  #: questions, base_url, seed...
    judge: dict[str, Any] = field(default_factory=dict)


def load_config(path: str | Path) -> ExperimentConfig:
    """Read an experiment's TOML file; :class:`InputError` in one line when it is wrong."""
    path = Path(path).expanduser()
    name = path.name
    if tomllib is None:  # pragma: no cover - Python 3.10
        raise InputError("a TOML config needs Python 3.11 or later: give --prompt options instead")
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"config file not found: {str(path)!r}") from None
    except (OSError, UnicodeDecodeError) as exc:
        why = getattr(exc, "strerror", None) or type(exc).__name__
        raise InputError(f"cannot read {str(path)!r} ({why}): give a UTF-8 TOML file") from None
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{name} is not valid TOML: {exc}") from None
    judge_table = data.get("judge", {})
    if "api_key" in data or (isinstance(judge_table, dict) and "api_key" in judge_table):
        # worded so that the redactor (which hides what follows "api_key:") leaves it whole
        raise InputError(
            f"{name} holds an api_key entry; delete that entry and set OPENAI_API_KEY in the "
            "environment (a key in a file ends up in a repository)"
        )
    unknown = [k for k in data if k not in TOP_KEYS]
    if unknown:
        raise InputError(f"{name}: unknown key {unknown[0]!r}; known: {', '.join(TOP_KEYS)}")
    config = ExperimentConfig(path)
    for key, kinds in _TYPES.items():
        if key in data:
            config.values[key] = _checked(name, key, data[key], kinds, _RANGES.get(key))
    if "output" in config.values:
        config.values["output"] = str(_relative(path, config.values["output"]))
    questions = config.values.get("questions")
    if questions and questions != "demo" and not questions.startswith("run:"):
        config.values["questions"] = str(_relative(path, questions))
    models = data.get("models", [])
    if isinstance(models, str):
        raise InputError(
            f'{name}: models must be a list, got the string {models!r}: write models = ["{models}"]'
        )
    if not isinstance(models, list) or not all(isinstance(m, str) and m.strip() for m in models):
        raise InputError(f'{name}: models must be a list of model names, e.g. ["gpt-4o-mini"]')
    config.models = [m.strip() for m in models]
    judge = data.get("judge", {})
    if not isinstance(judge, dict):
        raise InputError(f"{name}: [judge] must be a table of options")
    wrong = [k for k in judge if k not in JUDGE_KEYS]
    if wrong:
        raise InputError(f"{name}: [judge] has no {wrong[0]!r}; known: {', '.join(JUDGE_KEYS)}")
    for key, (kinds, low, high) in _JUDGE_NUMBERS.items():
        if key in judge:
            _checked(name, f"[judge] {key}", judge[key], kinds, (low, high))
    for key, allowed in _judge_choices().items():
        if key in judge and judge[key] not in allowed:
            raise InputError(
                f"{name}: [judge] {key} must be one of {', '.join(allowed)}, got {judge[key]!r}"
            )
    for key in ("llm", "embeddings"):
        if key in judge:
            _checked(name, f"[judge] {key}", judge[key], (str,))
    config.judge = dict(judge)
    config.templates = [_template(entry, path, i) for i, entry in enumerate(_prompts(data, name))]
    return config


def _judge_choices() -> dict[str, tuple[str, ...]]:
    return {
        "mode": tuple(MODES),
        "noncommittal": tuple(DETECTORS),
        "prompt_language": tuple(PROMPT_LANGUAGES),
    }


def _prompts(data: dict[str, Any], name: str) -> list[dict[str, Any]]:
    prompts = data.get("prompts", [])
    if not isinstance(prompts, list) or not all(isinstance(p, dict) for p in prompts):
        raise InputError(f"{name}: write each prompt as a [[prompts]] table with name and user")
    return prompts


def _template(entry: dict[str, Any], path: Path, index: int) -> Template:
    where = f"{path.name}, prompt {index + 1}"
    known = ("name", "user", "system", "text", "file")
    wrong = [k for k in entry if k not in known]
    if wrong:
        raise InputError(f"{where}: unknown key {wrong[0]!r}; known: {', '.join(known)}")
    if not isinstance(entry.get("name"), str):
        raise InputError(f'{where}: give it a name (name = "concise")')
    name = check_name(entry["name"])
    texts = [k for k in ("user", "text", "file") if k in entry]
    if len(texts) != 1:
        raise InputError(f"{where} ({name!r}): give one of user, text or file")
    strings = [*texts, *(["system"] if "system" in entry else [])]
    if not all(isinstance(entry[k], str) for k in strings):
        raise InputError(f"{where} ({name!r}): its texts must be strings")
    if texts[0] == "file":
        template = parse_prompt(f"{name}=@{entry['file']}", base=path.parent)
    elif texts[0] == "text":
        template = parse_prompt(f"{name}={entry['text']}")
    else:
        template = Template(name, entry["user"].strip(), "")
    if "system" in entry:
        template = Template(template.name, template.user, entry["system"].strip())
    if not template.user:
        raise InputError(f"{where} ({name!r}) is empty: give the user's message")
    return template


def _relative(config: Path, value: str) -> Path:
    target = Path(value).expanduser()
    return target if target.is_absolute() else config.parent / target
