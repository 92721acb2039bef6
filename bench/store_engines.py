"""The run store's engine, chosen by measurement (issue 38): what the dashboard asks of a run,
answered side by side by

* **SQLite, rows**: today's store, every figure read from the run's rows (``results`` joined
  with ``inputs`` where a figure needs an input column);
* **SQLite, totals**: the same store where it keeps a figure up as rows are written
  (``run_stats``, :mod:`relevancy.runs.stats`) or has an index that answers it;
* **Parquet + pyarrow**: the same columns in one Parquet file (what segments of a columnar
  store would hold), read and reduced with pyarrow;
* **DuckDB over Parquet**: the same file queried by DuckDB, when it is installed
  (``pip install duckdb``; the project does not depend on it).

The questions: a run's listing (rows, mean, modes, mean Ragas value), its rows per main reason,
its cost (time and tokens per model), its headline figures (median, share below 0.5), a score
histogram per variant, and the columns Compare pairs on (score, variant, id, question text)
as a pandas frame. Each is asked three times; the table has the median. Also: writing 250
results (a scoring run's batch) to each, and each copy's size.

The run is an existing store's (``--store PATH --run ID``; the dashboard bench's 1,000,000-row
store, say) or a synthetic run written here (``--rows N``).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.harness import fmt, log, main, r, table

ENGINES = ("SQLite, rows", "SQLite, totals", "Parquet + pyarrow", "DuckDB over Parquet")
QUESTIONS = (
    "listing (rows, mean, modes, Ragas mean)",
    "rows per main reason",
    "cost per model (time, tokens)",
    "median and share below 0.5",
    "score histogram per variant (20 bins)",
    "Compare's columns as a pandas frame",
)
_COLUMNS = (
    "score, ragas_value, mode, reason, llm, embeddings, cached, seconds, prompt_tokens, "
    "completion_tokens, embedding_tokens"
)


#: the listing, the reasons and the cost: from the run's totals (run_stats), or from its rows
_TOTALS_SQL = {
    QUESTIONS[0]: "SELECT SUM(rows), SUM(score_sum) / SUM(scored), GROUP_CONCAT(DISTINCT mode), "
    "SUM(ragas_sum) / SUM(ragas_rows) FROM run_stats WHERE run_id = ?",
    QUESTIONS[1]: "SELECT reason, SUM(rows) FROM run_stats WHERE run_id = ? GROUP BY reason",
    QUESTIONS[2]: "SELECT llm, embeddings, cached, SUM(rows), SUM(seconds), SUM(prompt_tokens), "
    "SUM(completion_tokens), SUM(embedding_tokens) FROM run_stats WHERE run_id = ? "
    "GROUP BY llm, embeddings, cached",
}
_ROWS_SQL = {
    QUESTIONS[0]: "SELECT COUNT(*), AVG(score), GROUP_CONCAT(DISTINCT mode), AVG(ragas_value) "
    "FROM results WHERE +run_id = ?",
    QUESTIONS[1]: "SELECT reason, COUNT(*) FROM results WHERE +run_id = ? GROUP BY reason",
    QUESTIONS[2]: "SELECT llm, embeddings, cached, COUNT(*), SUM(seconds), SUM(prompt_tokens), "
    "SUM(completion_tokens), SUM(embedding_tokens) FROM results WHERE +run_id = ? "
    "GROUP BY llm, embeddings, cached",
}


def _median_s(fn: Any, times: int = 3) -> float:
    seconds = []
    for _ in range(times):
        started = time.perf_counter()
        fn()
        seconds.append(time.perf_counter() - started)
    return r(statistics.median(seconds))


def _sqlite(path: Path, run: int, *, totals: bool) -> dict[str, Any]:
    import sqlite3

    import numpy as np
    import pandas as pd

    db = sqlite3.connect(path)
    q = lambda sql, *p: db.execute(sql, p).fetchall()  # noqa: E731

    def figures() -> None:
        if totals:  # the middle score and the count below read from the index by score
            (n,) = q("SELECT COUNT(score) FROM results WHERE run_id = ?", run)[0]
            q(
                "SELECT score FROM results WHERE run_id = ? AND score IS NOT NULL "
                "ORDER BY score LIMIT 1 OFFSET ?",
                run,
                (n - 1) // 2,
            )
            q("SELECT COUNT(*) FROM results WHERE run_id = ? AND score < 0.5", run)
        else:
            x = np.array([v[0] for v in q("SELECT score FROM results WHERE +run_id = ?", run)])
            np.nanmedian(x.astype(float)), (x < 0.5).mean()

    def histogram() -> None:
        if totals:  # binned in SQL
            q(
                "SELECT i.variant, MIN(CAST(r.score * 20 AS INTEGER), 19), COUNT(*) FROM results r "
                "JOIN inputs i ON i.run_id = r.run_id AND i.idx = r.idx WHERE r.run_id = ? "
                "AND r.score IS NOT NULL GROUP BY 1, 2",
                run,
            )
        else:
            rows = q(
                "SELECT i.variant, r.score FROM results r JOIN inputs i ON i.run_id = r.run_id "
                "AND i.idx = r.idx WHERE r.run_id = ?",
                run,
            )
            frame = pd.DataFrame(rows, columns=["variant", "score"])
            for _, part in frame.groupby("variant"):
                np.histogram(part["score"].dropna(), bins=20, range=(0, 1))

    def compare() -> pd.DataFrame:
        rows = q(
            "SELECT r.idx, r.score, i.variant, i.item_id, i.user_input FROM results r JOIN "
            "inputs i ON i.run_id = r.run_id AND i.idx = r.idx WHERE r.run_id = ? ORDER BY r.idx",
            run,
        )
        return pd.DataFrame(rows, columns=["row", "score", "variant", "id", "user_input"])

    sums = _TOTALS_SQL if totals else _ROWS_SQL
    out = {question: _median_s(lambda sql=sql: q(sql, run)) for question, sql in sums.items()}
    out |= {
        QUESTIONS[3]: _median_s(figures),
        QUESTIONS[4]: _median_s(histogram),
        QUESTIONS[5]: _median_s(compare),
    }
    db.close()
    return out


def _parquet_file(store_path: Path, run: int, folder: Path) -> Path:
    """The run's columns as one Parquet file (what a columnar store would hold for it)."""
    import sqlite3

    import pandas as pd

    db = sqlite3.connect(store_path)
    frame = pd.read_sql_query(
        f"SELECT r.idx, {', '.join('r.' + c for c in _COLUMNS.split(', '))}, i.variant, "
        "i.item_id, i.user_input FROM results r JOIN inputs i ON i.run_id = r.run_id AND "
        "i.idx = r.idx WHERE r.run_id = ? ORDER BY r.idx",
        db,
        params=(run,),
    )
    db.close()
    path = folder / "run.parquet"
    frame.to_parquet(path, index=False)
    return path


