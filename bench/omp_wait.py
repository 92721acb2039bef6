"""libgomp's waiting policy and llama.cpp under load: the floor and ours, twice.

llama.cpp's CPU backend is built with OpenMP (libgomp). This bench runs the throughput
comparison (floor = sequential ``create_completion`` from one thread; ours =
``AnswerRelevancy().score_many``) in two subprocesses: one with libgomp's default waiting
(busy-wait, throttled only when libgomp counts more threads than cores) and one with
``OMP_WAIT_POLICY=PASSIVE``. On a machine whose cores other processes also use, the
single-thread caller is where the default hurts. :func:`render` writes the "OpenMP waiting
policy" section of ``RESULTS.md``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import ROOT, emit, fmt, log, parser, r, table  # noqa: E402


def one(rows: int, chunks: int, passive: bool) -> dict[str, Any]:
    env = dict(os.environ)
    env.pop("OMP_WAIT_POLICY", None)
    cmd = [sys.executable, str(ROOT / "bench" / "throughput.py"), "--rows", str(rows)]
    cmd += ["--chunks", str(chunks)]
    if passive:
        env["OMP_WAIT_POLICY"] = "PASSIVE"
    else:
        cmd.append("--omp-spin")
    with tempfile.NamedTemporaryFile(suffix=".json") as fh:
        subprocess.run([*cmd, "--json", fh.name], env=env, check=True, capture_output=True)
        fig = json.loads(Path(fh.name).read_text())
    log(f"  {'passive' if passive else 'default'}: ours/floor {fig['ours_over_floor']}")
    return {
        "floor_s": fig["floor"]["wall_s"],
        "ours_s": fig["ours"]["wall_s"],
        "ours_over_floor": fig["ours_over_floor"],
        "load_average_end": fig.get("load_average_end"),
    }


def build_parser() -> Any:
    p = parser(__doc__.splitlines()[0], default_rows=24)
    p.add_argument("--chunks", type=int, default=4)
    return p


def measure(args: Any) -> dict[str, Any]:
    """The throughput comparison with each waiting policy, one after the other."""
    default = one(args.rows, args.chunks, passive=False)
    passive = one(args.rows, args.chunks, passive=True)
    out = {
        "bench": "omp_wait",
        "rows": args.rows,
        "default": default,
        "passive": passive,
        "floor_default_over_passive": r(default["floor_s"] / passive["floor_s"]),
        "ours_default_over_passive": r(default["ours_s"] / passive["ours_s"]),
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
    """The "OpenMP waiting policy" section of RESULTS.md."""
    d, p = fig["default"], fig["passive"]
    return "\n".join(
        [
            f"The throughput comparison on {fig['rows']} rows, once per libgomp waiting policy "
            "(separate processes, one after the other):",
            "",
            table(
                ["OMP_WAIT_POLICY", "floor s", "ours s", "ours / floor", "load at end"],
                [
                    [
                        "libgomp default (busy-wait)",
                        d["floor_s"],
                        d["ours_s"],
                        d["ours_over_floor"],
                        " ".join(map(str, d.get("load_average_end") or [])),
                    ],
                    [
                        "PASSIVE",
                        p["floor_s"],
                        p["ours_s"],
                        p["ours_over_floor"],
                        " ".join(map(str, p.get("load_average_end") or [])),
                    ],
                ],
            ),
            "",
            f"Floor default/passive: {fmt(fig['floor_default_over_passive'])}x; ours "
            f"default/passive: {fmt(fig['ours_default_over_passive'])}x.",
        ]
    )


if __name__ == "__main__":
    raise SystemExit(main())
