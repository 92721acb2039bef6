"""Languages: detection of the question's, the answer's and each generated question's language,
the language_mismatch flag, prompting in the question's language (both generators, part of
the cache key), the multilingual embedder, and the CLI's language lines."""

from __future__ import annotations

import hashlib
import json
from importlib import resources

import numpy as np
import pandas as pd
import pytest

from relevancy import AnswerRelevancy, ConfigError, InputError, make_embedder, make_generator
from relevancy.analysis.explain import explain, explain_result
from relevancy.backends import CachedGenerator, GeneratorBase
from relevancy.backends._local_generator import QUESTION_GRAMMAR, language_prompt
from relevancy.backends.cache import cache_key
from relevancy.cli import main
from relevancy.core.language import (
    describe_languages,
    detect,
    different,
    mismatched,
    row_languages,
)
from relevancy.core.prompt import EXAMPLES, INSTRUCTION, chat_messages
from relevancy.core.result import Generation, GenerationSet, RelevancyResult
from relevancy.core.triage import REASONS, triage
from relevancy.testing.fakes import FakeEmbedder
from relevancy.testing.openai_server import OpenAICompatServer

from helpers import toy_metric

FR_Q = "Quelle est la hauteur de la tour Eiffel ?"
FR_A = "La tour Eiffel mesure environ 330 mètres de haut, antennes comprises."


def test_detects_the_demo_languages_and_tells_odd_english_from_another_language():
    assert detect(FR_Q)[0] == "fr"
    assert detect("¿A qué temperatura hierve el agua?")[0] == "es"
    assert detect("Wann fiel die Berliner Mauer?")[0] == "de"
    assert detect("When was the first super bowl?")[0] == "en"
    assert different(FR_Q, "What is the height of the Eiffel Tower?")
    # odd questions a 135M model writes are hard to place, but not "another language"
    assert not different("How do vaccines work?", "Arena for a joke?")
    assert not different("What does an HTTP 404 error mean?", "What a question?")
    assert not different(FR_Q, "Combien mesure la tour Eiffel ?")


def test_row_languages_and_the_majority_rule():
    langs = row_languages(
        FR_Q,
        FR_A,
        ["What is the height of the Eiffel Tower?", None, "Combien mesure la tour Eiffel ?"],
        prompted="fr",
    )
    assert langs["question"] == "fr" and langs["answer"] == "fr"
    assert langs["generated"] == ["en", None, "fr"]
    assert langs["generated_differs"] == [True, None, False]
    assert not mismatched(langs)  # 1 of 2 usable: not more than half
    two = row_languages(FR_Q, FR_A, ["What is the height?", "How tall is the tower?", None])
    assert mismatched(two)
    assert not mismatched({}) and not mismatched(row_languages(FR_Q, FR_A, [None]))
    line = describe_languages(langs)
    assert line.startswith("question in French, answer in French; generated questions in ")
    assert "(1 of 2 in another language than the question)" in line
    assert line.endswith("the generator was asked to write in French")


def test_the_question_and_the_answer_keep_their_own_languages():
    from relevancy.io import results_to_frame

    en_answer = "The Eiffel Tower is about 330 metres tall, antennas included."
    langs = row_languages(FR_Q, en_answer, ["Combien mesure la tour Eiffel ?"])
    assert (langs["question"], langs["answer"]) == (detect(FR_Q)[0], detect(en_answer)[0])
    assert (langs["question"], langs["answer"]) == ("fr", "en")
    assert langs["generated_differs"] == [False]  # compared with the question, not the answer
    assert describe_languages(langs).startswith("question in French, answer in English")
    r = RelevancyResult(user_input=FR_Q, response=en_answer, value=0.5, languages=langs)
    row = results_to_frame([r]).iloc[0]
    assert (row["question_language"], row["answer_language"]) == ("fr", "en")
    back = row_languages(en_answer, FR_Q, [])  # the other way round
    assert (back["question"], back["answer"]) == ("en", "fr")


