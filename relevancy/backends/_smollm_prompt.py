"""What the embedded generator (SmolLM2-135M, :mod:`relevancy.backends._local_generator`) is
asked: its instruction and few-shot turns, and the grammar that forces every sample into one
short question, in the answer's language or in one asked for (``language_prompt``)."""

from __future__ import annotations

from relevancy.core.prompt import LANGUAGE_NAMES

__all__ = ["INSTRUCTION", "EXAMPLES", "QUESTION_GRAMMAR", "language_prompt"]

INSTRUCTION = (
    "Given an answer, write the question that it answers. Write one short question in the same "
    "language as the answer."
)
EXAMPLES = (
    (
        "Mount Kilimanjaro, in Tanzania, is the highest mountain in Africa.",
        "What is the highest mountain in Africa?",
    ),
    ("Water boils at 100 degrees Celsius at sea level.", "At what temperature does water boil?"),
)

_QUESTION_STARTS = (
    "What",
    "Where",
    "When",
    "Who",
    "Whose",
    "Which",
    "Why",
    "How",
    "Is",
    "Are",
    "Was",
    "Were",
    "Do",
    "Does",
    "Did",
    "Can",
    "Could",
    "Should",
    "Will",
    "Would",
    "Has",
    "Have",
    "Qu",
    "Où",
    "Quand",
    "Comment",
    "Pourquoi",
    "Combien",
    "Qui",
    "Quel",
    "Quelle",
    "Est-ce",
    "¿",
    "Wie",
    "Wo",
    "Wann",
    "Warum",
    "Welche",
    "Welcher",
    "Wer",
    "Wieso",
    "Cuál",
    "Cuánto",
    "Cómo",
    "Dónde",
    "Qué",
    "Quién",
    "Por qué",
    "Chi",
    "Come",
    "Dove",
    "Quando",
    "Perché",
    "Quanto",
)
QUESTION_GRAMMAR = 'root ::= start [^\\n?.!:;"]{6,90} "?"\nstart ::= ' + " | ".join(
    f'"{w}"' for w in dict.fromkeys(_QUESTION_STARTS)
)

