#!/usr/bin/env bash
# Set up (if needed) and start the dashboard on the embedded offline default.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export NUMBA_CACHE_DIR="${NUMBA_CACHE_DIR:-$HOME/.cache/relevancy/numba}"
exec .venv/bin/streamlit run app.py "$@"
