"""Seconds per GRPO step and sampled tokens/s: gymhub's trainer vs TRL's GRPOTrainer, like for
like, interleaved in one process.

Same tiny offline model (a Qwen2 config, character tokenizer), same env and reward
(toy-letters-v0, the verifier's outcome + β·path signal), G=8, 4 prompts per step, 16 new tokens,
one optimiser step per batch, the whole batch in one micro-batch, no KL (no reference model),
token-mean loss, one thread on CPU. Same precision on both sides: float32 weights and no
autocast, as gymhub trains. TRL's own defaults differ (bf16 autocast and gradient checkpointing
on); both are turned off here, so the two do the same arithmetic.

The two trainers take turns: TRL runs its loop, and after each of its optimiser steps a
callback runs one gymhub step; each side's time excludes the other's. The first step of each
is a warm-up and is not counted. Load on a shared machine hits both sides alike, so compare the
ratio printed at the end, not the absolute numbers.

    python benchmarks/trainer_step.py [--steps 10] [--hidden 64] [--device cpu|cuda]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

from transformers import TrainerCallback

TASKS_PER_STEP, GROUP_SIZE, NEW_TOKENS = 4, 8, 16
ROWS = TASKS_PER_STEP * GROUP_SIZE


def build_model(folder: Path, hidden: int, layers: int, heads: int) -> Path:
    from tiny_model import build_tiny_model

    return build_tiny_model(folder, seed=0, hidden=hidden, layers=layers, heads=heads, chars=True)


def gymhub_trainer(model: Path, steps: int, out: Path, device: str) -> Any:
    from gymhub.trainers.grpo import GRPOConfig, GRPOTrainer

    cfg = GRPOConfig(
        env="toy-letters-v0",
        model=str(model),
        steps=steps + 1,
        tasks_per_step=TASKS_PER_STEP,
        group_size=GROUP_SIZE,
        max_new_tokens=NEW_TOKENS,
        lr=1e-3,
        output_dir=str(out),
        console=False,
        concurrency=ROWS,  # the whole step's episodes decode as one batch, as TRL's generate does
        micro_batch=ROWS,  # one forward/backward per step, as TRL's per_device_train_batch_size
        device=device,
    )
    return GRPOTrainer(cfg)


def trl_trainer(model: Path, steps: int, out: Path, device: str, callback: Any) -> Any:
    import torch
    import trl
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from gymhub.trainers import trl as gymhub_trl

    tok = AutoTokenizer.from_pretrained(model)
    tok.padding_side = "left"
    outcome, path_signal = gymhub_trl.reward_funcs("toy-letters-v0")
    args = trl.GRPOConfig(
        output_dir=str(out),
        per_device_train_batch_size=ROWS,
        num_generations=GROUP_SIZE,
        max_completion_length=NEW_TOKENS,
        max_steps=steps + 1,
        learning_rate=1e-3,
        logging_steps=1,
        report_to="none",
        use_cpu=device == "cpu",
        save_strategy="no",
        seed=0,
        reward_weights=[1.0, 0.1],
        temperature=1.0,
        # like for like: TRL defaults to bf16 autocast and gradient checkpointing; gymhub trains
        # float32 weights with neither
        bf16=False,
        fp16=False,
        gradient_checkpointing=False,
        beta=0.0,  # no reference model (gymhub: kl_coef=0)
        num_iterations=1,  # μ = 1
        loss_type="dapo",  # token-mean over the batch (gymhub: loss_agg="token-mean")
    )
    policy = AutoModelForCausalLM.from_pretrained(model, dtype=torch.float32)
    return trl.GRPOTrainer(
        model=policy,
        processing_class=tok,
        reward_funcs=[outcome, path_signal],
        args=args,
        train_dataset=gymhub_trl.dataset("toy-letters-v0"),
        callbacks=[callback],
    )


class Interleave(TrainerCallback):
    """A TRL callback: after each TRL optimiser step, one gymhub step; each side timed apart."""

    def __init__(self, gymhub_step: Callable[[], float], sync: Callable[[], None]) -> None:
        self.gymhub_step, self.sync = gymhub_step, sync
        self.trl_s: list[float] = []  # wall-clock seconds of each step
        self.gymhub_s: list[float] = []
        self.trl_cpu: list[float] = []  # CPU seconds of the process (all threads) in each step
        self.gymhub_cpu: list[float] = []
        self.gymhub_tokens: list[float] = []
        self.resumed = self.resumed_cpu = 0.0

    def on_train_begin(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
        self.resumed, self.resumed_cpu = time.perf_counter(), time.process_time()

    def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
        self.sync()
        self.trl_s.append(time.perf_counter() - self.resumed)
        self.trl_cpu.append(time.process_time() - self.resumed_cpu)
        start, start_cpu = time.perf_counter(), time.process_time()
        tokens = self.gymhub_step()
        self.sync()
        self.gymhub_s.append(time.perf_counter() - start)
        self.gymhub_cpu.append(time.process_time() - start_cpu)
        self.gymhub_tokens.append(tokens)
        self.resumed, self.resumed_cpu = time.perf_counter(), time.process_time()


def main() -> None:
    import torch

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--steps", type=int, default=10, help="timed steps per side (plus one warm-up)")
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--device", default="cpu", help="cpu, cuda, cuda:0, ...")
    args = parser.parse_args()
    if args.device == "cpu":
        torch.set_num_threads(1)
        torch.set_flush_denormal(True)

    def sync() -> None:
        if torch.device(args.device).type == "cuda":
            torch.cuda.synchronize()

    with tempfile.TemporaryDirectory() as tmp:
        model = build_model(Path(tmp) / "model", args.hidden, args.layers, args.heads)
        ours = gymhub_trainer(model, args.steps, Path(tmp) / "ours", args.device)
        params = sum(p.numel() for p in ours.model.parameters())
        clock = Interleave(lambda: float(ours.train_step()["policy_tokens"]), sync)
        if importlib.util.find_spec("trl") is None:  # gymhub alone: nothing to compare with
            for _ in range(args.steps + 1):
                clock.on_step_end(None, None, None)
            print(f"TRL is not installed: gymhub {statistics.mean(clock.gymhub_s[1:]):.3f} s/step")
            return
        theirs = trl_trainer(model, args.steps, Path(tmp) / "trl", args.device, clock)
        from transformers import PrinterCallback, ProgressCallback

        theirs.remove_callback(PrinterCallback)  # TRL's per-step log lines and progress bar
        theirs.remove_callback(ProgressCallback)
        theirs.train()
        lengths = [
            h["completions/mean_length"] for h in theirs.state.log_history if "completions/mean_length" in h
        ]
    trl_s, ours_s = clock.trl_s[1:], clock.gymhub_s[1:]  # the first step of each is the warm-up
    trl_tokens = sum(lengths[1:]) * ROWS
    ours_tokens = sum(clock.gymhub_tokens[1:])
    rows = {
        "gymhub GRPOTrainer": (ours_s, clock.gymhub_cpu[1:], ours_tokens),
        "TRL GRPOTrainer": (trl_s, clock.trl_cpu[1:], trl_tokens),
    }

    from rich.console import Console
    from rich.table import Table

    table = Table(
        title=(
            f"GRPO step, {params / 1e6:.2f} M-param model, G={GROUP_SIZE} × {TASKS_PER_STEP} prompts, "
            f"{NEW_TOKENS} new tokens, {args.device}, float32, {len(ours_s)} steps each, interleaved"
        )
    )
    table.add_column("trainer")
    table.add_column("mean s / step", justify="right")
    table.add_column("median s / step", justify="right")
    table.add_column("CPU s / step", justify="right")
    table.add_column("sampled tokens / step", justify="right")
    for name, (seconds, cpu, tokens) in rows.items():
        table.add_row(
            name,
            f"{statistics.mean(seconds):.3f}",
            f"{statistics.median(seconds):.3f}",
            f"{statistics.mean(cpu):.3f}",
            f"{tokens / len(seconds):.0f}",
        )
    mean_ratio = statistics.mean(ours_s) / statistics.mean(trl_s)
    median_ratio = statistics.median(ours_s) / statistics.median(trl_s)
    cpu_ratio = statistics.mean(clock.gymhub_cpu[1:]) / statistics.mean(clock.trl_cpu[1:])
    table.caption = (
        f"step time ratio gymhub / TRL: {mean_ratio:.2f} (means), {median_ratio:.2f} (medians); "
        f"CPU time ratio {cpu_ratio:.2f}; goal ≤ 0.8"
    )
    Console(width=140).print(table)
    print(f"ratio_mean={mean_ratio:.3f} ratio_median={median_ratio:.3f} cpu_ratio={cpu_ratio:.3f}")


if __name__ == "__main__":
    main()
