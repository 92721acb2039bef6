"""Write tests/data/judge_embedded_default.json: the embedded default's judge check, pair by pair.

``relevancy.scoring.judge.EMBEDDED_DEFAULT`` (the figure the CLI and the dashboard quote) is
this check's agreement; ``tests/test_judge.py`` holds the constant to this record and scores a
sample of its pairs again with the real models, so the full 80-answer check (about four
minutes here) need not run in every test run. Refresh it after a change to the models, the
prompt or the check set, with the repository's environment::

    .venv/bin/python tests/data/make_judge_record.py

then set ``EMBEDDED_DEFAULT`` to the figures it prints.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from relevancy import AnswerRelevancy
from relevancy.scoring.judge import check_judge

OUT = Path(__file__).resolve().parent / "judge_embedded_default.json"


def main() -> None:
    with tempfile.TemporaryDirectory() as cache:
        check = check_judge(AnswerRelevancy(cache=str(Path(cache) / "cache")), save=False)
    record = check.to_dict()
    record.pop("seconds", None)  # this machine's time, not a property of the check
    OUT.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    print(
        f"agreement {check.agreement:.3f} (CI {check.ci_low:.3f}-{check.ci_high:.3f}), "
        f"cos(question, answer) {check.baselines['cos(question, answer)']:.3f}, "
        f"failed {check.failed}: {OUT}"
    )


if __name__ == "__main__":
    main()
