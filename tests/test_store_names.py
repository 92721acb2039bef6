"""The run store with odd input column names: every query names the column correctly (issue 25).

A property test over names holding quotes, brackets, dots, spaces, backslashes, control
characters, unicode and SQL words, fixed ones and ones drawn by a seeded generator: the
values read back by ``columns()``, ``distinct()``, a filter and the export are the rows' own.
"""

from __future__ import annotations

import random

import pandas as pd
import pytest

from relevancy import RelevancyResult
from relevancy.runs import RowQuery, RunStore

FIXED = [
    'a"b',
    "a'b",
    "[x]",
    "a]b",
    "a.b",
    "$.x",
    '$."x"',
    "with space",
    "ünïcödé ✓",
    "列名",
    "select",
    "FROM",
    "a\\b",
    "tab\tname",
    "new\nline",
    '"',
    '""',
    "'; DROP TABLE runs; --",
    'a"."b',
    "🙂",
    "{}",
    "*",
    "a[0]",
    "-",
    "  lead",
    "%_",
]
_ALPHABET = list("ab \"'[].$\\\t\n-_%*{}é✓🙂") + ["select", "ORDER", "null", "--"]


def _drawn(seed: int, n: int) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice(_ALPHABET) for _ in range(rng.randint(1, 8))) for _ in range(n)]


NAMES = FIXED + [n for n in _drawn(25, 30) if n.strip() and n not in FIXED]


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    """One run whose inputs have every odd column, with values naming the row and column."""
    store = RunStore(tmp_path_factory.mktemp("names") / "runs.sqlite3")
    n = 3
    inputs = pd.DataFrame(
        {"user_input": [f"q{i}" for i in range(n)], "response": [f"a{i}" for i in range(n)]}
    )
    for j, name in enumerate(NAMES):
        inputs[name] = [f"v{j}-{i % 2}" for i in range(n)]
    run_id = store.create_run("odd names", {}, inputs)
    store.append_results(
        run_id,
        [
            (
                i,
                RelevancyResult(
                    user_input=f"q{i}", response=f"a{i}", value=0.1 * i, llm="f", embeddings="f"
                ),
            )
            for i in range(n)
        ],
    )
    return store, run_id


@pytest.mark.parametrize("j", range(len(NAMES)), ids=[repr(n) for n in NAMES])
def test_every_query_names_odd_columns(stored, j):
    store, run_id = stored
    name = NAMES[j]
    assert name in store.get_run(run_id).columns
    frame = store.columns(run_id, [name], query=RowQuery(sort="row"))
    assert frame[name].tolist() == [f"v{j}-0", f"v{j}-1", f"v{j}-0"]
    assert store.distinct(run_id, name) == [f"v{j}-0", f"v{j}-1"]
    kept = store.columns(
        run_id, ["score"], query=RowQuery(sort="row", columns=((name, (f"v{j}-1",)),))
    )
    assert kept["row"].tolist() == [1]
    export = store.export_frame(run_id)
    assert export[name].tolist() == [f"v{j}-0", f"v{j}-1", f"v{j}-0"]


def test_the_store_survives_the_names(stored):
    store, run_id = stored
    assert [r.id for r in store.list_runs()] == [run_id]
    assert store.columns(run_id, ["score"])["row"].tolist() == [0, 1, 2]
