#!/usr/bin/env bash
# The GRPO trainer's GPU checks, as one script for a lent GPU machine (never CI). Under 10
# minutes on one GPU: each step has its own time limit, 9 minutes together. From the
# repository root:
#   bash scripts/gpu_check.sh            # logs under $OUT (default ./gpu_check_out), figures on stdout
#
# 1. device_step  tests/trainers/test_grpo_device.py: a whole step on the GPU (μ = 2 updates,
#                 KL, TIS, the mismatch monitor, held-out eval) and the meta-device checks
# 2. learn_hf     the hf-backend learning test on the GPU: a tiny model masters toy-letters-v0
# 3. learn_vllm   the vllm-backend learning test on the GPU (a colocated vLLM engine samples);
#                 skipped, and said so, where vLLM is not installed
# 4. benchmark    benchmarks/trainer_step.py on the GPU: s/step and sampled tokens/s on a ~0.5 B
#                 random-initialised Qwen2 (Qwen2.5-0.5B's shape), and TRL's GRPOTrainer beside
#                 it where TRL is installed
#
# Needs python3 ($PYTHON) with CUDA torch, transformers, peft, safetensors, pytest. gymhub's own
# requirements (pydantic, gymnasium, sqlalchemy, ...) must import, or lie as wheels in $WHEELS
# (default .whl): on a machine without network, download them elsewhere first, e.g.
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 \
#     --platform manylinux_2_17_x86_64 -d .whl pydantic pydantic-core annotated-types \
#     typing-inspection gymnasium farama-notifications sqlalchemy greenlet "setuptools>=77" [vllm trl ...]
# (setuptools >= 77 builds the editable install below: the SPDX licence string needs it)
set -uo pipefail
PY=${PYTHON:-python3}
OUT=${OUT:-gpu_check_out}
WHEELS=${WHEELS:-.whl}
mkdir -p "$OUT"
: > "$OUT/summary.txt"
export PYTHONUNBUFFERED=1 GYMHUB_TEST_DEVICE=cuda
status=0

run_step() { # name, time limit (s), command...: its log in $OUT/name.log, its tail on stdout
  local name=$1 limit=$2 start=$SECONDS rc
  shift 2
  echo "=== $name (limit ${limit}s)"
  timeout "$limit" "$@" > "$OUT/$name.log" 2>&1
  rc=$?
  grep -v -E "Warning|warnings.warn|return forward_call|it/s\]" "$OUT/$name.log" | tail -n 20
  echo "--- $name: exit $rc after $((SECONDS - start)) s" | tee -a "$OUT/summary.txt"
  [ "$rc" -eq 0 ] || status=1
}

if [ -d "$WHEELS" ]; then
  "$PY" -m pip install -q --no-index --no-deps --no-compile --target /tmp/gymhub-site "$WHEELS"/*.whl \
    && export PYTHONPATH=/tmp/gymhub-site${PYTHONPATH:+:$PYTHONPATH}
fi
if ! "$PY" -c "import gymhub.trainers.grpo" 2> /dev/null; then
  "$PY" -m pip install -q --no-index --no-deps --no-build-isolation -e . > "$OUT/install.log" 2>&1 \
    || { echo "gymhub did not install:"; tail -n 20 "$OUT/install.log"; exit 1; }
fi
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv 2>&1 | tee "$OUT/nvidia-smi.txt"
"$PY" -c "import torch; print('torch', torch.__version__, 'cuda', torch.cuda.is_available(),
torch.cuda.get_device_name(0) if torch.cuda.is_available() else '')" 2>&1 | tee "$OUT/torch.txt"
"$PY" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" \
  || { echo "no CUDA device: nothing to check"; exit 1; }

PYTEST=("$PY" -m pytest -p no:xdist -p no:cacheprovider -q -s -rs)
run_step device_step 60 "${PYTEST[@]}" tests/trainers/test_grpo_device.py
run_step learn_hf 180 "${PYTEST[@]}" "tests/trainers/test_grpo_learns.py::test_tiny_model_masters_toy_letters[hf]"
run_step learn_vllm 180 "${PYTEST[@]}" "tests/trainers/test_grpo_learns.py::test_tiny_model_masters_toy_letters[vllm]"
run_step benchmark 120 "$PY" benchmarks/trainer_step.py --device cuda --hidden 896 --layers 24 --heads 14 --steps 3
echo "=== summary"
cat "$OUT/summary.txt"
exit $status
