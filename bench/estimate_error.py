"""How far the estimate before a run is from what the run then took: tokens and time.

For each set, with the embedded default and a fresh cache: the estimate a user sees first
(``relevancy score --estimate``: the benchmarked speed and the rough token rule), then the
estimate after measuring on a sample of 10 rows (``--estimate --sample 10``), then the run itself.
The sampled estimate covers the rows still to score (the sample is in the cache by then), so it
is compared with what those rows took; the first one with the whole run.

Sets: the bundled demo (48 rows, four languages) and a sample of HaluQuestQA (long, real
answers from ``../shared/data/haluquestqa``; 60 rows spread over the file by default).

    python bench/estimate_error.py --json bench/results/estimate_error.json
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import DEMO_CSV, ROOT, emit, fmt, load_average, parser, table  # noqa: E402

HALUQUESTQA = ROOT.parent / "shared" / "data" / "haluquestqa" / "pairs.jsonl"
KEYS = ("prompt_tokens", "completion_tokens", "embedding_tokens")


def _sets(rows: int) -> dict[str, list[tuple[str, str]]]:
    import pandas as pd

    demo = pd.read_csv(DEMO_CSV)
    sets = {"demo": list(zip(demo["user_input"], demo["response"]))}
    if HALUQUESTQA.exists():
        lines = [json.loads(x) for x in HALUQUESTQA.read_text(encoding="utf-8").splitlines()]
        step = max(1, len(lines) // rows)
        sets["haluquestqa"] = [(d["user_input"], d["response"]) for d in lines[::step][:rows]]
    return sets


def _one(pairs: list[tuple[str, str]], sample: int) -> dict[str, Any]:
    import pandas as pd

    from relevancy import AnswerRelevancy
    from relevancy.scoring.estimate import InputStats, estimate, measure_sample

    questions, answers = [q for q, _ in pairs], [a for _, a in pairs]
    with tempfile.TemporaryDirectory() as cache:
        metric = AnswerRelevancy(cache=cache)
        first = estimate(metric, InputStats.of(metric, questions, answers))
        started = time.perf_counter()
        sampled = measure_sample(metric, InputStats.of(metric, questions, answers), sample)
        sample_seconds = time.perf_counter() - started
        after = estimate(metric, InputStats.of(metric, questions, answers))
        started = time.perf_counter()
        results = metric.score_many(pd.DataFrame({"user_input": questions, "response": answers}))
        seconds = time.perf_counter() - started
    fresh = [r for r in results if not r.cached]
    rest = {k: sum(int(r.usage.get(k, 0)) for r in fresh) for k in KEYS}
    whole = {k: rest[k] + sum(int(r.usage.get(k, 0)) for r in sampled) for k in KEYS}
    return {
        "rows": len(pairs),
        "answer_chars_mean": sum(map(len, answers)) / len(answers),
        "first": {"tokens": first.tokens, "seconds": first.seconds, "basis": first.token_basis},
        "after_sample": {
            "tokens": after.tokens,
            "seconds": after.seconds,
            "rows": after.rows - after.cached,
            "basis": after.token_basis,
        },  # fmt: skip
        "actual_whole": {"tokens": whole, "seconds": seconds + sample_seconds},
        "actual_rest": {"tokens": rest, "seconds": seconds, "rows": len(fresh)},
    }


def measure(args: Any) -> dict[str, Any]:
    return {
        "load_average_start": load_average(),
        "sample": args.sample,
        "sets": {name: _one(pairs, args.sample) for name, pairs in _sets(args.rows).items()},
    }


def main() -> int:
    p = parser(__doc__.splitlines()[0], default_rows=60)
    p.add_argument("--sample", type=int, default=10, help="rows measured before the estimate")
    args = p.parse_args()
    emit(measure(args), args.json)
    return 0


def _err(estimated: float, actual: float) -> str:
    if not actual:
        return "–"
    return f"{100 * (estimated - actual) / actual:+.0f}%"


def render(fig: dict[str, Any], record: dict[str, Any] | None = None) -> str:
    """The "Estimate before a run" section of RESULTS.md."""
    rows = []
    for name, s in fig["sets"].items():
        for label, est, actual in (
            ("first (benchmark speed, rough tokens)", s["first"], s["actual_whole"]),
            (f"after a {fig['sample']}-row sample", s["after_sample"], s["actual_rest"]),
        ):
            cells = []
            for key in KEYS:
                e, a = est["tokens"][key], actual["tokens"][key]
                cells.append(f"{fmt(e, 0)} / {a:,} ({_err(e, a)})")
            cells.append(
                f"{fmt(est['seconds'], 0)} / {fmt(actual['seconds'], 0)} "
                f"({_err(est['seconds'], actual['seconds'])})"
            )
            rows.append([f"{name} ({s['rows']} rows)", label, *cells])
    return "\n".join(
        [
            "The estimate `relevancy score --estimate` prints (and the Dataset page shows) "
            "against the run that followed, embedded default, fresh cache, 2 cores: first with "
            "no measurement (the embedded models' benchmarked speed; tokens by the rough rule of "
            f"4 characters a token), then after `--sample {fig['sample']}` (speed and token "
            "rates measured on rows of the file itself; compared with the rows still to score). "
            "Each cell: estimated / actual (error). "
            "`python bench/estimate_error.py`.",
            "",
            table(
                [
                    "set",
                    "estimate",
                    "prompt tokens",
                    "completion tokens",
                    "embedding tokens",
                    "seconds",
                ],
                rows,
            ),  # fmt: skip
            "",
            f"Load average at the start: {fig.get('load_average_start', '?')}.",
        ]
    )


if __name__ == "__main__":
    raise SystemExit(main())
