"""The embedded generator's worker process: ``python -m relevancy.backends._llama_worker``.

Started by ``relevancy.backends._llama_client`` (see there why). It reads one JSON request per
line on stdin and writes one JSON answer per line to stdout:

* ``{"id": 1, "op": "generate", "settings": {...}, "response": "...", "n": 3, "language": null}``
  → ``{"id": 1, "ok": true, "set": {GenerationSet...}}``, or ``{"id": 1, "ok": false,
  "type": "ConfigError", "error": "..."}``;
* ``{"id": 2, "op": "answer", "settings": {...}, "messages": [...], "seed": 0}`` → ``{"id": 2,
  "ok": true, "answer": {Answer...}}``: an experiment's answer
  (:func:`relevancy.backends.answerers.answer_here`);
* ``{"id": 3, "op": "info"}`` → its process id, the models it holds, whether each uses
  llama.cpp's extra buffer types, and its OpenMP waiting policy (the tests read it).

It exits when its stdin closes. Its own stdout is moved to stderr first, so nothing a native
library prints can break the protocol. ``RELEVANCY_WORKER_FAULT=crash@N`` (or ``hang@N``) makes
it kill itself with SIGSEGV (or stop answering) at its Nth generate request: the tests of the
crash handling use it.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sys
import time
from typing import Any

from relevancy.backends import _local_generator
from relevancy.backends._llama_client import FAULT_ENV
from relevancy.backends._local_generator import SmolLMGenerator
from relevancy.backends.answerers import answer_here
from relevancy.errors import RelevancyError

__all__ = ["main"]


def _fault() -> tuple[str, int] | None:
    """The simulated fault asked for by ``RELEVANCY_WORKER_FAULT`` (``crash@N``/``hang@N``)."""
    found = re.fullmatch(r"\s*(crash|hang)@(\d+)\s*", os.environ.get(FAULT_ENV, ""))
    return (found.group(1), int(found.group(2))) if found else None


def _generate(request: dict[str, Any], generators: dict[str, SmolLMGenerator]) -> dict[str, Any]:
    settings = dict(request.get("settings") or {})
    key = json.dumps(settings, sort_keys=True)
    try:
        if key not in generators:
            generators[key] = SmolLMGenerator(**settings, in_process=True)
        out = generators[key].generate_here(
            request["response"], int(request["n"]), request.get("language")
        )
    except RelevancyError as exc:
        return {"ok": False, "type": type(exc).__name__, "error": str(exc)}
    except Exception as exc:  # a bug: said, and the worker goes on
        return {"ok": False, "type": "GenerationError", "error": f"{type(exc).__name__}: {exc}"}
    return {"ok": True, "set": {**out.to_dict(), "cacheable": out.cacheable}}


def _answer(request: dict[str, Any]) -> dict[str, Any]:
    try:
        out = answer_here(request["settings"], request["messages"], int(request.get("seed", 0)))
    except RelevancyError as exc:
        return {"ok": False, "type": type(exc).__name__, "error": str(exc)}
    except Exception as exc:  # a bug: said, and the worker goes on
        return {"ok": False, "type": "GenerationError", "error": f"{type(exc).__name__}: {exc}"}
    return {"ok": True, "answer": out.to_dict()}


def _info() -> dict[str, Any]:
    models = _local_generator._MODELS
    held = {"|".join(map(str, key)): llm for key, (llm, _lock) in models.items()}
    return {
        "ok": True,
        "pid": os.getpid(),
        "models": {key: id(llm) for key, llm in held.items()},
        "extra_bufts": {key: bool(llm.model_params.use_extra_bufts) for key, llm in held.items()},
        "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"),
    }


def main() -> int:
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "w", encoding="utf-8", buffering=1)
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # stray output goes to stderr
    sys.stdout = sys.stderr
    fault = _fault()
    generators: dict[str, SmolLMGenerator] = {}
    served = 0
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        if request.get("op") == "generate":
            served += 1
            if fault and served == fault[1]:
                if fault[0] == "crash":
                    os.kill(os.getpid(), signal.SIGSEGV)
                while True:  # hang
                    time.sleep(3600)
            answer = _generate(request, generators)
        elif request.get("op") == "answer":
            answer = _answer(request)
        elif request.get("op") == "info":
            answer = _info()
        else:
            answer = {"ok": False, "type": "GenerationError", "error": "unknown request"}
        answers.write(json.dumps({**answer, "id": request.get("id")}) + "\n")
        answers.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
