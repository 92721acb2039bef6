"""One schema: a result's columns are defined once (``relevancy.core.schema.COLUMNS``) and the
store, the exports, the Ray engine's types and ``to_dict`` all follow it."""

from __future__ import annotations

import importlib
import json
import math
import sqlite3
import sys

import numpy as np
import pandas as pd
import pytest

from relevancy.core import schema
from relevancy.core.result import QuestionScore, RelevancyResult
from relevancy.io import results_to_frame
from relevancy.runs import RunStore
from relevancy.scoring.distributed import _typed


def _result(**over) -> RelevancyResult:
    data = dict(
        user_input="Where is Paris?",
        response="Paris is in France. It is big.",
        value=0.62,
        questions=[
            QuestionScore("Where is Paris?", 0.9, False),
            QuestionScore("", None, None, "cut off"),
        ],
        noncommittal=False,
        noncommittal_method="exemplars",
        answer_similarity=0.7,
        llm="local:x",
        embeddings="local:y",
        strictness=2,
        reason="ok",
        flags=["ok", "duplicate_questions"],
        notes=["response truncated; really", "second"],
        parts=[{"text": "Paris is in France.", "similarity": 0.8}],
        question_parts=[{"part": "Where is Paris", "coverage": 0.9}],
        timings={"total_s": 1.5},
        usage={"prompt_tokens": 12, "completion_tokens": 7, "embedding_tokens": 30},
        user_input_embedding=[1.0, 0.0, 0.0],
        question_embeddings=[[0.9, 0.1, 0.0]],
        languages={
            "question": "en",
            "answer": "en",
            "generated": ["en", None],
            "generated_differs": [False, None],
            "prompted": "fr",
        },
    )
    data.update(over)
    return RelevancyResult(**data)


def test_every_export_column_comes_from_the_schema():
    frame = results_to_frame([_result()])
    names = [c.name for c in schema.COLUMNS if c.exported]
    assert list(frame.columns) == ["user_input", "response", *names]
    row = frame.iloc[0]
    assert row["score"] == 0.62 and row["flags"] == "ok, duplicate_questions"
    assert row["notes"] == "response truncated; really; second"
    assert json.loads(row["generated_questions"]) == ["Where is Paris?", ""]
    assert json.loads(row["similarities"]) == [0.9, None]
    assert row["seconds"] == 1.5 and row["embedding_tokens"] == 30
    assert row["question_language"] == "en" and row["prompt_language"] == "fr"
    assert json.loads(row["generated_languages"]) == ["en", None]


def test_the_store_keeps_every_stored_column_and_reads_the_result_back(tmp_path):
    store = RunStore(tmp_path / "runs.sqlite3")
    r = _result()
    run = store.create_run(
        "x", {}, pd.DataFrame({"user_input": [r.user_input], "response": [r.response]})
    )
    store.append_results(run, [(0, r)])
    db = sqlite3.connect(tmp_path / "runs.sqlite3")
    have = [row[1] for row in db.execute("PRAGMA table_info(results)")]
    stored = [c.name for c in schema.COLUMNS if c.stored]
    # every stored column but the vectors, which have a table of their own
    assert have == ["run_id", "idx", *(n for n in stored if n != "ui_vec")]
    assert db.execute("SELECT run_id, idx, length(vec) FROM result_vectors").fetchall() == [
        (run, 0, 4 * len(r.user_input_embedding))
    ]
    back = store.result(run, 0)
    for name in (
        "value",
        "reason",
        "flags",
        "notes",
        "parts",
        "question_parts",
        "timings",
        "usage",
        "languages",
        "strictness",
        "answer_similarity",
        "noncommittal_method",
    ):
        assert getattr(back, name) == getattr(r, name), name
    # vectors come back as float32 arrays of the same shape and values
    assert back.user_input_embedding.dtype == np.float32
    np.testing.assert_allclose(back.user_input_embedding, [1.0, 0.0, 0.0])
    assert back.question_embeddings.shape == (1, 3)
    np.testing.assert_allclose(back.question_embeddings, [[0.9, 0.1, 0.0]], rtol=1e-6)
    # the detected languages are stored: nothing is detected again
    assert back.languages["prompted"] == "fr"