def _english_for_french(response: str, n: int):
    return [("What is the height of the Eiffel Tower?", False)] * n


class LanguageFake(GeneratorBase):
    """Records the language it is asked for; writes French when asked for French."""

    name = "fake:lang"
    supports_language = True

    def __init__(self) -> None:
        self.asked: list[str | None] = []

    def fingerprint(self) -> dict:
        return {"backend": "fake", "name": self.name}

    def language_fingerprint(self, language: str) -> dict:
        return {"language": language}

    async def agenerate(self, response: str, n: int, language: str | None = None):
        self.asked.append(language)
        q = "Combien mesure la tour Eiffel ?" if language == "fr" else "How tall is it?"
        return GenerationSet([Generation(q, None)] * n, model=self.name)


def test_a_row_with_questions_in_another_language_is_flagged_and_explained():
    from relevancy.testing.fakes import FakeGenerator

    metric = AnswerRelevancy(
        llm=FakeGenerator(_english_for_french), embeddings=FakeEmbedder(), cache=False
    )
    r = metric.score(user_input=FR_Q, response=FR_A)
    assert r.languages["question"] == "fr" and r.languages["generated"] == ["en"] * 3
    assert r.languages["prompted"] is None
    assert "language_mismatch" in r.flags
    assert list(REASONS).index("language_mismatch") < list(REASONS).index("generator_suspect")
    reasons = explain(r, threshold=2.0)  # every score is "low"
    found = [x for x in reasons if x.code == "language_mismatch"]
    assert found and "3 of 3 generated questions are in English" in found[0].detail
    assert "the question is in French" in found[0].detail
    assert explain_result(r).languages_line.endswith(
        "(3 of 3 in another language than the question)"
    )
    # a stored result (no languages kept) keeps its stored flag; an old one without it: none
    stored = RelevancyResult.from_dict({**r.to_dict(), "languages": {}})
    assert "language_mismatch" in triage(stored).flags
    again = [x for x in explain(stored, threshold=2.0) if x.code == "language_mismatch"]
    assert again and "3 of 3 generated questions are in English" in again[0].detail
    old = RelevancyResult.from_dict({**r.to_dict(), "languages": {}, "flags": []})
    assert "language_mismatch" not in triage(old).flags
    assert "3 of 3 in another language" in explain_result(old).languages_line  # detected now


def test_prompting_in_the_question_language_asks_the_generator_and_keys_the_cache(tmp_path):
    gen = LanguageFake()
    metric = AnswerRelevancy(
        llm=gen, embeddings=FakeEmbedder(), prompt_language="question", cache=tmp_path
    )
    r = metric.score(user_input=FR_Q, response=FR_A)
    assert gen.asked == ["fr"] and r.languages["prompted"] == "fr"
    assert r.languages["generated"] == ["fr"] * 3 and "language_mismatch" not in r.flags
    plain = AnswerRelevancy(llm=gen, embeddings=FakeEmbedder(), cache=tmp_path)
    plain.score(user_input=FR_Q, response=FR_A)
    assert gen.asked == ["fr", None]  # a different cache key: generated again, not asked
    metric.score(user_input=FR_Q, response=FR_A)
    assert gen.asked == ["fr", None]  # from the cache
    cached = CachedGenerator(gen, None)
    assert cached.key(FR_A, 3) == cache_key(gen.fingerprint(), "generations", FR_A, 3)
    assert len({cached.key(FR_A, 3), cached.key(FR_A, 3, "fr"), cached.key(FR_A, 3, "de")}) == 3


def test_a_generator_that_cannot_be_asked_for_a_language_is_refused_in_one_line():
    from relevancy.testing.fakes import FakeGenerator

    with pytest.raises(InputError, match="cannot be asked for a language"):
        AnswerRelevancy(llm=FakeGenerator(), embeddings=FakeEmbedder(), prompt_language="question")
    with pytest.raises(InputError, match="prompt_language must be one of answer, question"):
        AnswerRelevancy(llm=FakeGenerator(), embeddings=FakeEmbedder(), prompt_language="fr")


