"""Experiments (issue 48): templates, config files, the answer cache and the library function
end to end against the toy server taught to answer (3 templates x 2 models x 6 questions)."""

from __future__ import annotations

import pandas as pd
import pytest

from relevancy.backends.cache import Cache
from relevancy.errors import InputError
from relevancy.experiments import (
    AnswerSettings,
    Plan,
    Template,
    check_templates,
    estimate,
    load_config,
    load_questions,
    make_answerer,
    parse_prompt,
    run_experiment,
)
from relevancy.experiments.answering import EMPTY_ANSWER
from relevancy.experiments.summary import variant_summary
from relevancy.runs import RunStore
from relevancy.testing._answers import toy_answer

from helpers import toy_metric

QUESTIONS = pd.DataFrame(
    {
        "user_input": [
            "Where is France and what is its capital?",
            "When was the first super bowl played?",
            "How do plants make food from sunlight?",
            "Who wrote the play Hamlet?",
            "What does a thermometer measure?",
            "Why is the sky blue during the day?",
        ],
        "topic": ["geography", "sport", "biology", "literature", "physics", "physics"],
    }
)
TEMPLATES = [
    Template("brief", "{user_input}", "Answer in one sentence."),
    Template("detailed", "Explain in detail ({topic}): {user_input}"),
    Template("plain", "{user_input}"),
]
MODELS = ["toy-a", "toy-b"]


# --- templates ----------------------------------------------------------------------------------
def test_a_dashed_line_splits_system_from_user_and_fields_render():
    t = Template.from_text("grounded", "You are terse.\n---\nQ: {user_input} [{topic}] {{x}}")
    assert (t.system, t.user) == ("You are terse.", "Q: {user_input} [{topic}] {{x}}")
    assert t.fields() == ["user_input", "topic"]
    assert t.messages({"user_input": "Why {not}?", "topic": None}) == [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Q: Why {not}? [] {x}"},
    ]
    assert Template.from_text("grounded", t.text) == t


def test_prompt_options_inline_and_from_a_file(tmp_path):
    (tmp_path / "p.txt").write_text("Be brief.\n---\n{user_input}\n", encoding="utf-8")
    assert parse_prompt("a=Say: {user_input}") == Template("a", "Say: {user_input}")
    assert parse_prompt("b=@p.txt", base=tmp_path) == Template("b", "{user_input}", "Be brief.")


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        ("noequals", "write NAME=TEXT or NAME=@FILE"),
        ("a=@missing.txt", "cannot read"),
        ("=text {user_input}", "template name ''"),
        ("a=", "is empty"),
    ],
)
def test_bad_prompt_options_are_one_line(spec, words, tmp_path):
    with pytest.raises(InputError) as info:
        parse_prompt(spec, base=tmp_path)
    assert words in str(info.value) and "\n" not in str(info.value)


def test_template_checks_name_the_column_and_list_the_columns():
    columns = ["user_input", "topic"]
    with pytest.raises(InputError, match=r"names \{context\}, which the questions lack; their "):
        check_templates([Template("a", "{context}: {user_input}")], columns)
    with pytest.raises(InputError, match="two templates are named 'a'"):
        check_templates([Template("a", "{user_input}"), Template("a", "x {user_input}")], columns)
    with pytest.raises(InputError, match=r"\{0\} is not a column name"):
        check_templates([Template("a", "{0} {user_input}")], columns)
    with pytest.raises(InputError, match="literal brace"):
        check_templates([Template("a", "{user_input")], columns)
    warnings = check_templates([Template("same", "Tell me a joke.")], columns)
    assert warnings == ["template 'same' has no {user_input}: every question gets the same prompt"]


