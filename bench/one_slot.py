"""Does concurrency hurt on a one-slot server? Our concurrency 1, 2 and 4 on llama-cpp-python's
server (one request at a time), to decide the proposal in RESULTS.md ("lower the concurrency
by itself for a server seen to serve one request at a time").

The server and our side are exactly ``bench/vs_ragas.py``'s: ``python -m llama_cpp.server``
with the embedded SmolLM2 GGUF (n_threads 2, ``OMP_WAIT_POLICY=PASSIVE``), our OpenAI-compatible
backend as shipped with the embedded MiniLM, strictness 3, a fresh cache per run. Each round
runs every concurrency on its own ``--rows`` rows (new rows per round, so the server's prompt
cache never holds a row from before), in an order that alternates between rounds.
:func:`render` writes the section of RESULTS.md.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import emit, fmt, load_average, log, make_rows, parser, r, table  # noqa: E402
from vs_ragas import MODEL, LlamaServer, ours  # noqa: E402

LEVELS = (1, 2, 4)


def build_parser() -> Any:
    p = parser(__doc__.splitlines()[0], default_rows=10)
    p.add_argument("--rounds", type=int, default=2, help="rounds (default 2)")
    return p


def measure(args: Any) -> dict[str, Any]:
    from relevancy import make_embedder, make_generator

    pool = make_rows(args.rows * len(LEVELS) * args.rounds + 2, seed=11)
    out: dict[str, Any] = {"bench": "one_slot", "rows": args.rows, "rounds": args.rounds,
                           "load_average_start": load_average()}  # fmt: skip
    server = LlamaServer()
    try:
        emb = make_embedder("local")
        emb.embed(["warm-up"])
        gen = make_generator(f"openai:{MODEL}", base_url=server.base_url)
        ours(pool[:2], gen, emb)  # the server's prompt cache holds our prefix from here on
        walls: dict[str, list[float]] = {str(c): [] for c in LEVELS}
        start = 2
        for k in range(args.rounds):
            for c in LEVELS if k % 2 == 0 else LEVELS[::-1]:
                rows = pool[start : start + args.rows]
                start += args.rows
                o = ours(rows, gen, emb, concurrency=c)
                nan = sum(not x.ok for x in o["results"])
                walls[str(c)].append(o["wall_s"])
                log(f"  round {k} c{c}: {len(rows)} rows {o['wall_s']:.1f} s, {nan} NaN rows")
    finally:
        server.stop()
    out["walls_s"] = {c: [r(x) for x in v] for c, v in walls.items()}
    out["pairs_per_s"] = {c: r(args.rows * len(v) / sum(v)) for c, v in walls.items()}
    out["c1_over_c4"] = r(sum(walls["4"]) / sum(walls["1"]))
    out["load_average_end"] = load_average()
    return out


def main() -> int:
    args = build_parser().parse_args()
    emit(measure(args), args.json)
    return 0


def render(fig: dict[str, Any], record: dict[str, Any] | None = None) -> str:
    """The "Concurrency on a one-slot server" section of RESULTS.md."""
    rows = [
        [f"concurrency {c}", fig["pairs_per_s"][c], ", ".join(fmt(x, 1) for x in w)]
        for c, w in fig["walls_s"].items()
    ]
    ratio = fig["c1_over_c4"]
    return "\n".join(
        [
            f"Ours on llama-cpp-python's server (one request at a time; SmolLM2-135M, "
            f"n_threads 2), {fig['rounds']} rounds of {fig['rows']} new rows per concurrency, "
            "the order alternating between rounds; the backend as shipped, embedded MiniLM.",
            "",
            table(["", "pairs/s", "runs (s)"], rows),
            "",
            f"Concurrency 1 over concurrency 4: **{fmt(ratio)}x** pairs/s. Load average "
            f"{' '.join(map(str, fig.get('load_average_start', [])))} at the start.",
        ]
    )


if __name__ == "__main__":
    raise SystemExit(main())