def test_the_api_prompt_asks_for_the_language_and_is_unchanged_without_one():
    plain = chat_messages("Paris.")
    assert plain[0]["content"] == INSTRUCTION and plain[-1]["content"] == "Response: Paris."
    assert len(plain) == 2 * len(EXAMPLES) + 2
    asked = chat_messages("Paris.", language="fr")
    assert "Write the question in French, the language the user asked in" in asked[0]["content"]
    assert "same language as the response" not in asked[0]["content"]
    assert asked[-1]["content"].endswith("(Write the question in French.)")
    assert asked[1:-1] == plain[1:-1]


def test_the_embedded_prompt_in_a_language_and_its_fingerprint():
    gen = make_generator("local")
    before = hashlib.sha256(
        repr(
            (
                "Given an answer, write the question that it answers. Write one short question "
                "in the same language as the answer.",
                (
                    (
                        "Mount Kilimanjaro, in Tanzania, is the highest mountain in Africa.",
                        "What is the highest mountain in Africa?",
                    ),
                    (
                        "Water boils at 100 degrees Celsius at sea level.",
                        "At what temperature does water boil?",
                    ),
                ),
                QUESTION_GRAMMAR,
            )
        ).encode()
    ).hexdigest()[:16]
    assert gen.fingerprint()["prompt"] == before  # the shipped prompt's cache keys still hold
    prompt = gen.prompt(FR_A, "fr")
    assert "Write one short question in French" in prompt
    assert "Quelle est la longueur de la Grande Muraille de Chine ?" in prompt
    assert prompt.endswith(f"Answer: {FR_A}<|im_end|>\n<|im_start|>assistant\n")
    _, _, grammar = language_prompt("fr")
    assert '"Quelle"' in grammar and '"What"' not in grammar
    assert '"¿Qué"' in language_prompt("es")[2]
    assert "start" not in language_prompt("ru")[2]  # any question; English examples
    assert language_prompt("ru")[1] == language_prompt("en")[1]
    assert gen.language_fingerprint("fr") != gen.language_fingerprint("de")


def test_the_openai_generator_sends_the_language_to_the_server():
    key = "sk-test-lang-0123456789"
    with OpenAICompatServer(api_key=key) as srv:
        metric = toy_metric(srv, api_key=key, prompt_language="question", cache=False)
        r = metric.score(user_input=FR_Q, response=FR_A)
        chats = [x for x in srv.requests if x["path"].endswith("/chat/completions")]
    assert r.ok and r.languages["prompted"] == "fr"
    messages = chats[0]["body"]["messages"]
    assert "Write the question in French" in messages[0]["content"]
    assert messages[-1]["content"].endswith("(Write the question in French.)")


# --- the multilingual embedder ----------------------------------------------------------------
@pytest.mark.models
def test_the_multilingual_embedder_places_languages_together():
    e5 = make_embedder("local:e5")
    assert e5.name == "local:multilingual-e5-small-q4" and e5.embedded
    assert e5.fingerprint()["prefix"] == "query: "
    v = e5.embed([FR_Q, "What is the height of the Eiffel Tower?", "What is the capital of Peru?"])
    assert v.shape == (3, 384) and np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-3)
    assert v[0] @ v[1] > v[0] @ v[2] + 0.1  # the same question in English beats another one
    metric = AnswerRelevancy(embeddings=e5, cache=False)
    assert metric.noncommittal_threshold == e5.exemplar_threshold == 0.86
    assert AnswerRelevancy(cache=False).noncommittal_threshold == 0.35  # MiniLM's, unchanged
    assert e5.embed([]).shape == (0, 384)


def test_an_unknown_local_embedder_names_the_choices():
    with pytest.raises(ConfigError, match="'local:e5' \\(multilingual\\)"):
        make_embedder("local:nope")


