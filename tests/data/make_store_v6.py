"""Make ``store_v6.sqlite3``: a run store written by the release before schema 7 (each result's
vector inside ``results``), as its users have it: ``relevancy score --save-run`` with the
embedded models on a few rows (two answer variants, an id and a label column), then a label
set as the dashboard sets it. The migration test (``tests/test_store_migration.py``) opens a
copy with today's code.

Run with that release's code, from a checkout of it (commit 2a040e2 made the file here)::

    git worktree add /tmp/v6 2a040e2
    cd /tmp/v6 && /work/main/.venv/bin/python /work/main/tests/data/make_store_v6.py \\
        --out /work/main/tests/data/store_v6.sqlite3
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROWS = [
    (
        "q1",
        "a",
        "When was the first super bowl?",
        "The first superbowl was held on Jan 15, 1967.",
        1,
    ),
    ("q1", "b", "When was the first super bowl?", "It was a long time ago.", 0),
    ("q2", "a", "What is the capital of France?", "Paris is the capital of France.", 1),
    ("q2", "b", "What is the capital of France?", "France is in Europe.", ""),
    ("q3", "a", "How do I reset my router?", "Hold the reset button for ten seconds.", 1),
    ("q3", "b", "How do I reset my router?", "I cannot help with that.", 0),
]


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args()
    sys.path.insert(0, os.getcwd())  # the release's code, not the caller's
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "rows.csv"
        lines = ["id,variant,user_input,response,label"]
        lines += [",".join(f'"{v}"' for v in row) for row in ROWS]
        src.write_text("\n".join(lines) + "\n")
        store = Path(tmp) / "runs.sqlite3"
        env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE", "PYTHONPATH": os.getcwd()}
        subprocess.run(
            [
                sys.executable,
                "-m",
                "relevancy.cli",
                "score",
                str(src),
                "-o",
                str(Path(tmp) / "out.jsonl"),
                "-q",
                "--save-run",
                "v6 run",
                "--store",
                str(store),
                "--label-column",
                "label",
            ],
            check=True,
            env=env,
        )
        from relevancy.runs import RunStore
        from relevancy.runs.schema import SCHEMA_VERSION

        assert SCHEMA_VERSION == "6", f"run this with the schema-6 release, not {SCHEMA_VERSION}"
        RunStore(store).set_label(1, 3, 1.0)  # as the dashboard's label buttons do
        import sqlite3

        with sqlite3.connect(store) as db:  # one file, no WAL beside it
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            db.execute("PRAGMA journal_mode=DELETE")
        args.out.write_bytes(store.read_bytes())
    print(args.out, args.out.stat().st_size)


if __name__ == "__main__":
    main()
