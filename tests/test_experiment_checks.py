"""Experiments' checks and wording, from a tester's breaks: refusals recognised by their opening
(curly apostrophes too), a config file held to the command line's ranges (nothing written on bad
input), the api_key line whole after the redactor, question sets that say what they left out or
merged, an experiment run's questions without its answer columns, a variant whose answers all
failed named in the summary, and the words of the plan's lines."""

from __future__ import annotations

import pandas as pd
import pytest

from relevancy.cli import main
from relevancy.core.redact import redact
from relevancy.dashboard.views.experiments import question_label, question_numbers, summary_table
from relevancy.errors import InputError
from relevancy.experiments import AnswerSettings, Plan, Template, check_plan, load_config
from relevancy.experiments.answering import is_refusal
from relevancy.experiments.questions import load_questions, notes, question_set
from relevancy.experiments.summary import variant_summary
from relevancy.experiments.templates import check_templates
from relevancy.runs import RunStore

REFUSALS = [
    "I’m sorry, but I can’t help with that.",
    "I can’t assist with that request.",
    "Sorry, I cannot help with that.",
    "I am unable to help with that.",
    "I don't know, I cannot help with that.",
    "I'm sorry, I can't do that.",
    "I cannot provide that information.",
    "I won't help with that.",
    "I must decline this request.",
    "My apologies, but I cannot answer.",
    "Unfortunately, I cannot answer that question.",
    "As an AI language model, I cannot browse the internet.",
    "I apologize, but I can't comply with this.",
    "Sorry but I can't.",
    "I'm not able to discuss that.",
    "  i’M SORRY — that is not something I can do.",
]
ANSWERS = [
    "Paris is the capital of France.",
    "Sorry is a word people say when they apologise.",
    "The answer is 42; sorry for the delay.",
    "I can help with that: Paris.",
    "I cannot stress enough how important water is.",
    "I cannot help but notice that light scatters.",
    "I don't know the exact date, but it was 1967.",
    "Hamlet was written by Shakespeare. Sorry, that is all I know.",
    "I can’t believe how simple it is: plants use photosynthesis.",
    "Unfortunately, the first Super Bowl was in 1967.",
    "",
]


@pytest.mark.parametrize("text", REFUSALS)
def test_refusals_are_recognised_by_their_opening(text):
    assert is_refusal(text)


@pytest.mark.parametrize("text", ANSWERS)
def test_answers_that_are_sorry_later_or_not_at_all_are_answers(text):
    assert not is_refusal(text)


# --- config files -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("repeats = 0\n", "e.toml: repeats must be an integer from 1 to 100, got 0"),
        ("repeats = -2\n", "e.toml: repeats must be an integer from 1 to 100, got -2"),
        ("max_tokens = -5\n", "e.toml: max_tokens must be an integer from 1 to 100000, got -5"),
        ("max_tokens = 1.5\n", "e.toml: max_tokens must be an integer from 1 to 100000, got 1.5"),
        ("temperature = 99\n", "e.toml: temperature must be a number from 0 to 2, got 99"),
        ("seed = -1\n", "e.toml: seed must be an integer from 0 to 2147483647, got -1"),
        (
            'models = "toy-a"\n',
            "e.toml: models must be a list, got the string 'toy-a': write models = [\"toy-a\"]",
        ),
        ("[judge]\nstrictness = 0\n", "e.toml: [judge] strictness must be an integer from 1"),
        ("[judge]\nmode = 'fast'\n", "e.toml: [judge] mode must be one of "),
    ],
)
def test_a_config_file_is_held_to_the_options_ranges(text, line, tmp_path):
    config = tmp_path / "e.toml"
    config.write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as info:
        load_config(config)
    assert str(info.value).startswith(line) and "\n" not in str(info.value)


