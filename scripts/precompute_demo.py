"""Score the bundled demo with the embedded default and ship the results with the package.

Writes ``relevancy/data/demo_results.jsonl``: one ``RelevancyResult.to_dict()`` per line, in the
row order of ``relevancy/data/demo.csv``, embeddings included, floats rounded to 5 decimals. The
dashboard imports this file as the run "Demo (embedded default)" on first start, so a fresh
install shows a populated dashboard offline within seconds.

Usage::

    python scripts/precompute_demo.py            # uses a throwaway cache (a real re-score)
    python scripts/precompute_demo.py --retriage # only each row's reason and flags, decided
                                                 # again by relevancy.core.triage (no scoring)
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "relevancy" / "data"


def _round(value: object, digits: int = 5) -> object:
    if isinstance(value, float):
        return round(value, digits)
    if isinstance(value, list):
        return [_round(v, digits) for v in value]
    if isinstance(value, dict):
        return {k: _round(v, digits) for k, v in value.items()}
    return value


def retriage() -> int:
    """Rewrite the shipped rows' ``reason`` and ``flags`` from their own evidence (the triage
    changed, the scores did not)."""
    sys.path.insert(0, str(ROOT))
    from relevancy import RelevancyResult
    from relevancy.core.triage import triage

    out = DATA / "demo_results.jsonl"
    lines = []
    for line in out.read_text(encoding="utf-8").splitlines():
        data = json.loads(line)
        triaged = triage(RelevancyResult.from_dict(data))
        data["reason"], data["flags"] = triaged.reason, list(triaged.flags)
        lines.append(json.dumps(data, ensure_ascii=False, allow_nan=False))
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"re-triaged {len(lines)} rows of {out}", file=sys.stderr)
    return 0


def main() -> int:
    if "--retriage" in sys.argv[1:]:
        return retriage()
    sys.path.insert(0, str(ROOT))
    from relevancy import AnswerRelevancy, read_table

    frame = read_table(DATA / "demo.csv")
    with tempfile.TemporaryDirectory() as cache_dir:
        metric = AnswerRelevancy(cache=cache_dir, concurrency=2)
        started = time.perf_counter()
        results = metric.score_many(
            frame, progress=lambda d, t: print(f"\r{d}/{t}", end="", file=sys.stderr)
        )
    print(f"\nscored {len(results)} rows in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    out = DATA / "demo_results.jsonl"
    with out.open("w", encoding="utf-8") as fh:
        for result in results:
            data = _round(result.to_dict())
            data["cached"] = False
            fh.write(json.dumps(data, ensure_ascii=False, allow_nan=False) + "\n")
    print(f"wrote {out} ({out.stat().st_size / 1e6:.2f} MB)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
