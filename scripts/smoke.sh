#!/usr/bin/env bash
# The last step of scripts/setup.sh: prove the embedded models run here. One row is scored in a
# child process (`python -m relevancy.scoring.doctor smoke`, the generator in that process) under
# `timeout`. If the child dies on a signal (a crash in llama.cpp: a wheel compiled with
# -march=native on some CPUs) or hangs, llama-cpp-python is rebuilt once without native CPU
# flags (no pip cache: pip keys its cache by version, not by build flags) and the row is tried
# again. If it still fails, one line names the CPU, the component and what to do.
#
#   RELEVANCY_PYTHON         the interpreter (default .venv/bin/python)
#   RELEVANCY_SMOKE_TIMEOUT  seconds per try (default 180)
#   RELEVANCY_REBUILD_PIP    the pip command used for the rebuild (default "$RELEVANCY_PYTHON -m
#                            pip"; the tests point it at a recorder)
#   RELEVANCY_SMOKE_STAMP    a file recording the installation the smoke score last passed on
#                            (scripts/smoke_stamp.py): when set and the installation is the same,
#                            the score is skipped; written after a pass (scripts/setup.sh sets it)
set -uo pipefail
cd "$(dirname "$0")/.."
PY="${RELEVANCY_PYTHON:-.venv/bin/python}"
TIMEOUT="${RELEVANCY_SMOKE_TIMEOUT:-180}"
# the same flags as relevancy.scoring.doctor.PORTABLE_CMAKE_ARGS
PORTABLE="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DLLAVA_BUILD=OFF"

cpu_model() {
  local model
  model="$(grep -m1 '^model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | sed 's/^ *//')"
  echo "${model:-$(uname -m) CPU}"
}
llama_version() {
  "$PY" -c "import importlib.metadata as m; print(m.version('llama-cpp-python'))" 2>/dev/null \
    || echo "unknown"
}
# Runs one try; sets OUTCOME to ok, crash:SIGNAL, hang or error:LINE.
smoke() {
  local out rc
  out="$(RELEVANCY_SMOKE_ATTEMPT="$1" timeout -k 10 "$TIMEOUT" "$PY" -m relevancy.scoring.doctor smoke 2>&1)"
  rc=$?
  if [ "$rc" -eq 0 ]; then
    OUTCOME=ok
    echo "==> ${out##*$'\n'}"
    stamp "${out##*$'\n'}"
  elif [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    OUTCOME=hang
  elif [ "$rc" -gt 128 ]; then
    OUTCOME="crash:SIG$(kill -l $((rc - 128)) 2>/dev/null || echo $((rc - 128)))"
  else
    OUTCOME="error:${out##*$'\n'}"
  fi
}
STAMP="${RELEVANCY_SMOKE_STAMP:-}"
stamp() {  # after a pass: record what it passed on (a failure to write costs only a re-run)
  if [ -n "$STAMP" ] && ! "$PY" scripts/smoke_stamp.py write "$STAMP" "$1"; then
    echo "note: could not record the smoke score in $STAMP: it runs again next time" >&2
  fi
}
describe() {  # what went wrong, in words
  case "$1" in
    hang) echo "hung (no score in ${TIMEOUT} s)" ;;
    crash:*) echo "crashed (killed by ${1#crash:})" ;;
  esac
}

if [ -n "$STAMP" ]; then
  if when="$("$PY" scripts/smoke_stamp.py check "$STAMP" 2>/dev/null)"; then
    echo "==> smoke score: passed on $when, and nothing it runs on has changed since" \
      "(delete $STAMP to run it again)"
    exit 0
  fi
  rm -f "$STAMP"
fi
echo "==> smoke score: one row with the embedded models, in a child process"
smoke 1
case "$OUTCOME" in
  ok) exit 0 ;;
  error:*)
    echo "error: the smoke score failed: ${OUTCOME#error:}" >&2
    exit 1 ;;
esac
VERSION="$(llama_version)"
echo "==> the embedded generator (llama.cpp, llama-cpp-python $VERSION) $(describe "$OUTCOME") on" \
  "$(cpu_model); rebuilding llama-cpp-python without native CPU flags (~5-10 min)"
if [ -n "${RELEVANCY_REBUILD_PIP:-}" ]; then
  read -r -a PIP <<< "$RELEVANCY_REBUILD_PIP"
else
  PIP=("$PY" -m pip --disable-pip-version-check)
fi
if ! CMAKE_ARGS="$PORTABLE" "${PIP[@]}" install --no-cache-dir --force-reinstall \
    --no-deps "llama-cpp-python==$VERSION"; then
  echo "error: could not rebuild llama-cpp-python $VERSION on $(cpu_model) (see pip's output" \
    "above): score with an API model instead (--llm openai:MODEL, see the README)" >&2
  exit 1
fi
smoke 2
case "$OUTCOME" in
  ok)
    echo "==> llama-cpp-python $VERSION rebuilt without native CPU flags: the smoke score passes"
    exit 0 ;;
  error:*)
    echo "error: the smoke score failed after the rebuild: ${OUTCOME#error:}" >&2
    exit 1 ;;
esac
echo "error: the embedded generator (llama.cpp, llama-cpp-python $VERSION) $(describe "$OUTCOME")" \
  "on $(cpu_model), even rebuilt without native CPU flags: score with an API model instead" \
  "(--llm openai:MODEL, see the README), or report it with the output of \`relevancy doctor\`" >&2
exit 1
