"""How text is cut up: an answer into sentences, a question into its parts, a sentence into clauses.

One splitter each, used by the focus score, the explanations and the reports alike.
"""

from __future__ import annotations

import re

__all__ = [
    "MAX_SENTENCES",
    "QUESTION_WORDS",
    "split_sentences",
    "split_question_parts",
    "split_clauses",
    "looks_like_question",
    "KINDS",
    "part_kind",
    "answer_of_kind",
    "content_words",
    "mentions",
    "part_evidence",
]

#: Longer responses are cut to this many sentences.
MAX_SENTENCES = 64

_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+|\n+")
_HAS_WORD = re.compile(r"\w", re.UNICODE)
_QUESTION_WORDS = (
    r"what|where|when|who|whom|whose|which|why|how|is|are|was|were|do|does|did|can|could|"
    r"should|will|would|has|have|"
    r"qu(?:e|el|elle|els|elles|oi)|où|quand|comment|pourquoi|combien|qui|"  # fr
    r"qué|cuál|cuándo|cómo|dónde|quién|cuánto|por qué|"  # es
    r"was|wie|wo|wann|warum|welche[rsnm]?|wer"  # de
)
_PART_SPLIT = re.compile(
    rf"\s*(?:[;?]|,?\s+(?:and|et|y|und|also)\s+(?=(?:{_QUESTION_WORDS})\b))\s*", re.IGNORECASE
)
_CLAUSE_SPLIT = re.compile(
    r"\s*(?:[,;:]|\s(?:and|but|which|et|mais|qui|que|y|pero|und|aber)\s)\s*", re.IGNORECASE
)


#: words that open a question (English, French, Spanish, German, Italian), lower case
QUESTION_WORDS = frozenset(
    "what where when who whom whose which why how is are was were am do does did can could "  # noqa: SIM905
    "should shall will would has have had may might must "
    "que quoi qu'est-ce quel quelle quels quelles où ou quand comment pourquoi combien qui "
    "est-ce "
    "qué que cuál cual cuáles cuándo cuando cómo como dónde donde quién quien quiénes cuánto "
    "cuanto cuánta cuántos por "
    "was wie wo wann warum welche welcher welches welchen wer wieso weshalb woher wohin "
    "chi che cosa come dove quando perché quanto quanta quale quali".split()
)
_WORDS = re.compile(r"[\w'’-]+", re.UNICODE)


