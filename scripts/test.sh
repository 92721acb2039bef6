#!/usr/bin/env bash
# Set up (if needed) and run the whole test suite: unit, real-model, HTTP-server, Streamlit
# AppTest and headless-Chromium tests.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh dev
export NUMBA_CACHE_DIR="${NUMBA_CACHE_DIR:-$HOME/.cache/relevancy/numba}"
.venv/bin/ruff check .
exec .venv/bin/python -m pytest "$@"