def test_a_bad_config_writes_nothing(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "e.toml").write_text(
        'repeats = 0\nmodels = ["local"]\n[[prompts]]\nname = "a"\nuser = "{user_input}"\n',
        encoding="utf-8",
    )
    assert main(["experiment", "e.toml"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["error: e.toml: repeats must be an integer from 1 to 100, got 0"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["e.toml"]  # no answers file left
    with pytest.raises(InputError, match="repeats must be from 1 to 100, got 0"):
        check_plan(
            Plan(
                [Template("a", "{user_input}")],
                ["local"],
                pd.DataFrame({"user_input": ["q?"]}),
                AnswerSettings(repeats=0),
            )
        )


def test_an_api_key_in_the_file_is_said_whole(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad.toml").write_text('api_key = "sk-secret-123"\n', encoding="utf-8")
    line = (
        "bad.toml holds an api_key entry; delete that entry and set OPENAI_API_KEY in the "
        "environment (a key in a file ends up in a repository)"
    )
    assert redact(line) == line
    assert main(["experiment", "bad.toml"]) == 2
    assert capsys.readouterr().err.strip() == f"error: {line}"


# --- question sets ------------------------------------------------------------------------------
def test_a_question_set_says_what_it_left_out_and_shared_ids(tmp_path):
    frame = pd.DataFrame(
        {
            "id": ["q1", "q2", "q1", "q3", "q4"],
            "question": ["Who?", " ", "Why?", "", "When?"],
        }
    )
    out = question_set(frame, "q.csv")
    assert out["user_input"].tolist() == ["Who?", "Why?", "When?"]
    assert notes(out) == [
        "q.csv: 2 of 5 rows have no question (blank) and are left out",
        "q.csv: 1 ids are each given to more than one question (2 rows, e.g. id 'q1'); each "
        "row is its own question",
    ]
    assert notes(question_set(pd.DataFrame({"question": ["a?", "b?"]}), "q.csv")) == []


def test_a_saved_runs_questions_say_how_many_rows_became_how_many(tmp_path):
    store = RunStore(tmp_path / "s.sqlite3")
    store.create_run(
        "base", {}, pd.DataFrame({"user_input": ["x?", "x?", "y?"], "response": ["1", "2", "3"]})
    )
    frame, what = load_questions("run:base", store=store)
    assert frame["user_input"].tolist() == ["x?", "y?"]
    assert notes(frame) == [f"{what}: 3 rows give 2 questions (each question text taken once)"]
    store.create_run("base", {}, pd.DataFrame({"user_input": ["z?"], "response": ["1"]}))
    with pytest.raises(InputError) as info:
        load_questions("run:base", store=store)
    assert str(info.value) == "2 runs are named 'base' (#2, #1): give run:ID, e.g. run:2"
    assert load_questions("run:1", store=store)[0]["user_input"].tolist() == ["x?", "y?"]


def test_an_experiment_runs_questions_are_its_question_set_only(tmp_path):
    store = RunStore(tmp_path / "s.sqlite3")
    rows = []
    for variant in ("a · m", "b · m"):
        for k in (0, 1):
            for i, (q, topic) in enumerate([("Same?", "t1"), ("Same?", "t2"), ("Other?", "t3")]):
                rows.append(
                    {
                        "user_input": q,
                        "id": f"q{i + 1}",
                        "topic": topic,
                        "response": "r",
                        "variant": variant,
                        "template": variant[0],
                        "model": "m",
                        "repeat": k,
                        "prompt": q,
                        "template_text": "{user_input}",
                        "answer_error": None,
                        "answer_seconds": 0.1,
                        "answer_cached": False,
                    }
                )
    store.create_run("exp", {"experiment": {"templates": []}}, pd.DataFrame(rows))
    frame, _ = load_questions("run:exp", store=store)
    assert frame.to_dict("records") == [
        {"user_input": "Same?", "id": "q1", "topic": "t1"},
        {"user_input": "Same?", "id": "q2", "topic": "t2"},
        {"user_input": "Other?", "id": "q3", "topic": "t3"},
    ]
    with pytest.raises(InputError, match=r"names \{repeat\}, which the questions lack"):
        check_templates([Template("a", "{repeat} {user_input}")], frame.columns)


# --- summary and page tables --------------------------------------------------------------------
def test_a_variant_whose_answers_all_failed_is_named():
    frame = pd.DataFrame(
        {
            "variant": ["a · x"] * 3 + ["b · x"] * 3,
            "user_input": ["q1", "q2", "q3"] * 2,
            "response": ["fine", "fine", "fine", "", None, float("nan")],
            "answer_error": [None, None, None, "HTTP 404", "HTTP 404", "HTTP 404"],
            "score": [0.8, 0.7, 0.9, None, None, None],
            "reason": ["ok", "ok", "ok", "", None, float("nan")],
        }
    )
    summary = variant_summary(frame)
    assert summary["reasons"].tolist() == ["3 ok", "3 answer failed"]
    assert summary["failed"].tolist() == [0, 3]
    shown = summary_table(summary).set_index("variant")
    assert shown.loc["a · x", "mean"] == "0.800"
    assert shown.loc["b · x", ["mean", "95% CI", "below threshold"]].tolist() == ["—"] * 3


def test_every_row_of_a_question_set_is_reachable_on_the_page():
    frame = pd.DataFrame(
        {
            "variant": ["a"] * 3 + ["b"] * 3,
            "repeat": [0] * 6,
            "id": ["q1", "q2", None] * 2,
            "user_input": ["Same?", "Same?", "Other?"] * 2,
        }
    )
    numbers = question_numbers(frame)
    assert numbers.tolist() == [0, 1, 2, 0, 1, 2]  # two rows asking "Same?": two questions
    assert question_label(0, frame.iloc[0]) == "q1 · Same?"
    assert question_label(2, frame.iloc[2]) == "#3 · Other?"


# --- wording ------------------------------------------------------------------------------------
def test_a_template_naming_another_column_says_only_it_varies():
    columns = ["user_input", "topic"]
    (line,) = check_templates([Template("t", "Tell me about {topic}.")], columns)
    assert line == (
        "template 't' has no {user_input}: the question itself is not in the prompt; only "
        "{topic} changes from question to question"
    )


def test_the_plan_line_counts_in_the_singular(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    pd.DataFrame({"question": ["Who wrote Hamlet?"]}).to_csv("q.csv", index=False)
    argv = ["experiment", "--prompt", "a={user_input}", "--model", "local"]
    assert main([*argv, "--questions", "q.csv", "--estimate"]) == 0
    err = capsys.readouterr().err
    assert "experiment      1 template x 1 model x 1 question (q.csv) = 1 answer" in err


def test_no_model_on_the_page_says_pick_one():
    from relevancy.dashboard.widgets.experiment_panel import NO_MODEL

    plan = Plan([Template("a", "{user_input}")], [], pd.DataFrame({"user_input": ["q?"]}))
    with pytest.raises(InputError) as info:
        check_plan(plan, no_model=NO_MODEL)
    assert str(info.value).startswith("no model: pick a model") and "--model" not in str(info.value)