# --- config files -------------------------------------------------------------------------------
def test_a_config_file_gives_prompts_models_settings_and_the_judge(tmp_path):
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "g.txt").write_text("Cite.\n---\n{user_input}", encoding="utf-8")
    config = tmp_path / "experiment.toml"
    config.write_text(
        'questions = "q.csv"\nmodels = ["toy-a", "local"]\ntemperature = 0.2\nrepeats = 2\n'
        '[judge]\nllm = "local"\nstrictness = 2\n'
        '[[prompts]]\nname = "brief"\nsystem = "One sentence."\nuser = "{user_input}"\n'
        '[[prompts]]\nname = "grounded"\nfile = "prompts/g.txt"\n',
        encoding="utf-8",
    )
    loaded = load_config(config)
    assert loaded.models == ["toy-a", "local"]
    assert loaded.values["questions"] == str(tmp_path / "q.csv")
    assert (loaded.values["temperature"], loaded.values["repeats"]) == (0.2, 2)
    assert loaded.judge == {"llm": "local", "strictness": 2}
    assert loaded.templates == [
        Template("brief", "{user_input}", "One sentence."),
        Template("grounded", "{user_input}", "Cite."),
    ]


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ('models = "a"\nnope = 1\n', "unknown key 'nope'"),
        ('api_key = "sk-x"\n', "delete that entry and set OPENAI_API_KEY"),
        ("repeats = 'two'\n", "repeats must be an integer from 1 to 100, got 'two'"),
        ("[judge]\nllm_model = 'x'\n", "[judge] has no 'llm_model'"),
        ('[[prompts]]\nname = "a"\n', "give one of user, text or file"),
        ("models = [", "is not valid TOML"),
    ],
)
def test_bad_config_files_are_one_line(text, words, tmp_path):
    config = tmp_path / "e.toml"
    config.write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as info:
        load_config(config)
    assert words in str(info.value) and "\n" not in str(info.value)
    assert "sk-x" not in str(info.value)


# --- question sets ------------------------------------------------------------------------------
def test_question_sets_from_a_file_a_run_and_the_demo(tmp_path):
    path = tmp_path / "q.csv"
    pd.DataFrame({"Question": ["a?", "b?", " "], "ref": ["1", "2", "3"]}).to_csv(path, index=False)
    frame, what = load_questions(str(path))
    assert (
        frame.to_dict("records")
        == [
            {"user_input": "a?", "ref": "1"},
            {"user_input": "b?", "ref": "2"},
        ]
        and what == "q.csv"
    )
    demo, _ = load_questions("demo")
    assert len(demo) == 24 and "response" not in demo and "variant" not in demo
    store = RunStore(tmp_path / "s.sqlite3")
    store.create_run("base", {}, pd.DataFrame({"user_input": ["x?", "x?"], "response": ["1", "2"]}))
    from_run, what = load_questions("run:base", store=store)
    assert from_run["user_input"].tolist() == ["x?"] and "'base'" in what
    empty = tmp_path / "e.csv"
    empty.write_text("question\n", encoding="utf-8")
    with pytest.raises(InputError, match="no rows|holds no question"):
        load_questions(str(empty))
    with pytest.raises(InputError, match="no run 'run:other'"):
        load_questions("run:other", store=store)


# --- the toy answers ----------------------------------------------------------------------------
def test_the_toy_server_answers_each_template_and_model_its_own_way():
    def ask(system: str, user: str, model: str = "toy-a") -> str:
        return toy_answer(
            [{"role": "system", "content": system}, {"role": "user", "content": user}],
            model,
            MODELS,
        )

    assert ask("Answer in one sentence.", "Who wrote Hamlet?") == "Wrote Hamlet."
    assert ask("", "Who wrote Hamlet?").count(".") == 2
    assert ask("Explain in detail.", "Who wrote Hamlet?").count(".") == 3
    assert ask("", "Who wrote Hamlet?", "toy-b").count(".") == 3
    assert "I don't know" in ask("Refuse politely.", "Who wrote Hamlet?")


# --- end to end against the toy server ----------------------------------------------------------
def _plan(questions: pd.DataFrame = QUESTIONS, models=MODELS, templates=TEMPLATES) -> Plan:
    return Plan(templates, models, questions, AnswerSettings(max_tokens=64))


def _answerers(plan: Plan, srv) -> dict:
    return {m: make_answerer(m, plan.settings, base_url=srv.base_url) for m in plan.models}


def _answer_requests(srv) -> int:
    return sum(
        1
        for r in srv.requests
        if r["path"] == "/v1/chat/completions" and (r["body"] or {}).get("model") != "toy-chat"
    )


