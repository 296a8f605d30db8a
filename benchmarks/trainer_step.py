"""Seconds per GRPO step and sampled tokens/s: gymhub's trainer vs TRL's GRPOTrainer, same run.

Same tiny offline model (a Qwen2 config, character tokenizer), same env and reward
(toy-letters-v0, the verifier's outcome + β·path signal), G=8, 4 prompts per step, 16 new tokens,
one optimiser step per batch, CPU, one thread. Prints a table; compare the ratio, not the
absolute numbers (shared machines are noisy).

    python benchmarks/trainer_step.py [--steps 6] [--hidden 64]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")


def build_model(folder: Path, hidden: int, layers: int, heads: int) -> Path:
    from tiny_model import build_tiny_model

    return build_tiny_model(folder, seed=0, hidden=hidden, layers=layers, heads=heads, chars=True)


def ours(model: Path, steps: int, out: Path, device: str) -> dict[str, float]:
    from gymhub.trainers.grpo import GRPOConfig, GRPOTrainer

    cfg = GRPOConfig(
        env="toy-letters-v0",
        model=str(model),
        steps=steps + 1,
        tasks_per_step=4,
        group_size=8,
        max_new_tokens=16,
        lr=1e-3,
        output_dir=str(out),
        console=False,
        concurrency=32,
        micro_batch=32,
        device=device,
    )
    trainer = GRPOTrainer(cfg)
    trainer.train_step()  # warm-up
    start = time.perf_counter()
    tokens = sum(trainer.train_step()["policy_tokens"] for _ in range(steps))
    elapsed = time.perf_counter() - start
    return {"s_per_step": elapsed / steps, "tokens_per_s": tokens / elapsed}


def trl_grpo(model: Path, steps: int, out: Path, device: str) -> dict[str, float]:
    import trl
    from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback

    from gymhub.trainers import trl as gymhub_trl

    tok = AutoTokenizer.from_pretrained(model)
    tok.padding_side = "left"
    marks: list[float] = []

    class Clock(TrainerCallback):
        def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            marks.append(time.perf_counter())

    outcome, path_signal = gymhub_trl.reward_funcs("toy-letters-v0")
    args = trl.GRPOConfig(
        output_dir=str(out),
        per_device_train_batch_size=32,
        num_generations=8,
        max_completion_length=16,
        max_steps=steps + 1,
        learning_rate=1e-3,
        logging_steps=1,
        report_to="none",
        use_cpu=device == "cpu",
        save_strategy="no",
        seed=0,
        reward_weights=[1.0, 0.1],
        temperature=1.0,
    )
    trainer = trl.GRPOTrainer(
        model=AutoModelForCausalLM.from_pretrained(model),
        processing_class=tok,
        reward_funcs=[outcome, path_signal],
        args=args,
        train_dataset=gymhub_trl.dataset("toy-letters-v0"),
        callbacks=[Clock()],
    )
    trainer.train()
    lengths = [
        h["completions/mean_length"] for h in trainer.state.log_history if "completions/mean_length" in h
    ]
    elapsed = marks[-1] - marks[0]  # steps 2..N+1: the first is the warm-up
    tokens = sum(lengths[1:]) * 32
    return {"s_per_step": elapsed / steps, "tokens_per_s": tokens / elapsed}


def main() -> None:
    import torch

    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    if args.device == "cpu":
        torch.set_num_threads(1)
        torch.set_flush_denormal(True)
    with tempfile.TemporaryDirectory() as tmp:
        model = build_model(Path(tmp) / "model", args.hidden, args.layers, args.heads)
        from transformers import AutoModelForCausalLM

        params = sum(p.numel() for p in AutoModelForCausalLM.from_pretrained(model).parameters())
        rows = {"gymhub GRPOTrainer": ours(model, args.steps, Path(tmp) / "ours", args.device)}
        if importlib.util.find_spec("trl") is not None:
            rows["TRL GRPOTrainer"] = trl_grpo(model, args.steps, Path(tmp) / "trl", args.device)
    from rich.console import Console
    from rich.table import Table

    table = Table(
        title=f"GRPO step, {params / 1e6:.2f} M-param model, G=8 × 4 prompts, 16 new tokens, {args.device}"
    )
    table.add_column("trainer")
    table.add_column("s / step", justify="right")
    table.add_column("sampled tokens / s", justify="right")
    for name, r in rows.items():
        table.add_row(name, f"{r['s_per_step']:.3f}", f"{r['tokens_per_s']:.0f}")
    if "TRL GRPOTrainer" in rows:
        ratio = rows["gymhub GRPOTrainer"]["s_per_step"] / rows["TRL GRPOTrainer"]["s_per_step"]
        table.caption = f"step time ratio gymhub / TRL = {ratio:.2f} (target ≤ 1)"
    else:
        table.caption = "TRL is not installed here: gymhub alone"
    Console(width=120).print(table)


if __name__ == "__main__":
    main()
