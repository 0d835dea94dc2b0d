#!/usr/bin/env bash
# GPU check: vLLM replicas as Ray actors (ModelServers), sticky routing (MultiEndpoint),
# 1,000 offline rollouts through wai.simulate; prints rows/s and tokens/s.
#
# Usage (from the repository root, on a machine with a GPU):
#   cluster/gpu_check.sh [MODEL] [REPLICAS] [BUDGET]
#     MODEL     a Hugging Face id or a LOCAL model directory (default Qwen/Qwen2.5-0.5B-Instruct)
#     REPLICAS  vLLM servers, one GPU each (default: 1)
#     BUDGET    rollouts (default: 1000); CONCURRENCY env var (default 256)
#
# Lent GPU machines cannot reach the internet: vLLM must already be installed (or a wheel
# reachable by pip), and MODEL must be a local directory or already in the Hugging Face cache
# (HF_HOME). The script says which one is missing instead of hanging on a download.
# The result is printed and, when $OUT is set, written to $OUT/gpu_check.json.
set -euo pipefail

MODEL="${1:-${WHILEAI_GPU_MODEL:-Qwen/Qwen2.5-0.5B-Instruct}}"
REPLICAS="${2:-1}"
BUDGET="${3:-1000}"
CONCURRENCY="${CONCURRENCY:-256}"
PY="${PYTHON:-python}"
if [ -x .venv/bin/python ] && [ -z "${PYTHON:-}" ]; then PY=.venv/bin/python; fi

command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total --format=csv,noheader || true

if ! "$PY" -c "import vllm" 2>/dev/null; then
  echo "vLLM is not installed for $PY; trying pip install vllm (needs a package index or a local wheel)"
  if ! "$PY" -m pip install --quiet vllm; then
    echo "ERROR: vLLM could not be installed (this machine has no internet). Install it from a local" >&2
    echo "wheel (pip install /path/vllm-*.whl) or use an image that ships it, then run again." >&2
    exit 2
  fi
fi
"$PY" -c "import vllm; print('vllm', vllm.__version__)"

if [ -d "$MODEL" ]; then
  echo "model: local directory $MODEL"
else
  export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
  if ! "$PY" -c "from huggingface_hub import snapshot_download as s; s('$MODEL', local_files_only=True)" 2>/dev/null; then
    echo "ERROR: $MODEL is neither a local directory nor in the Hugging Face cache, and this machine" >&2
    echo "cannot download it. Pass a local model path: cluster/gpu_check.sh /models/Qwen2.5-0.5B-Instruct" >&2
    exit 3
  fi
  echo "model: $MODEL from the Hugging Face cache (offline)"
fi

export RAY_AUTH_MODE="${RAY_AUTH_MODE:-disabled}"
MODEL="$MODEL" REPLICAS="$REPLICAS" BUDGET="$BUDGET" CONCURRENCY="$CONCURRENCY" "$PY" - <<'PYEOF'
import json, os, time

import whileai_ray as wai
from whileai_ray.agents.routing import MultiEndpoint
from whileai_ray.runtime.cluster import ensure_ray
from whileai_ray.runtime.servers.model_servers import ModelServers

TOOLS = [{"type": "function", "function": {
    "name": "lookup_order",
    "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}},
                   "required": ["order_id"]}}}]
model, replicas = os.environ["MODEL"], int(os.environ["REPLICAS"])
budget, concurrency = int(os.environ["BUDGET"]), int(os.environ["CONCURRENCY"])
served = "gpu-check-model"

ensure_ray()
t0 = time.monotonic()
with ModelServers(model, replicas=replicas, gpus_per_replica=1, cpus_per_replica=2, command="vllm",
                  extra_args=["--served-model-name", served, "--max-model-len", "4096",
                              "--gpu-memory-utilization", "0.85", "--enable-prefix-caching"],
                  health_timeout_s=900) as servers:
    startup = time.monotonic() - t0
    print(f"{replicas} vLLM replica(s) healthy in {startup:.1f}s: {servers.urls}", flush=True)
    agent = servers.endpoint()
    try:
        t1 = time.monotonic()
        data = wai.simulate(agent=agent, tools=TOOLS, simulator=False, budget=budget,
                            concurrency=concurrency)
    except TypeError as exc:   # MultiEndpoint not wired into simulate yet: one replica, plain backend
        print(f"MultiEndpoint not accepted by simulate ({exc}); using replica 0 only", flush=True)
        agent = wai.OpenAI(served, base_url=servers.urls[0], api_key="EMPTY")
        t1 = time.monotonic()
        data = wai.simulate(agent=agent, tools=TOOLS, simulator=False, budget=budget,
                            concurrency=concurrency)
    wall = time.monotonic() - t1
rows = list(data.rows)
out_tokens = sum(int((r.get("usage") or {}).get("output_tokens") or 0) for r in rows)
in_tokens = sum(int((r.get("usage") or {}).get("input_tokens") or 0) for r in rows)
note = {"model": model, "replicas": replicas, "routing": type(agent).__name__, "budget": budget,
        "concurrency": concurrency, "rows": len(rows), "stopped_because": data.stopped_because,
        "startup_s": round(startup, 1), "wall_s": round(wall, 2),
        "rows_per_s": round(len(rows) / wall, 1), "output_tokens": out_tokens,
        "output_tokens_per_s": round(out_tokens / wall, 1), "input_tokens": in_tokens}
print(f"rows/s: {note['rows_per_s']}  tokens/s (output): {note['output_tokens_per_s']}  "
      f"rows: {len(rows)} in {wall:.1f}s  stopped_because={data.stopped_because}")
print(json.dumps(note))
if os.environ.get("OUT"):
    with open(os.path.join(os.environ["OUT"], "gpu_check.json"), "w") as fh:
        json.dump(note, fh, indent=2)
PYEOF