# --- the command line -------------------------------------------------------------------------
@pytest.mark.models
@pytest.mark.slow
def test_cli_language_columns_and_lines(tmp_path, capsys):
    demo = pd.read_csv(resources.files("relevancy") / "data" / "demo.csv")
    path = tmp_path / "langs.csv"
    demo[demo["id"].isin(["q19-fr-tour-eiffel", "q02-first-super-bowl"])].to_csv(path, index=False)
    out = tmp_path / "out.csv"
    assert main(["score", str(path), "-o", str(out), "-q"]) == 0
    text = capsys.readouterr().out
    assert "languages       questions: 2 en, 2 fr" in text
    assert "rows with generated questions in another language than the question" in text
    table = pd.read_csv(out, keep_default_na=False)
    assert table["question_language"].tolist() == ["en", "en", "fr", "fr"]
    assert table["answer_language"].tolist() == ["en", "en", "fr", "fr"]
    assert all(len(json.loads(x)) == 3 for x in table["generated_languages"])
    assert (table["prompt_language"] == "").all()
    flagged = table["flags"].str.contains("language_mismatch")
    assert not flagged[table["question_language"] == "en"].any()
    asked = tmp_path / "asked.csv"
    argv = ["score", str(path), "-o", str(asked), "-q", "--prompt-language", "question"]
    assert main(argv) == 0
    capsys.readouterr()
    again = pd.read_csv(asked, keep_default_na=False)
    assert again["prompt_language"].tolist() == ["en", "en", "fr", "fr"]
    french = [
        json.loads(x) for x in again.loc[again["question_language"] == "fr", "generated_languages"]
    ]
    assert sum(g == "fr" for row in french for g in row) >= 4  # of 6: asked in French, mostly is


def test_row_languages_ranks_each_text_once_with_the_same_answer_as_text_by_text(monkeypatch):
    import relevancy.core.language as language

    question = "¿Cuándo se celebró la primera Super Bowl?"
    response = "The first Super Bowl was held on January 15, 1967."
    generated = [
        "When was the first Super Bowl held?",
        "¿Cuándo fue la primera Super Bowl?",
        "When was the first Super Bowl held?",
        None,
    ]
    expected = {
        "question": language.detect(question)[0],
        "answer": language.detect(response)[0],
        "generated": [language.detect(q)[0] if q else None for q in generated],
        "generated_differs": [language.different(question, q) if q else None for q in generated],
        "prompted": "es",
    }
    ranked: list[str] = []
    real = language._ranked
    monkeypatch.setattr(language, "_ranked", lambda text: ranked.append(text) or real(text))
    assert language.row_languages(question, response, generated, prompted="es") == expected
    assert expected["generated_differs"][:2] == [True, False]
    # the question, the answer and the two distinct generated questions: four texts, once each
    assert sorted(ranked) == sorted({question, response, generated[0], generated[1]})


def test_short_english_with_names_is_english_and_real_short_questions_keep_theirs():
    """ "Leonardo da Vinci painted the Mona Lisa." came out Italian (0.09): a text no language
    is likely for is taken as English, the default; short questions in another language keep
    theirs."""
    from relevancy.core.language import CONFIDENT_FROM, detect

    english = [
        "Leonardo da Vinci painted the Mona Lisa.",
        "The Eiffel Tower is in Paris.",
        "Marco Polo visited China.",
        "Gabriel García Márquez wrote One Hundred Years of Solitude.",
        "Napoleon Bonaparte was born in Corsica.",
        "Ok.",
    ]
    for text in english:
        assert detect(text)[0] == "en", text
    others = {
        "Où est-il ?": "fr",
        "¿Cuál es la capital de España?": "es",
        "Wo ist das?": "de",
        "Dove si trova il Colosseo?": "it",
    }
    for text, lang in others.items():
        found, p = detect(text)
        assert (found, p >= CONFIDENT_FROM) == (lang, True), text
