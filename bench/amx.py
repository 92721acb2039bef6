"""The AMX fix and the worker process, side by side: ``bench/throughput.py`` once per set-up.

Set-ups (each a ``throughput.py --rows N --chunks 1`` subprocess: the floor, then ours on the
same rows, a fresh cache):

``before``      native build, in-process, llama.cpp's extra buffer types on (the old default)
``no_bufts``    native build, in-process, ``use_extra_bufts = False`` (the fix)
``portable``    a build with ``-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON
                -DGGML_F16C=ON`` (``--portable DIR``: a folder holding that build's
                ``llama_cpp`` package, put first on PYTHONPATH), in-process
``worker``      native build, the generator in its worker process (the shipped default)

plus, with ``--spin``, ``no_bufts`` and ``worker`` again under libgomp's default waiting
(``*_spin``). The set-ups run in rounds, their order rotating each round, so load from other
processes falls on all of them alike. Every run but the ``*_spin`` ones has
``OMP_WAIT_POLICY=PASSIVE`` (see bench/omp_wait.py).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import ROOT, emit, load_average, log, parser, r  # noqa: E402

SETUPS: dict[str, tuple[list[str], bool, bool]] = {  # name: (options, portable, spin)
    "before": (["--generator", "in-process", "--extra-bufts", "on"], False, False),
    "no_bufts": (["--generator", "in-process"], False, False),
    "portable": (["--generator", "in-process"], True, False),
    "worker": (["--generator", "worker"], False, False),
    "no_bufts_spin": (["--generator", "in-process", "--omp-spin"], False, True),
    "worker_spin": (["--generator", "worker", "--omp-spin"], False, True),
}


def one(name: str, rows: int, portable: str | None) -> dict[str, Any]:
    options, use_portable, spin = SETUPS[name]
    env = dict(os.environ)
    env.pop("OMP_WAIT_POLICY", None)
    if not spin:
        env["OMP_WAIT_POLICY"] = "PASSIVE"
    paths = [str(ROOT), env.get("PYTHONPATH", "")]
    if use_portable:
        paths.insert(0, str(portable))
    env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    cmd = [sys.executable, str(ROOT / "bench" / "throughput.py"), "--rows", str(rows)]
    with tempfile.NamedTemporaryFile(suffix=".json") as fh:
        cmd += ["--chunks", "1", *options, "--json", fh.name]
        subprocess.run(cmd, env=env, check=True, capture_output=True)
        fig = json.loads(Path(fh.name).read_text())
    return {
        "floor_s": fig["floor"]["wall_s"],
        "ours_s": fig["ours"]["wall_s"],
        "nan_rows": fig["ours"]["nan_rows"],
        "questions_identical_to_floor": fig["ours"]["questions_identical_to_floor"],
        "system_info": fig["llama_cpp"]["system_info"],
        "llama_cpp_path": fig["llama_cpp"]["path"],
        "rss_after_load_mb": fig["rss_after_load_mb"],
        "load_average_end": fig.get("load_average_end"),
    }


def build_parser() -> Any:
    p = parser(__doc__.splitlines()[0], default_rows=16)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--portable", default=None, help="folder holding a portable llama_cpp")
    p.add_argument("--spin", action="store_true", help="add the *_spin set-ups")
    p.add_argument("--setups", default="", help="comma-separated: only these set-ups")
    return p


def measure(args: Any) -> dict[str, Any]:
    names = [n for n in SETUPS if (args.portable or n != "portable")]
    if not args.spin:
        names = [n for n in names if not n.endswith("_spin")]
    if args.setups:
        names = [n.strip() for n in args.setups.split(",") if n.strip() in SETUPS]
    runs: dict[str, list[dict[str, Any]]] = {n: [] for n in names}
    log(f"amx: {len(names)} set-ups x {args.rounds} rounds of {args.rows} rows, {load_average()}")
    for k in range(args.rounds):
        order = names[k % len(names) :] + names[: k % len(names)]
        for name in order:
            got = one(name, args.rows, args.portable)
            runs[name].append(got)
            log(f"  round {k} {name:<14} floor {got['floor_s']:.1f} s  ours {got['ours_s']:.1f} s")
    out: dict[str, Any] = {"bench": "amx", "rows": args.rows, "rounds": args.rounds, "setups": {}}
    base = sum(x["ours_s"] for x in runs[names[0]])
    for name in names:
        ours = [x["ours_s"] for x in runs[name]]
        floor = [x["floor_s"] for x in runs[name]]
        out["setups"][name] = {
            "ours_s": [r(x) for x in ours],
            "floor_s": [r(x) for x in floor],
            "ours_total_s": r(sum(ours)),
            "pairs_per_s": r(args.rows * len(ours) / sum(ours)),
            "ours_over_before": r(sum(ours) / base),
            "ours_over_own_floor_median": r(statistics.median(o / f for o, f in zip(ours, floor))),
            "nan_rows": sum(x["nan_rows"] for x in runs[name]),
            "questions_identical_to_floor": [x["questions_identical_to_floor"] for x in runs[name]],
            "system_info": runs[name][0]["system_info"],
            "llama_cpp_path": runs[name][0]["llama_cpp_path"],
            "rss_after_load_mb": runs[name][0]["rss_after_load_mb"],
        }
    return out


def main() -> int:
    args = build_parser().parse_args()
    emit(measure(args), args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
