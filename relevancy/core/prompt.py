"""The question-generation prompt, kept as data.

The LLM reads only the response and writes one question the response answers, plus a flag that
says whether the response is noncommittal (evasive, vague, "I don't know", "it depends"). A
backend asks for N such outputs (``strictness``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field

__all__ = [
    "QuestionOutput",
    "Example",
    "INSTRUCTION",
    "EXAMPLES",
    "LANGUAGE_NAMES",
    "language_instruction",
    "chat_messages",
    "output_schema",
]

#: English names of the languages ``relevancy.core.language`` detects (ISO 639-1, some 639-3)
LANGUAGE_NAMES: dict[str, str] = {
    "af": "Afrikaans",
    "am": "Amharic",
    "an": "Aragonese",
    "ar": "Arabic",
    "as": "Assamese",
    "az": "Azerbaijani",
    "be": "Belarusian",
    "bg": "Bulgarian",
    "bn": "Bengali",
    "br": "Breton",
    "bs": "Bosnian",
    "ca": "Catalan",
    "cs": "Czech",
    "cy": "Welsh",
    "da": "Danish",
    "de": "German",
    "el": "Greek",
    "en": "English",
    "eo": "Esperanto",
    "es": "Spanish",
    "et": "Estonian",
    "eu": "Basque",
    "fa": "Persian",
    "fi": "Finnish",
    "fo": "Faroese",
    "fr": "French",
    "fy": "Frisian",
    "ga": "Irish",
    "gd": "Scottish Gaelic",
    "gl": "Galician",
    "gu": "Gujarati",
    "ha": "Hausa",
    "he": "Hebrew",
    "hi": "Hindi",
    "hr": "Croatian",
    "ht": "Haitian Creole",
    "hu": "Hungarian",
    "hy": "Armenian",
    "id": "Indonesian",
    "ig": "Igbo",
    "is": "Icelandic",
    "it": "Italian",
    "ja": "Japanese",
    "jv": "Javanese",
    "ka": "Georgian",
    "kk": "Kazakh",
    "km": "Khmer",
    "kn": "Kannada",
    "ko": "Korean",
    "ku": "Kurdish",
    "ky": "Kyrgyz",
    "la": "Latin",
    "lb": "Luxembourgish",
    "lg": "Ganda",
    "ln": "Lingala",
    "lo": "Lao",
    "lt": "Lithuanian",
    "lv": "Latvian",
    "mg": "Malagasy",
    "mk": "Macedonian",
    "ml": "Malayalam",
    "mn": "Mongolian",
    "mr": "Marathi",
    "ms": "Malay",
    "mt": "Maltese",
    "my": "Burmese",
    "ne": "Nepali",
    "nl": "Dutch",
    "nn": "Norwegian Nynorsk",
    "no": "Norwegian",
    "oc": "Occitan",
    "om": "Oromo",
    "or": "Odia",
    "pa": "Punjabi",
    "pl": "Polish",
    "ps": "Pashto",
    "pt": "Portuguese",
    "qu": "Quechua",
    "ro": "Romanian",
    "ru": "Russian",
    "rw": "Kinyarwanda",
    "sa": "Sanskrit",
    "se": "Northern Sami",
    "si": "Sinhala",
    "sk": "Slovak",
    "sl": "Slovenian",
    "sn": "Shona",
    "so": "Somali",
    "sq": "Albanian",
    "sr": "Serbian",
    "st": "Sotho",
    "sv": "Swedish",
    "sw": "Swahili",
    "ta": "Tamil",
    "te": "Telugu",
    "tg": "Tajik",
    "th": "Thai",
    "tk": "Turkmen",
    "tl": "Tagalog",
    "tr": "Turkish",
    "tt": "Tatar",
    "ug": "Uyghur",
    "uk": "Ukrainian",
    "ur": "Urdu",
    "uz": "Uzbek",
    "vi": "Vietnamese",
    "vo": "Volapük",
    "wa": "Walloon",
    "xh": "Xhosa",
    "yo": "Yoruba",
    "yue": "Cantonese",
    "zh": "Chinese",
    "zu": "Zulu",
    "pcm": "Nigerian Pidgin",
    "arz": "Egyptian Arabic",
    "ary": "Moroccan Arabic",
}


class QuestionOutput(BaseModel):
    """What the LLM must return for one generation."""

    question: str = Field(description="A question that the response answers.")
    noncommittal: int = Field(
        description="1 if the response is evasive, vague or ambiguous, otherwise 0.", ge=0, le=1
    )


@dataclass(frozen=True)
class Example:
    response: str
    output: QuestionOutput


INSTRUCTION = (
    "Read the response below and write the one question that it answers. Write the question in "
    "the same language as the response. Also say whether the response is noncommittal: 1 when "
    "it avoids giving an answer (for example 'I don't know', 'I'm not sure', 'it depends' with "
    "nothing more), 0 when it gives a real answer. Reply with JSON only, shaped as "
    '{"question":"...","noncommittal":0}.'
)

# The French example comes first: when it came last, right before the response, SmolLM2-135M
# behind a server wrote 33 of 263 questions in French for English responses (0 of 263 with it
# first; bench/RESULTS.md, "Noncommittal detection").
EXAMPLES: tuple[Example, ...] = (
    Example(
        response="Le cœur humain bat environ 100 000 fois par jour.",
        output=QuestionOutput(
            question="Combien de fois le cœur humain bat-il par jour ?", noncommittal=0
        ),
    ),
    Example(
        response=(
            "Mount Kilimanjaro, in Tanzania, is the highest mountain in Africa at 5,895 metres."
        ),
        output=QuestionOutput(question="What is the highest mountain in Africa?", noncommittal=0),
    ),
    Example(
        response="I can't say for sure which phone has the better camera; I haven't compared them.",
        output=QuestionOutput(
            question="Which of the two phones has the better camera?", noncommittal=1
        ),
    ),
)


def language_instruction(language: str) -> str:
    """The line added to the instruction when the questions must be in ``language`` (a code):
    the language of the user's question, whatever the response's."""
    name = LANGUAGE_NAMES.get(language, language)
    return (
        f"Write the question in {name}, the language the user asked in, even when the response "
        "is in another language."
    )


def render_output(output: QuestionOutput) -> str:
    return json.dumps(output.model_dump(), ensure_ascii=False, separators=(",", ":"))


def chat_messages(
    response: str, *, examples: tuple[Example, ...] = EXAMPLES, language: str | None = None
) -> list[dict[str, str]]:
    """System instruction, few-shot turns, then the response to work on.

    Everything before the last message is identical for every row, so servers (and the embedded
    model) can reuse the cached prompt prefix. ``examples`` is for benchmarks comparing prompts.
    With ``language`` (a code such as ``"fr"``), the instruction asks for the question in that
    language, and the last message repeats it.
    """
    instruction = INSTRUCTION
    if language:
        instruction = (
            INSTRUCTION.replace(" Write the question in the same language as the response.", "")
            + " "
            + language_instruction(language)
        )
    messages = [{"role": "system", "content": instruction}]
    for example in examples:
        messages.append({"role": "user", "content": f"Response: {example.response}"})
        messages.append({"role": "assistant", "content": render_output(example.output)})
    last = f"Response: {response}"
    if language:
        last += f"\n(Write the question in {LANGUAGE_NAMES.get(language, language)}.)"
    messages.append({"role": "user", "content": last})
    return messages


def output_schema() -> dict[str, Any]:
    """JSON schema for OpenAI structured outputs (``response_format=json_schema``)."""
    return {
        "name": "generated_question",
        "strict": True,
        "schema": {
            "type": "object",
            "properties": {
                "question": {"type": "string"},
                "noncommittal": {"type": "integer", "enum": [0, 1]},
            },
            "required": ["question", "noncommittal"],
            "additionalProperties": False,
        },
    }


def parse_output(text: str) -> QuestionOutput:
    """Read one generation from model text, tolerating chatter, code fences and loose formats.

    Raises ``ValueError`` with a short description when nothing usable is found.
    """
    text = (text or "").strip()
    if not text:
        raise ValueError("empty content")
    for candidate in _json_candidates(text):
        try:
            data = json.loads(candidate)
        except json.JSONDecodeError:
            continue
        if isinstance(data, dict) and isinstance(data.get("question"), str):
            return QuestionOutput(
                question=data["question"].strip(), noncommittal=_flag(data.get("noncommittal"))
            )
    question, flag = _loose_fields(text)
    if question:
        return QuestionOutput(question=question, noncommittal=flag)
    raise ValueError(f"no question found in model output {text[:80]!r}")


def _json_candidates(text: str) -> list[str]:
    """The whole text, then every balanced {...} block in it (outermost first)."""
    found = [text]
    depth = 0
    start = -1
    in_string = False
    escaped = False
    for i, ch in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
            continue
        if ch == '"':
            in_string = depth > 0
        elif ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}" and depth > 0:
            depth -= 1
            if depth == 0:
                found.append(text[start : i + 1])
    return found


def _flag(value: Any) -> int:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, float)):
        return 1 if value >= 0.5 else 0
    if isinstance(value, str):
        return 1 if value.strip().lower() in {"1", "true", "yes"} else 0
    return 0


def _loose_fields(text: str) -> tuple[str, int]:
    """``Question: ...`` / ``Noncommittal: 1`` lines, or the first line ending in '?'."""
    question = ""
    flag = 0
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        key = key.strip().strip("*\"' ").lower()
        if sep and key == "question" and not question:
            question = value.strip().strip("\"'")
        elif sep and key == "noncommittal":
            flag = _flag(value.strip().strip("\"',"))
    if not question:
        for line in text.splitlines():
            line = line.strip().strip("\"'")
            if line.endswith("?") and len(line) > 3:
                question = line
                break
    return question, flag
