"""``relevancy doctor``: can this installation score, and if not, what is wrong?"""

from __future__ import annotations

import argparse
from typing import Any

from relevancy.cli import add_command


def register(sub: Any) -> None:
    """Add this command's parser to ``sub`` (the subcommands of ``relevancy``)."""
    p = add_command(sub, "doctor")
    p.add_argument("--no-smoke", action="store_true", help="skip the smoke score")
    p.add_argument("--timeout", type=float, default=None, help="seconds the smoke score may take")
    p.add_argument("--json", action="store_true", help="print the checks as JSON")
    p.set_defaults(func=cmd_doctor)


def cmd_doctor(args: argparse.Namespace) -> int:
    # lazy: the checks load the backends and the metric, which `relevancy doctor --help` needs not
    from relevancy.scoring.doctor import SMOKE_TIMEOUT_S, run_doctor

    timeout = SMOKE_TIMEOUT_S if args.timeout is None else args.timeout
    return run_doctor(smoke=not args.no_smoke, timeout=timeout, as_json=args.json)
