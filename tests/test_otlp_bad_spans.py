"""OTLP spans (protobuf JSON, as Phoenix's ``/spans/otlpv1`` and collectors write them) with
values of the wrong type: each bad span is one skipped row, listed with its id and what is
wrong, and the others are scored (before: one bad span was a traceback for the whole file).
Child spans name their parent in ``parentSpanId`` and are not read as roots."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from relevancy.cli import main
from relevancy.io.importers.phoenix import BadSpan, otlp_value, span_record

from helpers import cli_backends


def text(value: str) -> dict[str, str]:
    return {"stringValue": value}


def span(span_id: str, question: str, answer: str, **more: object) -> dict[str, object]:
    """A root span of a chain in protobuf JSON (camelCase), its question and answer."""
    attributes = [
        {"key": "openinference.span.kind", "value": text("CHAIN")},
        {"key": "input.value", "value": text(question)},
        {"key": "output.value", "value": text(answer)},
    ]
    record: dict[str, object] = {
        "traceId": f"trace-{span_id}",
        "spanId": span_id,
        "name": "chain",
        "startTimeUnixNano": "1796546170338694144",
        "endTimeUnixNano": "1796546171338694144",
        "status": {"code": 1},
        "attributes": attributes,
    }
    extra = more.pop("attribute", None)
    if extra is not None:
        attributes.append({"key": "llm.token_count.total", "value": extra})
    record.update(more)
    return record


BAD = {
    "int-text": ({"attribute": {"intValue": "abc"}}, "int_value 'abc' is not a whole number"),
    "int-list": ({"attribute": {"intValue": [3]}}, "int_value '[3]' is not a whole number"),
    "array-text": ({"attribute": {"arrayValue": "str"}}, "array_value is not an object"),
    "kvlist-list": (
        {"attribute": {"kvlistValue": [{"key": "a"}]}},
        "kvlist_value is not an object",
    ),
    "code-list": ({"status": {"code": [1]}}, "status.code [1] is neither a number nor a name"),
}


def test_a_bad_span_is_one_skipped_row_listed(tmp_path, capsys, toy_server) -> None:
    good = [
        span("aaaa0001", "How do I reset the router?", "Hold the reset button for ten seconds."),
        span("aaaa0002", "Does it have a USB port?", "Yes, one USB-C port at the back."),
    ]
    child = span("aaaa0003", "inner prompt", "inner reply", parentSpanId="aaaa0001")
    bad = [
        span(name, f"Question {name}?", "An answer.", **fields) for name, (fields, _) in BAD.items()
    ]
    path = tmp_path / "otlp.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in [good[0], child, *bad, good[1]]))
    out = tmp_path / "out.csv"
    code = main(["score", str(path), "-o", str(out), "--no-cache", *cli_backends(toy_server)])
    err = capsys.readouterr().err
    assert code == 0, err
    assert "Traceback" not in err
    frame = pd.read_csv(out)
    assert frame["span_id"].tolist() == ["aaaa0001", "aaaa0002"]  # the child is not a root
    assert "1 child span skipped" in err and "5 spans that could not be read skipped" in err
    for name, (_, why) in BAD.items():
        assert f"note: span {name} skipped: {why}" in err


@pytest.mark.parametrize(
    "value",
    [{"intValue": "abc"}, {"int_value": [3]}, {"arrayValue": "x"}, {"kvlistValue": [1, 2]}],
)
def test_otlp_values_of_the_wrong_type_are_bad_spans(value) -> None:
    with pytest.raises(BadSpan):
        otlp_value(value)


def test_otlp_values_of_the_right_type() -> None:
    assert otlp_value({"intValue": "42"}) == 42  # int64 is a string in protobuf JSON
    assert otlp_value({"int_value": -3}) == -3
    assert otlp_value({"arrayValue": {"values": [{"stringValue": "a"}, {"intValue": 2}]}}) == [
        "a",
        2,
    ]
    assert otlp_value({"kvlistValue": {"values": [{"key": "k", "value": text("v")}]}}) == {"k": "v"}
    assert otlp_value({"arrayValue": {}}) == []


def test_a_protobuf_json_child_names_its_parent() -> None:
    child = span_record(span("bbbb0002", "q", "a", parentSpanId="bbbb0001"))
    assert child["parent_id"] == "bbbb0001"