# Asked for questions in a given language (``generate(..., language="fr")``, the metric's
# ``prompt_language="question"``): the instruction names the language, the two examples are in
# it (other facts than the default prompt's, so no demo question is given away), and the
# grammar lets a question start only with that language's question words. Languages not listed
# get the instruction, English examples and a grammar that only asks for one line ending in a
# question mark: the 135M model writes English there (it could not finish a single Chinese
# question within 60 tokens when its examples and grammar were Chinese).
_LANGUAGE_EXAMPLES: dict[str, tuple[tuple[str, str], tuple[str, str]]] = {
    "en": (
        (
            "The Great Wall of China is more than 21,000 kilometres long.",
            "How long is the Great Wall of China?",
        ),
        (
            "Marie Curie won the Nobel Prize in Chemistry in 1911.",
            "When did Marie Curie win the Nobel Prize in Chemistry?",
        ),
    ),
    "fr": (
        (
            "La Grande Muraille de Chine mesure plus de 21 000 kilomètres.",
            "Quelle est la longueur de la Grande Muraille de Chine ?",
        ),
        (
            "Marie Curie a reçu le prix Nobel de chimie en 1911.",
            "Quand Marie Curie a-t-elle reçu le prix Nobel de chimie ?",
        ),
    ),
    "es": (
        (
            "La Gran Muralla china mide más de 21 000 kilómetros.",
            "¿Cuánto mide la Gran Muralla china?",
        ),
        (
            "Marie Curie ganó el Premio Nobel de Química en 1911.",
            "¿Cuándo ganó Marie Curie el Premio Nobel de Química?",
        ),
    ),
    "de": (
        (
            "Die Chinesische Mauer ist mehr als 21.000 Kilometer lang.",
            "Wie lang ist die Chinesische Mauer?",
        ),
        (
            "Marie Curie erhielt 1911 den Nobelpreis für Chemie.",
            "Wann erhielt Marie Curie den Nobelpreis für Chemie?",
        ),
    ),
    "it": (
        (
            "La Grande Muraglia cinese è lunga più di 21.000 chilometri.",
            "Quanto è lunga la Grande Muraglia cinese?",
        ),
        (
            "Marie Curie vinse il premio Nobel per la chimica nel 1911.",
            "Quando vinse Marie Curie il premio Nobel per la chimica?",
        ),
    ),
    "pt": (
        (
            "A Grande Muralha da China tem mais de 21 mil quilómetros.",
            "Qual é o comprimento da Grande Muralha da China?",
        ),
        (
            "Marie Curie ganhou o Prémio Nobel da Química em 1911.",
            "Quando ganhou Marie Curie o Prémio Nobel da Química?",
        ),
    ),
    "nl": (
        ("De Chinese Muur is meer dan 21.000 kilometer lang.", "Hoe lang is de Chinese Muur?"),
        (
            "Marie Curie won in 1911 de Nobelprijs voor Scheikunde.",
            "Wanneer won Marie Curie de Nobelprijs voor Scheikunde?",
        ),
    ),
}
_LANGUAGE_STARTS: dict[str, tuple[str, ...]] = {
    "en": _QUESTION_STARTS[:22],
    "fr": (
        "Qu",
        "Où",
        "Quand",
        "Comment",
        "Pourquoi",
        "Combien",
        "Qui",
        "Quel",
        "Quelle",
        "Quels",
        "Quelles",
        "Est-ce",
        "À quel",
        "À quelle",
        "De quel",
        "De quelle",
        "Dans quel",
        "Dans quelle",
    ),
    "es": (
        "¿Qué",
        "¿Cuál",
        "¿Cuáles",
        "¿Cuánto",
        "¿Cuánta",
        "¿Cuántos",
        "¿Cuántas",
        "¿Cómo",
        "¿Dónde",
        "¿Cuándo",
        "¿Quién",
        "¿Quiénes",
        "¿Por qué",
        "¿A qué",
        "¿En qué",
        "¿De qué",
        "¿Es",
        "¿Son",
        "¿Hay",
        "¿Se",
        "¿Puede",
    ),
    "de": (
        "Was",
        "Wo",
        "Wann",
        "Wer",
        "Wie",
        "Warum",
        "Wieso",
        "Weshalb",
        "Welche",
        "Welcher",
        "Welches",
        "Wem",
        "Wen",
        "Wessen",
        "Woher",
        "Wohin",
        "Ist",
        "Sind",
        "Hat",
        "Haben",
        "Kann",
        "Gibt",
        "In welchem",
        "An welchem",
    ),
    "it": (
        "Che",
        "Cosa",
        "Chi",
        "Come",
        "Dove",
        "Quando",
        "Perché",
        "Quanto",
        "Quanti",
        "Quanta",
        "Quante",
        "Quale",
        "Quali",
        "È",
        "In quale",
        "A quale",
    ),
    "pt": (
        "O que",
        "Qual",
        "Quais",
        "Quem",
        "Como",
        "Onde",
        "Quando",
        "Por que",
        "Quanto",
        "Quantos",
        "Quanta",
        "Quantas",
        "É",
        "Em que",
        "A que",
    ),
    "nl": (
        "Wat",
        "Waar",
        "Wanneer",
        "Wie",
        "Welke",
        "Welk",
        "Waarom",
        "Hoe",
        "Hoeveel",
        "Is",
        "Zijn",
        "Kan",
        "Heeft",
    ),
}
_ANY_QUESTION_GRAMMAR = 'root ::= [^\\n?.!:;"]{6,90} "?"'


def language_prompt(language: str) -> tuple[str, tuple[tuple[str, str], ...], str]:
    """``(instruction, examples, grammar)`` for questions in ``language`` (a code)."""
    name = LANGUAGE_NAMES.get(language, language)
    instruction = (
        f"Given an answer, write the question that it answers. Write one short question in "
        f"{name}, whatever the language of the answer."
    )
    examples = _LANGUAGE_EXAMPLES.get(language, _LANGUAGE_EXAMPLES["en"])
    starts = _LANGUAGE_STARTS.get(language)
    if starts:
        words = " | ".join(f'"{w}"' for w in dict.fromkeys(starts))
        grammar = f'root ::= start [^\\n?.!:;"]{{6,90}} "?"\nstart ::= {words}'
    else:
        grammar = _ANY_QUESTION_GRAMMAR
    return instruction, examples, grammar