def looks_like_question(text: str) -> bool:
    """True for a question: ends in ``?``, at least three words, and a question word first (or
    second or third: "In which year...").

    >>> looks_like_question("In which year was it built?"), looks_like_question("Don't worry?")
    (True, False)
    """
    t = str(text).strip().lstrip("¿¡")
    words = [w.lower().replace("’", "'") for w in _WORDS.findall(t)]
    return t.endswith("?") and len(words) >= 3 and any(w in QUESTION_WORDS for w in words[:3])


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text``: split after ``. ! ?`` followed by space, and at line breaks.

    Pieces without a letter or digit (a lone ``-`` or ``*``) are dropped; at most
    ``MAX_SENTENCES`` are returned.

    Examples
    --------
    >>> split_sentences("Paris is the capital. It is in France!\\n- Edit: typo")
    ['Paris is the capital.', 'It is in France!', '- Edit: typo']
    """
    parts = [p.strip() for p in _SENTENCE_END.split(str(text))]
    return [p for p in parts if _HAS_WORD.search(p)][:MAX_SENTENCES]


def split_question_parts(question: str) -> list[str]:
    """The parts of a multi-part question: split on ``?``/``;`` and on "and" + question word.

    >>> split_question_parts("Where is France and what is its capital?")
    ['Where is France', 'what is its capital']
    """
    parts = [p.strip(" ,.!?") for p in _PART_SPLIT.split(str(question))]
    return [p for p in parts if len(p.split()) >= 2]


def split_clauses(sentence: str) -> list[str]:
    """Clauses of a sentence (split on , ; : and conjunctions), at least two words each."""
    return [c for c in _CLAUSE_SPLIT.split(sentence) if len(c.split()) >= 2]


# --- what a part of a question asks for, and what in an answer is of that kind ---------------
_QUANTITY_ASKED = re.compile(
    r"^\s*how\s+(?:many|much|tall|long|far|old|big|high|deep|heavy|fast|often|large|wide|"
    r"small|short|hot|cold|warm|expensive|wide)\b",
    re.IGNORECASE,
)
_TIME_ASKED = re.compile(
    r"^\s*(?:when|(?:in|since|until)\s+(?:what|which)\s+(?:year|century|decade|month)|"
    r"(?:what|which)\s+(?:year|century|decade|date|day|month)|what\s+time)\b",
    re.IGNORECASE,
)
_PLACE_ASKED = re.compile(r"^\s*(?:where|(?:in|from|to)\s+(?:what|which)\s+\w+)\b", re.IGNORECASE)
_PERSON_ASKED = re.compile(r"^\s*(?:who|whom|whose|by\s+whom)\b", re.IGNORECASE)
_NAME_ASKED = re.compile(
    r"^\s*(?:which\b|what\s+(?!(?:is|are|was|were|do|does|did|can|could|will|would|should|"
    r"has|have|had|makes?|made|happens?|happened|causes?|caused|if|about)\b)[a-z]+\b)",
    re.IGNORECASE,
)
_REASON_ASKED = re.compile(
    r"^\s*(?:why|how\s+come|for\s+what\s+(?:reason|purpose)|what\s+for)\b", re.IGNORECASE
)

#: the kinds of answer a part of a question may ask for (:func:`part_kind`)
KINDS = ("quantity", "time", "place", "person", "name", "reason")

_DIGITS = re.compile(r"\b\d[\d,.]*(?!\w)")  # "8,849", not the "19" of "19th"
_NAME = re.compile(r"(?<![.!?]\s)(?<!^)\b[A-Z][\w'’-]+", re.UNICODE)
_CALENDAR = (
    "january february march april may june july august september october november december "
    "jan feb mar apr jun jul aug sep sept oct nov dec "
    "monday tuesday wednesday thursday friday saturday sunday"
)
_MONTHS = _CALENDAR.split()
_YEAR = re.compile(r"\b(?:1\d{3}|20\d{2})\b(?![,.]\d)(?:\s*(?:BCE?|AD|CE)\b)?")
_ERA = re.compile(
    r"\b\d{1,4}\s*(?:BCE?|AD|CE)\b|\bAD\s*\d{1,4}\b|\b\d{1,4}0s\b|"
    r"\b\d{1,2}(?:st|nd|rd|th)\s+(?:century|millennium)\b|"
    rf"\b(?:{'|'.join(_MONTHS)})\b\.?(?:\s+\d{{1,2}}(?:st|nd|rd|th)?\b)?|"
    r"\b\d{1,2}(?:st|nd|rd|th)?\s+of\s+(?:" + "|".join(_MONTHS) + r")\b|"
    r"\b(?:yesterday|today|tonight|tomorrow|ago|dawn|dusk|midnight|noon)\b|"
    r"\b\d{1,2}[:.]\d{2}\s*(?:am|pm)?\b|\b\d{1,2}\s*(?:am|pm|a\.m\.|p\.m\.)",
    re.IGNORECASE,
)
#: the words that may follow a year ("in 1889 by Eiffel"): any other lower-case word makes the
#: number a quantity ("1063 feet", "2000 people")
_AFTER_YEAR = frozenset(
    "and or to by when as after before until till in on at with during for but the it he she "  # noqa: SIM905
    "they which that while from under of was were is are had has became saw because since so "
    "between near against over across along through into onto among around behind beyond "
    "within where until".split()
)
#: the words before a number that make it a year whatever follows ("in 1889 people ...")
_BEFORE_YEAR = frozenset(
    "in since from until till circa around by of year before after between and to".split()  # noqa: SIM905
)
_NUMBER_WORDS = re.compile(
    r"\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|"
    r"fifteen|sixteen|seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|sixty|seventy|"
    r"eighty|ninety|hundreds?|thousands?|millions?|billions?|trillions?|dozens?|half|"
    r"several|a few|a couple)\b",
    re.IGNORECASE,
)
_PLACE_PHRASE = re.compile(
    r"\b(?:in|at|on|near|inside|outside|into|from|across|along|beside|within|throughout|"
    r"between|off|by|to|of)\s+(?:(?:the|a|an)\s+)?(?:[a-z][\w'’-]*\s+){0,2}"
    r"((?:[A-Z][\w'’-]+)(?:\s+(?:de|du|da|of|the|la|le|del|von|van)?\s*[A-Z][\w'’-]+)*)"
)
#: words saying why (a reason or a purpose)
_REASON = re.compile(
    r"\b(?:because|due\s+to|owing\s+to|thanks\s+to|in\s+order\s+to|so\s+that|so\s+as\s+to|"
    r"as\s+a\s+result|as\s+a\s+consequence|reasons?|purposes?|intended|meant\s+to|aimed|"
    r"caused|causes|leads?\s+to|led\s+to|therefore|hence)\b",
    re.IGNORECASE,
)
#: words of a part that say nothing of what it asks (question words, auxiliaries, pronouns,
#: articles, the commonest prepositions)
_STOP = frozenset(
    "what where when who whom whose which why how is are was were be been being am do does did "  # noqa: SIM905
    "done can could should shall will would has have had may might must it its it's they them "
    "their there this that these those he him his she her we us our you your i me my a an the "
    "of in on at to for by with from about as and or not no so than then also ever each any "
    "some many much tall long far old big high deep heavy fast often large wide small short "
    "get got come came go went make made one ones thing things".split()
)
#: forms of one word (irregular verbs, synonyms of the question words' usual verbs): a part
#: asking "when was it built" is answered by "completed in 1889"
_SAME_WORDS = [
    "build built building constructed construction completed erected opened finished",
    "win won winner victor victory defeated beat",
    "sink sank sunk sinking",
    "write wrote written writer author authored",
    "paint painted painter painting",
    "display displayed displays exhibited exhibit hangs hung housed kept shown",
    "locate located location lies lie sits stands situated found",
    "begin began begun start started",
    "end ended finish finished",
    "fight fought battle",
    "found founded establish established created",
    "invent invented inventor invention created",
    "discover discovered discovery discoverer",
    "die died death dead",
    "born birth",
    "live lives living lived population inhabitants people residents",
    "tall high height",
    "long length",
    "weigh weighs weight heavy",
    "design designed designer architect",
    "lead led leader",
    "rise rose risen",
    "fall fell fallen",
    "grow grew grown",
    "take took taken",
    "give gave given",
    "run ran runs flows flow",
    "speak spoke spoken language",
    "cost costs price",
    "make made maker",
    "hold held",
    "hit struck strike",
]
_SAME = {w: i for i, group in enumerate(_SAME_WORDS) for w in group.split()}


def part_kind(part: str) -> str:
    """The kind of answer an English question ``part`` asks for: ``"quantity"`` (how many, how
    tall...), ``"time"`` (when, what year), ``"place"`` (where), ``"person"`` (who),
    ``"name"`` (which countries, what river), ``"reason"`` (why); ``""`` for any other (what is,
    how does, a yes-or-no question): none that can be told from the words of an answer.

    >>> [part_kind(p) for p in ("how tall is it", "when was it built", "where is it shown",
    ...                         "who won it", "which countries is it between", "why", "how")]
    ['quantity', 'time', 'place', 'person', 'name', 'reason', '']
    """
    for kind, pattern in (
        ("time", _TIME_ASKED),
        ("quantity", _QUANTITY_ASKED),
        ("reason", _REASON_ASKED),
        ("place", _PLACE_ASKED),
        ("person", _PERSON_ASKED),
        ("name", _NAME_ASKED),
    ):
        if pattern.match(part):
            return kind
    return ""


def _years(sentence: str) -> list[str]:
    found = []
    for m in _YEAR.finditer(sentence):
        rest = sentence[m.end() :].split(maxsplit=1)
        after = rest[0].strip(",.;:!?)").lower() if rest else ""
        before = sentence[: m.start()].split()[-1:] or [""]
        if (
            before[0].lower().strip(",(") in _BEFORE_YEAR
            or not after
            or not after[0].isalpha()
            or after in _AFTER_YEAR
            or rest[0][0].isupper()
        ):
            found.append(m.group().strip())
    return found


def _times(sentence: str) -> list[str]:
    return _years(sentence) + [m.group().strip() for m in _ERA.finditer(sentence)]


def _quantities(sentence: str) -> list[str]:
    years = set(_years(sentence))
    numbers = [n.rstrip(",.") for n in _DIGITS.findall(sentence)]
    return [n for n in numbers if n not in years] + _NUMBER_WORDS.findall(sentence)


def _places(sentence: str) -> list[str]:
    out = []
    for m in _PLACE_PHRASE.finditer(sentence):
        words = m.group(1).split()
        if words and words[0].lower() not in _MONTHS:
            out.append(m.group(1))
    return out


def _names(sentence: str) -> list[str]:
    """Capitalised words that do not open the sentence, and a sentence's first word when a
    capitalised word follows it ("Gustave Eiffel designed it"), months and days aside."""
    found = _NAME.findall(sentence)
    first = re.match(r"\s*([A-Z][\w'’-]+)\s+[A-Z]", sentence)
    if first and first.group(1).lower() not in _STOP:
        found.insert(0, first.group(1))
    return [n for n in found if n.lower() not in _MONTHS and n.lower() not in _STOP]


def _people(sentence: str) -> list[str]:
    places = {w for p in _places(sentence) for w in p.split()}
    return [n for n in _names(sentence) if n not in places]


def _reasons(sentence: str) -> list[str]:
    return [m.group() for m in _REASON.finditer(sentence)]


_FINDERS = {
    "quantity": _quantities,
    "time": _times,
    "place": _places,
    "person": _people,
    "name": _names,
    "reason": _reasons,
}


def _found(kind: str, sentences: list[str], asked: set[str]) -> list[str]:
    if kind not in _FINDERS:
        return []
    found = [x for s in sentences for x in _FINDERS[kind](s)]
    if kind != "reason":  # what the question says already is no answer to it
        found = [x for x in found if x.lower() not in asked]
    return list(dict.fromkeys(x for x in found if x))


def answer_of_kind(part: str, question: str, answer: str) -> list[str]:
    """What in ``answer`` is of the kind an English question ``part`` asks for
    (:func:`part_kind`), and not already in ``question``: a quantity (not a year) for "how many
    / how tall", a year or date (not any number) for "when", a place after a preposition ("in
    the Louvre", not any name) for "where", a name for "who" and "which countries", wording
    that gives a reason for "why". Empty when the part asks for no such kind, or the answer has
    none.

    An embedding compares the wording of a part with the answer's clauses and can miss a short
    factual answer ("which countries is it between" against "... between Nepal and China"); this
    is the check that something of the kind is there (anywhere in the answer: it may answer
    another part, see :func:`part_evidence`).

    >>> answer_of_kind("which countries is it between", "How tall is Mount Everest and which "
    ...                "countries is it between?", "It sits between Nepal and China.")
    ['Nepal', 'China']
    >>> answer_of_kind("how tall is it", "Where is Kilimanjaro and how tall is it?",
    ...                "Kilimanjaro is in Tanzania.")
    []
    >>> answer_of_kind("when was it built", "How tall is it and when was it built?",
    ...                "It is 330 metres tall.")
    []
    """
    asked = {w.lower() for w in _WORDS.findall(question)}
    return _found(part_kind(part), split_sentences(answer), asked)


def content_words(part: str) -> list[str]:
    """The words of a question ``part`` that say what it is about, besides its subject: not a
    question word, auxiliary, pronoun or article, and not capitalised (a name: "Eiffel Tower"
    is what both parts are about).

    >>> content_words("when was the Eiffel Tower built"), content_words("where is it")
    (['built'], [])
    """
    words = _WORDS.findall(part)
    return [
        w.lower()
        for w in words
        if w[0].islower() and w.lower() not in _STOP and w.lower() not in QUESTION_WORDS
    ]


def _same(a: str, b: str) -> bool:
    """One word in two forms: equal, one's first four letters the other's ("display",
    "displayed"), or forms listed together ("built", "completed")."""
    if a == b or (len(a) >= 4 and len(b) >= 4 and a[:4] == b[:4]):
        return True
    return a in _SAME and _SAME.get(a) == _SAME.get(b)


def mentions(sentence: str, words: list[str]) -> bool:
    """Whether ``sentence`` has one of ``words`` (in any form :func:`_same` knows)."""
    have = [w.lower() for w in _WORDS.findall(sentence)]
    return any(_same(w, h) for w in words for h in have)


def part_evidence(part: str, question: str, answer: str) -> list[str]:
    """What shows that ``answer`` answers the question ``part``: the things of the kind it asks
    for (:func:`answer_of_kind`) found in a sentence of the answer that speaks of what the part
    is about (one of its :func:`content_words`, in some form: "built" for "when was it built"),
    or anywhere when the part has no such word ("where is it"). Empty when nothing shows it, or
    the part asks for no kind of thing that words can show.

    A number that answers "how tall" is no evidence that "when was it built" is answered, a
    name after "da" no evidence of "where", and a year in a sentence about something else no
    evidence of "when was it built".

    >>> q = "How tall is the Eiffel Tower and when was it built?"
    >>> part_evidence("when was it built", q, "The Eiffel Tower is 330 metres tall.")
    []
    >>> part_evidence("when was it built", q, "It is 330 metres tall and was built in 1889.")
    ['1889']
    """
    kind = part_kind(part)
    if not kind:
        return []
    words = content_words(part)
    sentences = [s for s in split_sentences(answer) if not words or mentions(s, words)]
    asked = {w.lower() for w in _WORDS.findall(question)}
    return _found(kind, sentences, asked)