def _pyarrow(path: Path) -> dict[str, Any]:
    import numpy as np
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    def read(*columns: str) -> Any:
        return pq.read_table(path, columns=list(columns))

    def listing() -> None:
        t = read("score", "mode", "ragas_value")
        t.num_rows, pc.mean(t["score"]), pc.unique(t["mode"]), pc.mean(t["ragas_value"])

    def figures() -> None:
        x = read("score")["score"].to_numpy(zero_copy_only=False)
        np.nanmedian(x), (x < 0.5).mean()

    def histogram() -> None:
        t = read("variant", "score").to_pandas()
        for _, part in t.groupby("variant"):
            np.histogram(part["score"].dropna(), bins=20, range=(0, 1))

    return {
        QUESTIONS[0]: _median_s(listing),
        QUESTIONS[1]: _median_s(lambda: read("reason").group_by("reason").aggregate([])),
        QUESTIONS[2]: _median_s(
            lambda: (
                read("llm", "embeddings", "cached", "seconds", "prompt_tokens")
                .group_by(["llm", "embeddings", "cached"])
                .aggregate([("seconds", "sum"), ("prompt_tokens", "sum")])
            )
        ),
        QUESTIONS[3]: _median_s(figures),
        QUESTIONS[4]: _median_s(histogram),
        QUESTIONS[5]: _median_s(
            lambda: read("idx", "score", "variant", "item_id", "user_input").to_pandas()
        ),
    }


def _duckdb(path: Path) -> dict[str, Any] | None:
    try:
        import duckdb
    except ImportError:
        return None
    db = duckdb.connect()
    p = str(path).replace("'", "''")
    q = lambda sql: db.execute(sql.replace("RUN", f"read_parquet('{p}')")).fetchall()  # noqa: E731
    return {
        QUESTIONS[0]: _median_s(
            lambda: q("SELECT COUNT(*), AVG(score), LIST(DISTINCT mode), AVG(ragas_value) FROM RUN")
        ),
        QUESTIONS[1]: _median_s(lambda: q("SELECT reason, COUNT(*) FROM RUN GROUP BY reason")),
        QUESTIONS[2]: _median_s(
            lambda: q(
                "SELECT llm, embeddings, cached, COUNT(*), SUM(seconds), SUM(prompt_tokens), "
                "SUM(completion_tokens), SUM(embedding_tokens) FROM RUN GROUP BY ALL"
            )
        ),
        QUESTIONS[3]: _median_s(
            lambda: q("SELECT MEDIAN(score), AVG(CASE WHEN score < 0.5 THEN 1 ELSE 0 END) FROM RUN")
        ),
        QUESTIONS[4]: _median_s(
            lambda: q(
                "SELECT variant, LEAST(CAST(FLOOR(score * 20) AS INT), 19), COUNT(*) FROM RUN "
                "WHERE score IS NOT NULL GROUP BY ALL"
            )
        ),
        QUESTIONS[5]: _median_s(
            lambda: db.execute(
                f"SELECT idx, score, variant, item_id, user_input FROM read_parquet('{p}')"
            ).df()
        ),
        "version": duckdb.__version__,
    }