def test_a_column_added_in_one_place_reaches_all_four_outputs(tmp_path, monkeypatch):
    extra = schema.Column(
        "answer_chars", "int", get=lambda r: len(r.response), doc="characters in the answer"
    )
    monkeypatch.setattr(schema, "COLUMNS", (*schema.COLUMNS, extra))
    r = _result()
    # 1. exports (CLI -o, store export, Ray)
    frame = results_to_frame([r])
    assert frame["answer_chars"].tolist() == [len(r.response)]
    # 2. the store: a new column, readable by pages, in its export
    store = RunStore(tmp_path / "runs.sqlite3")
    run = store.create_run(
        "x", {}, pd.DataFrame({"user_input": [r.user_input], "response": [r.response]})
    )
    store.append_results(run, [(0, r)])
    assert store.columns(run, ["answer_chars"])["answer_chars"].tolist() == [len(r.response)]
    assert store.export_frame(run)["answer_chars"].tolist() == [len(r.response)]
    # 3. the Ray engine's typed frame
    typed = _typed(results_to_frame([r]))
    assert str(typed["answer_chars"].dtype) == "float64"
    # 4. to_dict
    assert r.to_dict()["answer_chars"] == len(r.response)
    assert RelevancyResult.from_dict(r.to_dict()).value == r.value  # derived values dropped


def test_an_older_store_gains_a_new_column_on_open(tmp_path, monkeypatch):
    path = tmp_path / "runs.sqlite3"
    r = _result()
    store = RunStore(path)
    run = store.create_run(
        "x", {}, pd.DataFrame({"user_input": [r.user_input], "response": [r.response]})
    )
    store.append_results(run, [(0, r)])
    extra = schema.Column("answer_words", "int", attr="strictness")  # any int field
    monkeypatch.setattr(schema, "COLUMNS", (*schema.COLUMNS, extra))
    reopened = RunStore(path)
    db = sqlite3.connect(path)
    assert "answer_words" in [row[1] for row in db.execute("PRAGMA table_info(results)")]
    # the row scored before the column existed reads back; new rows fill it
    assert reopened.columns(run, ["answer_words"])["answer_words"].isna().all()
    reopened.append_results(run, [(0, r)])
    assert reopened.columns(run, ["answer_words"])["answer_words"].tolist() == [2]


def test_to_dict_round_trips_and_nan_is_none():
    r = _result(value=math.nan, ragas_value=math.nan, error="all failed", questions=[])
    data = r.to_dict()
    assert data["value"] is None and data["similarity_std"] is None
    json.dumps(data)
    back = RelevancyResult.from_dict(data)
    assert math.isnan(back.value) and back.error == "all failed"


def test_a_column_needs_exactly_one_source():
    with pytest.raises(ValueError, match="exactly one"):
        schema.Column("x", "int")
    with pytest.raises(ValueError, match="unknown kind"):
        schema.Column("x", "decimal", attr="value")


@pytest.mark.parametrize(
    "old", ["relevancy.store", "relevancy.explain", "relevancy.batch", "relevancy.distributed"]
)
def test_the_old_aliases_are_gone(old):
    """No release ever had them: the modules live where relevancy.runs, relevancy.analysis,
    relevancy.scoring and the top-level names say (issue 46)."""
    sys.modules.pop(old, None)
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(old)


#: the ``results`` table of a schema-3 store (Dec 2026, before tokens and languages were stored)
_SCHEMA_3_RESULTS = """
CREATE TABLE results (
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    idx INTEGER NOT NULL,
    score REAL, mode TEXT NOT NULL, ragas_value REAL, noncommittal INTEGER NOT NULL,
    noncommittal_method TEXT NOT NULL, noncommittal_detail TEXT NOT NULL,
    answer_similarity REAL, similarity_std REAL, error TEXT NOT NULL, notes TEXT NOT NULL,
    llm TEXT NOT NULL, embeddings TEXT NOT NULL, strictness INTEGER NOT NULL, seconds REAL,
    cached INTEGER NOT NULL, prompt_tokens INTEGER, completion_tokens INTEGER,
    parts TEXT NOT NULL, timings TEXT NOT NULL, usage TEXT NOT NULL, ui_vec BLOB,
    reason TEXT NOT NULL DEFAULT '', flags TEXT NOT NULL DEFAULT '',
    question_parts TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (run_id, idx)
);
"""


