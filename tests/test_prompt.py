"""Tolerant parsing of model output, and the prompt's shape."""

import pytest

from relevancy.core.prompt import chat_messages, output_schema, parse_output


@pytest.mark.parametrize(
    "text, question, flag",
    [
        ('{"question": "Where is France?", "noncommittal": 0}', "Where is France?", 0),
        ('Sure!\n```json\n{"question": "Why?", "noncommittal": 1}\n```\nBye', "Why?", 1),
        ('{"question": "A {nested} one?", "noncommittal": true}', "A {nested} one?", 1),
        ("Question: What is X?\nNoncommittal: 1", "What is X?", 1),
        ("blah blah\nWhat is the capital of France?\n", "What is the capital of France?", 0),
        ('{"question": "Is it?", "noncommittal": "0"}', "Is it?", 0),
    ],
)
def test_parse_output(text, question, flag):
    out = parse_output(text)
    assert (out.question, out.noncommittal) == (question, flag)


@pytest.mark.parametrize("text", ["", "   ", "no question here", '{"answer": 1}'])
def test_parse_output_rejects(text):
    with pytest.raises(ValueError):
        parse_output(text)


def test_prefix_is_identical_across_rows():
    a, b = chat_messages("first"), chat_messages("second")
    assert a[:-1] == b[:-1]
    assert a[-1]["content"].endswith("first")


def test_schema_requires_both_fields():
    schema = output_schema()["schema"]
    assert schema["required"] == ["question", "noncommittal"]
    assert schema["additionalProperties"] is False


def test_the_example_right_before_the_response_is_english():
    # With the French example last, SmolLM2-135M wrote French questions for English responses
    # (bench/RESULTS.md, "Noncommittal detection"); it now comes first.
    messages = chat_messages("The sky is blue because air scatters blue light.")
    last_example = messages[-2]["content"]
    assert "Combien" not in last_example and "?" in last_example
    assert any("Combien" in m["content"] for m in messages[:-2])