def _writes(store_path: Path, run: int, folder: Path) -> dict[str, Any]:
    """Writing one batch of 250 results: appended to the SQLite store (a copy's run), and as a
    Parquet segment of its columns."""
    import pandas as pd

    from relevancy.runs import RunStore
    from relevancy.testing.synthetic import synthetic_inputs, synthetic_results

    store = RunStore(store_path)
    fresh = store.create_run("engine bench", {}, synthetic_inputs(250))
    (batch,) = list(synthetic_results(250, batch=250))
    started = time.perf_counter()
    store.append_results(fresh, batch)
    sqlite_s = time.perf_counter() - started
    store.delete(fresh)
    frame = pd.DataFrame([{"idx": i, "score": b.value, "mode": b.mode} for i, b in batch])
    started = time.perf_counter()
    frame.to_parquet(folder / "segment.parquet", index=False)
    return {"sqlite_250_s": r(sqlite_s), "parquet_segment_250_s": r(time.perf_counter() - started)}


def measure(args: argparse.Namespace) -> dict[str, Any]:
    from relevancy.runs import RunStore

    with tempfile.TemporaryDirectory(prefix="relevancy-engines-") as tmp:
        folder = Path(tmp)
        if args.store:
            store_path, run = Path(args.store), args.run
        else:
            from relevancy.testing.synthetic import write_synthetic_run

            store_path = folder / "runs.sqlite3"
            run = write_synthetic_run(RunStore(store_path), args.rows)
        rows = RunStore(store_path).get_run(run).n_scored  # opens (migrates) the store first
        log(f"run #{run}: {rows:,} rows")
        out: dict[str, Any] = {"rows": rows, "engines": {}}
        out["engines"][ENGINES[0]] = _sqlite(store_path, run, totals=False)
        out["engines"][ENGINES[1]] = _sqlite(store_path, run, totals=True)
        started = time.perf_counter()
        parquet = _parquet_file(store_path, run, folder)
        out["parquet_build_s"] = r(time.perf_counter() - started)
        out["parquet_mb"] = r(parquet.stat().st_size / 2**20, 1)
        out["engines"][ENGINES[2]] = _pyarrow(parquet)
        duck = _duckdb(parquet)
        if duck is not None:
            out["duckdb_version"] = duck.pop("version")
            out["engines"][ENGINES[3]] = duck
        out["writes"] = _writes(store_path, run, folder) if args.writes else {}
        for engine, figures in out["engines"].items():
            log(f"  {engine}: " + ", ".join(f"{v} s" for v in figures.values()))
    return out


def tables(fig: dict[str, Any]) -> dict[str, str]:
    engines = [e for e in ENGINES if e in fig.get("engines", {})]
    rows = [
        [question, *(fmt(fig["engines"][e].get(question), 3) for e in engines)]
        for question in QUESTIONS
    ]
    head = [f"{fig.get('rows', 0):,} rows, seconds (median of 3)", *engines]
    writes = fig.get("writes") or {}
    notes = [
        ["Parquet file of the run's columns, MiB", fmt(fig.get("parquet_mb"), 1)],
        ["writing it from the store, s", fmt(fig.get("parquet_build_s"), 2)],
        ["SQLite: one batch of 250 results appended, s", fmt(writes.get("sqlite_250_s"), 3)],
        ["Parquet: a segment of 250 rows written, s", fmt(writes.get("parquet_segment_250_s"), 3)],
        ["DuckDB", fig.get("duckdb_version") or "not installed: not measured"],
    ]
    return {"": table(head, rows) + "\n\n" + table(["", ""], notes)}


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--store", default=None, help="an existing run store (default: write one)")
    p.add_argument("--run", type=int, default=1, help="the run of --store")
    p.add_argument("--no-writes", dest="writes", action="store_false", help="skip the writes")


if __name__ == "__main__":
    quick = ["--rows", "2000"]
    raise SystemExit(main("store_engines", measure, arguments, rows=20_000, quick=quick))