def _schema_3_store(path) -> None:
    """A store as schema 3 wrote it, built by SQL: one run of two rows, row 0 scored."""
    db = sqlite3.connect(path)
    db.executescript(
        """
        CREATE TABLE runs (id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL,
            created TEXT NOT NULL, updated TEXT NOT NULL, settings TEXT NOT NULL,
            source TEXT NOT NULL DEFAULT '', n_rows INTEGER NOT NULL,
            columns TEXT NOT NULL DEFAULT '[]');
        CREATE TABLE inputs (run_id INTEGER NOT NULL, idx INTEGER NOT NULL,
            user_input TEXT NOT NULL, response TEXT NOT NULL, variant TEXT, item_id TEXT,
            extra TEXT, PRIMARY KEY (run_id, idx));
        CREATE TABLE questions (run_id INTEGER NOT NULL, idx INTEGER NOT NULL, k INTEGER NOT NULL,
            question TEXT NOT NULL, similarity REAL, noncommittal INTEGER, error TEXT, vec BLOB,
            PRIMARY KEY (run_id, idx, k));
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        INSERT INTO meta VALUES ('schema', '3');
        INSERT INTO runs VALUES (1, 'old', '2026-12-01T00:00:00+00:00',
            '2026-12-01T00:00:00+00:00', '{}', '', 2, '["user_input", "response"]');
        INSERT INTO inputs VALUES (1, 0, 'Where is Paris?', 'Paris is in France.', NULL, NULL,
            '{}');
        INSERT INTO inputs VALUES (1, 1, 'Where is Paris?', 'Paris is in France. It is big.',
            NULL, NULL, '{}');
        """
        + _SCHEMA_3_RESULTS
        + """
        INSERT INTO results VALUES (1, 0, 0.5, 'ragas', 0.5, 0, 'exemplars', '', 0.6, 0.1, '',
            '[]', 'local:x', 'local:y', 3, 1.0, 0, 10, 5, '[]', '{}', '{}', NULL, 'ok', 'ok', '');
        """
    )
    db.commit()
    db.close()


def test_a_schema_3_store_opens_and_takes_new_results(tmp_path):
    path = tmp_path / "runs.sqlite3"
    _schema_3_store(path)
    store = RunStore(path)
    db = sqlite3.connect(path)
    have = [row[1] for row in db.execute("PRAGMA table_info(results)")]
    missing = [c.name for c in schema.COLUMNS if c.stored and c.name not in have]
    assert missing == ["ui_vec"]  # moved to a table of its own (schema 7)
    assert "embedding_tokens" in have
    assert db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()[0] != "3"
    db.close()
    # a result scored today saves (it has embedding_tokens and languages), the old row stays
    store.append_results(1, [(1, _result())])
    got = store.columns(1, ["score", "embedding_tokens", "prompt_tokens"])
    assert got["score"].tolist() == [0.5, 0.62]
    assert pd.isna(got["embedding_tokens"].iloc[0]) and got["embedding_tokens"].iloc[1] == 30
    assert got["prompt_tokens"].tolist() == [10, 12]
    assert store.result(1, 1).languages["prompted"] == "fr"


def test_a_runs_listing_reads_the_runs_totals_not_their_rows(tmp_path):
    """Every page lists runs (rows scored, mean, modes, mean Ragas value) several times: read
    from run_stats (a run's totals), not from results, whose scan costs 0.2 s a call at
    1,000,000 rows (bench/RESULTS.md, section 4). A listing that reads the rows fails here."""
    from relevancy.runs import RunStore

    store = RunStore(tmp_path / "runs.sqlite3")
    traced = []
    connect = store._connect

    def traced_connect():  # the store's own SQL, traced
        db = connect()
        db.set_trace_callback(traced.append)
        return db

    store._connect = traced_connect
    store.list_runs()
    (sql,) = [q for q in traced if "FROM runs r" in q]
    assert "run_stats" in sql and "results" not in sql, sql


def test_a_count_joins_the_inputs_only_when_its_filter_reads_them(tmp_path):
    """store.count() counts a filter on results alone without the inputs (from the index by
    score); every filter counts what the page's query returns."""
    import pandas as pd

    from relevancy import AnswerRelevancy
    from relevancy.runs import RowQuery, RunStore
    from relevancy.testing.fakes import FakeEmbedder, FakeGenerator

    store = RunStore(tmp_path / "runs.sqlite3")
    rows = pd.DataFrame(
        {
            "user_input": [f"Where is city {i}?" for i in range(12)],
            "response": [f"City {i} is in country {i % 3}." for i in range(12)],
            "variant": ["a", "b"] * 6,
            "team": ["red", "blue", "green"] * 4,
        }
    )
    run = store.create_run("r", {}, rows)
    metric = AnswerRelevancy(llm=FakeGenerator(), embeddings=FakeEmbedder(dim=8), cache=False)
    store.append_results(run, list(enumerate(metric.score_many(rows))))
    queries = [
        RowQuery(),
        RowQuery(score_range=(0.0, 1.0)),
        RowQuery(status="scored", below=0.5),
        RowQuery(variants=("a",)),
        RowQuery(columns=(("team", ("red", "blue")),)),
        RowQuery(search="city 1"),
        RowQuery(columns=(("team", ()),)),  # a column with no value chosen filters nothing
    ]
    for q in queries:
        assert q.reads_inputs == ("i." in q.where()[0]), q
        assert store.count(run, q) == len(store.columns(run, ["score"], query=q)), q
    assert store.count(run, RowQuery(variants=("a",))) == 6