def test_an_experiment_answers_scores_and_saves_one_run(toy_server, tmp_path):
    toy_server.answer_models = tuple(MODELS)
    plan = _plan()
    cache, store = Cache(tmp_path / "cache"), RunStore(tmp_path / "runs.sqlite3")
    answerers = _answerers(plan, toy_server)
    assert estimate(plan, answerers, cache).requests == 36
    done = run_experiment(
        plan,
        toy_metric(toy_server, cache=cache),
        answerers,
        tmp_path / "out.csv",
        cache=cache,
        store=store,
        run_name="prompts",
        source="six questions",
    )
    assert _answer_requests(toy_server) == 36 and done.failed_answers == 0
    frame = store.inputs(done.run_id)
    assert sorted(frame["variant"].unique()) == sorted(plan.variants)
    assert {"prompt", "model", "template", "template_text"} <= set(frame.columns)
    row = frame[frame["variant"] == "brief · toy-a"].iloc[0]
    assert row["prompt"] == f"Answer in one sentence.\n---\n{QUESTIONS.user_input[0]}"
    assert row["template_text"] == TEMPLATES[0].text and row["model"] == "toy-a"
    scored = pd.read_csv(tmp_path / "out.csv")
    means = scored.groupby("variant")["score"].mean()
    # the template changes the score (padding), and so does the model
    assert means["brief · toy-a"] > means["plain · toy-a"] + 0.2
    assert means["brief · toy-a"] > means["brief · toy-b"] + 0.2
    assert (scored["answer_completion_tokens"] > 0).all() and (scored["answer_seconds"] >= 0).all()
    settings = store.get_run(done.run_id).settings["experiment"]
    assert [t["name"] for t in settings["templates"]] == ["brief", "detailed", "plain"]

    # the same experiment again: every answer from the cache; one template changed: only it
    toy_server.clear()
    run_experiment(plan, toy_metric(toy_server, cache=cache), answerers, tmp_path / "o2.csv")
    assert _answer_requests(toy_server) == 0
    changed = [*TEMPLATES[:2], Template("plain", "Please answer: {user_input}")]
    run_experiment(
        _plan(templates=changed),
        toy_metric(toy_server, cache=cache),
        answerers,
        tmp_path / "o3.csv",
        cache=cache,
    )
    assert _answer_requests(toy_server) == 12  # 6 questions x 2 models of the changed template


def test_a_model_the_server_does_not_know_fails_its_variant_only(toy_server, tmp_path):
    toy_server.answer_models = ("toy-a",)
    plan = _plan(QUESTIONS.head(2), ["toy-a", "no-such-model"], TEMPLATES[:1])
    cache = Cache(tmp_path / "cache")
    done = run_experiment(
        plan, toy_metric(toy_server, cache=cache), _answerers(plan, toy_server), tmp_path / "o.csv"
    )
    errors = done.answers.set_index("variant")["answer_error"]
    assert errors["brief · toy-a"].isna().all()
    assert (
        errors["brief · no-such-model"]
        .str.contains("HTTP 404 .*The model `no-such-model` does not exist")
        .all()
    )
    scored = pd.read_csv(tmp_path / "o.csv")
    assert scored.loc[scored["model"] == "toy-a", "score"].notna().all()
    assert scored.loc[scored["model"] == "no-such-model", "score"].isna().all()
    # a failed answer is not cached: the next run asks again
    toy_server.clear()
    run_experiment(
        plan, toy_metric(toy_server, cache=cache), _answerers(plan, toy_server), tmp_path / "p.csv"
    )
    assert _answer_requests(toy_server) == 2


def test_empty_answers_are_kept_and_flagged_not_cached_and_asked_again(toy_server, tmp_path):
    toy_server.answer_models = ("toy-a",)
    toy_server.script(["empty_content"])
    plan = _plan(QUESTIONS.head(1), ["toy-a"], TEMPLATES[:1])
    cache = Cache(tmp_path / "cache")
    done = run_experiment(
        plan,
        toy_metric(toy_server, cache=cache),
        _answerers(plan, toy_server),
        tmp_path / "o.csv",
        cache=cache,
    )
    assert done.answers["answer_error"].tolist() == [EMPTY_ANSWER]
    assert "not cached: a rerun asks again" in EMPTY_ANSWER and "no score" in EMPTY_ANSWER
    scored = pd.read_csv(tmp_path / "o.csv")
    assert scored["score"].isna().all()  # scored as the metric scores an empty response
    assert scored["error"].str.contains("response is empty").all()
    assert variant_summary(scored)["reasons"].tolist() == ["1 answer failed"]
    # the empty answer was not cached: the rerun asks again, and gets an answer this time
    toy_server.clear()
    again = run_experiment(
        plan,
        toy_metric(toy_server, cache=cache),
        _answerers(plan, toy_server),
        tmp_path / "o2.csv",
        cache=cache,
    )
    assert _answer_requests(toy_server) == 1 and again.failed_answers == 0
    assert again.answers["response"].str.len().gt(0).all()
