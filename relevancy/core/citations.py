"""Citation markers and lists of sources in an answer: "(ref 1)", "[1][2]", "^1", "【1】", "¹",
"Sources: …", "[1] https://…". They say where an answer comes from: the sentence table marks
them ``citation`` (:func:`relevancy.core.triage.sentence_marks`), never off topic or padding.
"""

from __future__ import annotations

import re

__all__ = ["is_citation", "in_source_lists"]

#: fewer words than this left once the markers are taken out: nothing but markers
_WORDS_LEFT = 2

_SOURCE_WORDS = (
    r"(?:refs?|references?|sources?|citations?|cites?|footnotes?|fn|notes?|cf|ibid|see(?:\s+also)?"
    r"|fig(?:ure)?s?|p|pp|page|pages|no|nos)\.?"
)
#: the usual forms of a citation marker or of a source's address, in any sentence
_CITATION_BITS = re.compile(
    "|".join(
        (
            r"https?://\S+|www\.\S+|\bdoi:\s*\S+|\b10\.\d{4,}/\S+",  # addresses, DOIs
            r"\[\s*(?:[A-Za-z]{1,12}\.?\s*)?\d+[a-z]?(?:\s*[,;–-]\s*\d+[a-z]?)*\s*\]",  # [1] [1, 2]
            r"【[^】]{0,20}】|〔[^〕]{0,20}〕",  # 【1】
            r"\^\s*\[?\d+\]?",  # ^1 ^[1]
            r"[¹²³⁴⁵⁶⁷⁸⁹⁰]+",  # ¹²
            rf"\(\s*(?:{_SOURCE_WORDS}\s*)+#?\s*[\d\w]{{0,6}}(?:\s*[,;–-]\s*[\d\w]{{1,6}})*\s*\)",
            r"\(\s*\d+(?:\s*[,;–-]\s*\d+)*\s*\)",  # (1) (1, 2)
            rf"\b(?:{_SOURCE_WORDS}\s*)+#?\s*\d+(?:\s*(?:[,;–-]|and|&)\s*\d+)*\b",  # see ref 1
        )
    ),
    re.IGNORECASE,
)
#: a line that lists sources: "Sources: …", "References", "Further reading: …"
_SOURCE_LIST = re.compile(
    r"^\W*(?:sources?|references?|citations?|bibliography|works\s+cited|further\s+reading|"
    r"footnotes?|notes|links|read\s+more|learn\s+more|more\s+at|via|retrieved\s+from)\b\s*"
    r"(?::|\W*$|\s*-)",
    re.IGNORECASE,
)
#: a footnote line: a marker first, then an address or a reference ("[1] https://…",
#: "1. Smith J. (2019). …", "^2 Encyclopaedia Britannica, “Paris”")
_FOOTNOTE = re.compile(
    r"^\s*(?:\[\d+\]|\^\d+|[¹²³⁴⁵⁶⁷⁸⁹⁰]+|【\d+】|\(\d+\)|\d+[.)])\s*\S",
)
_REFERENCE_HINTS = re.compile(
    r"https?://|www\.|\bdoi\b|\bisbn\b|\bretrieved\b|\baccessed\b|\bet\s+al\b|"
    r"\(\s*(?:1[5-9]|20)\d{2}[a-z]?\s*\)|\bpp?\.\s*\d|\bvol\.",
    re.IGNORECASE,
)


def is_citation(text: str) -> bool:
    """Citation markers or a list of sources, and nothing else: ``(ref 1) (ref 2)``,
    ``[1][2]``, ``See ref 1.``, ``^1``, ``【1】``, ``¹²``, a line that lists sources
    (``Sources: …``, ``References:``), a footnote (``[1] https://…``, ``2. Smith et al.
    (2019) …``) or a bare address. It says where the answer comes from: neither padding nor off
    topic, whatever its similarity to the question.

    >>> [is_citation(t) for t in ("(ref 1) (ref 2)", "See ref 1.", "Sources: (ref 1) (ref 2)",
    ...                           "[1] https://en.wikipedia.org/wiki/Paris", "Paris is big.")]
    [True, True, True, True, False]
    """
    t = str(text).strip()
    if not t:
        return False
    if _SOURCE_LIST.match(t):
        return True
    if _FOOTNOTE.match(t) and _REFERENCE_HINTS.search(t):
        return True
    if not _CITATION_BITS.search(t):
        return False
    left = _CITATION_BITS.sub(" ", t)
    return len(re.findall(r"[^\W\d_]{2,}", left)) < _WORDS_LEFT


#: a footnote line's marker: "[1] …", "^1 …", "¹ …", "【1】 …" at the start of a line
_FOOTNOTE_MARK = re.compile(r"^\s*(?:\[\d+\]|\^\[?\d+\]?|[¹²³⁴⁵⁶⁷⁸⁹⁰]+|【\d+】)")


def in_source_lists(response: str, sentences: list[str]) -> list[bool]:
    """For each sentence (in the order the splitter gave them), whether it lies in a list of
    sources: the lines after a "Sources:" or "References" line up to a blank line, or a line
    that starts with a footnote marker ("[1] Encyclopaedia Britannica, “Paris”": the splitter
    cuts such a line into pieces that alone read as prose)."""
    spans, start, in_list = [], 0, False
    for line in str(response).splitlines(keepends=True):
        text = line.strip()
        if not text:
            in_list = False
        elif _SOURCE_LIST.match(text) or in_list:
            in_list = True
            spans.append((start, start + len(line)))
        elif _FOOTNOTE_MARK.match(text):
            spans.append((start, start + len(line)))
        start += len(line)
    out, cursor = [], 0
    for sentence in sentences:
        at = str(response).find(sentence, cursor)
        if at < 0:
            out.append(False)
            continue
        cursor = at + len(sentence)
        out.append(any(a <= at < b for a, b in spans))
    return out
