"""``relevancy doctor``: can this installation score, and if not, what is wrong?"""

from __future__ import annotations

import argparse
from typing import Any

from relevancy.scoring.doctor import SMOKE_TIMEOUT_S, run_doctor


def register(sub: Any) -> None:
    """Add this command's parser to ``sub`` (the subcommands of ``relevancy``)."""
    p = sub.add_parser(
        "doctor",
        help="check this installation: native parts, CPU, models, folders, extras, and one row "
        "scored in a child process; exit code 1 with the failing line when something is off",
    )
    p.add_argument("--no-smoke", action="store_true", help="skip the smoke score")
    p.add_argument(
        "--timeout", type=float, default=SMOKE_TIMEOUT_S, help="seconds the smoke score may take"
    )
    p.add_argument("--json", action="store_true", help="print the checks as JSON")
    p.set_defaults(func=cmd_doctor)


def cmd_doctor(args: argparse.Namespace) -> int:
    return run_doctor(smoke=not args.no_smoke, timeout=args.timeout, as_json=args.json)
