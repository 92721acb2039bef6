"""Time per row of each scoring mode (``ragas`` and ``focus``) with the embedded default.

The same rows are scored in both modes with no cache, in alternating chunks (ragas, focus,
focus, ragas, ...) so that both see the same machine load. Rows: the first ``--rows`` rows of
HaluQuestQA's development split when the data set is there (long, multi-sentence answers, where
focus embeds the most sentences), else the bench's demo rows. Prints seconds per row of each
mode, the ratio, and how much of a focus row went to embedding its sentences.

    python bench/modes.py --rows 24 --json bench/results/modes.json

:func:`render` writes the "Time per row of each scoring mode" section of ``RESULTS.md``.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import emit, fmt, load_average, log, make_rows, parser, r, table  # noqa: E402


def pick_rows(n: int) -> tuple[list[tuple[str, str]], str]:
    from _agreement_stats import load_rows
    from agreement import DEFAULT_DATA, subset_mask

    if (DEFAULT_DATA / "pairs.jsonl").exists():
        rows = load_rows(DEFAULT_DATA)
        chosen = [x for x, m in zip(rows, subset_mask(rows, "dev")) if m][:n]
        return [(x["user_input"], x["response"]) for x in chosen], "HaluQuestQA dev split"
    rows = make_rows(n)
    return [(x["user_input"], x["response"]) for x in rows], "bench demo rows"


def build_parser() -> Any:
    p = parser(__doc__.split("\n")[0], 24)
    p.add_argument("--chunks", type=int, default=4, help="alternating chunks per mode")
    return p


def measure(args: Any) -> dict[str, Any]:
    """Both modes on the same rows, in alternating chunks."""
    from relevancy import AnswerRelevancy

    rows, source = pick_rows(args.rows)
    size = max(1, len(rows) // args.chunks)
    chunks = [rows[i : i + size] for i in range(0, len(rows), size)]
    seconds = {"ragas": 0.0, "focus": 0.0}
    values: dict[str, list[float]] = {"ragas": [], "focus": []}
    ragas_in_focus: list[float] = []
    sentences = 0
    for k, chunk in enumerate(chunks):
        order = ("ragas", "focus") if k % 2 == 0 else ("focus", "ragas")
        for mode in order:
            metric = AnswerRelevancy(mode=mode, cache=False)
            started = time.perf_counter()
            results = metric.score_many(chunk)
            seconds[mode] += time.perf_counter() - started
            values[mode] += [x.value for x in results]
            if mode == "focus":
                ragas_in_focus += [x.ragas_value for x in results]
                sentences += sum(len(x.parts) for x in results)
        log(f"chunk {k + 1}/{len(chunks)} done, load {load_average()}")
    n = len(rows)
    same = sum(
        abs(a - b) < 1e-9 for a, b in zip(values["ragas"], ragas_in_focus) if a == a and b == b
    )
    out: dict[str, Any] = {
        "rows": n,
        "source": source,
        "ragas_s_per_row": r(seconds["ragas"] / n),
        "focus_s_per_row": r(seconds["focus"] / n),
        "focus_over_ragas": r(seconds["focus"] / seconds["ragas"]),
        "sentences_per_row": r(sentences / n, 1),
        "ragas_value_identical_rows": same,
    }
    return out


def main() -> int:
    args = build_parser().parse_args()
    emit(measure(args), args.json)
    return 0


# ------------------------------------------------------------------------------------------
# RESULTS.md
# ------------------------------------------------------------------------------------------


def render(fig: dict[str, Any], record: dict[str, Any] | None = None) -> str:
    """The "Time per row of each scoring mode" section of RESULTS.md."""
    return (
        f"{fig['rows']} rows ({fig['source']}, {fig['sentences_per_row']} sentences per answer "
        "on average) scored in both modes with the embedded default, no cache, alternating "
        "chunks:\n\n"
        + table(
            ["mode", "s per row"],
            [["ragas", fig["ragas_s_per_row"]], ["focus", fig["focus_s_per_row"]]],
        )
        + f"\n\nfocus / ragas = **{fmt(fig['focus_over_ragas'])}x** (focus adds one embedding "
        "call for the answer's sentences; the generations are the same). Rows whose Ragas value "
        f"was identical in both runs: {fig['ragas_value_identical_rows']}/{fig['rows']}."
    )


if __name__ == "__main__":
    raise SystemExit(main())
