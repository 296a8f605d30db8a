"""The RLVP experiments on CPU: does the path signal do what it promises?

1. ``violations``: toy-protected-v0 (two turns: a route, then the letter), GRPO from the same
   tiny random-initialised model and seeds with β = 0 and with β > 0. Both must learn the task
   (success ≥ 0.9); with β > 0 the violations per episode (routes that step on a protected
   cell) must fall to at most a fifth of β = 0's.
2. ``progress``: toy-subgoal-v0 (sparse outcome: exactly "cc"), with the first-letter
   progress credit (β > 0) and without it (β = 0): GRPO steps until success reaches 0.9.

Each run's metrics.jsonl and reward_curve.png land in ``--out/<experiment>/<arm>-seed<k>/``;
the comparison is printed as a table, written to ``--out/<experiment>.json`` and drawn in
``--out/<experiment>.png``. tests/trainers/test_rlvp_experiment.py runs the same functions.

    python scripts/rlvp_experiment.py violations --out runs/rlvp
    python scripts/rlvp_experiment.py progress --out runs/rlvp
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


@dataclass
class Arm:
    """One side of a comparison: a name and the reward overrides it trains with."""

    name: str
    beta: float


@dataclass
class Experiment:
    env: str
    arms: tuple[Arm, ...]
    steps: int  # the most GRPO steps a run takes
    seeds: tuple[int, ...] = (0, 1, 2)
    tasks_per_step: int = 16
    group_size: int = 16
    max_new_tokens: int = 3
    lr: float = 3e-3
    temperature: float = 1.0
    stop_at_success: float | None = None  # end a run once its success (moving mean) reaches this
    final_window: int = 5  # steps averaged for the end-of-run figures
    model: dict[str, Any] = field(default_factory=lambda: {"hidden": 128, "layers": 1, "heads": 4})
    model_alias: str = ""  # a real model (e.g. "smollm2-135m") instead of the tiny one
    tiny_chars: bool = True  # the tiny model: one token per character of the env (else bytes)
    backend: str = "hf"
    device: str = "cpu"
    max_turns: int | None = None
    max_episode_tokens: int = 512


EXPERIMENTS = {
    "violations": Experiment(
        env="toy-protected-v0",
        arms=(Arm("beta=0", 0.0), Arm("beta=0.5", 0.5)),
        steps=30,
        max_new_tokens=1,  # per turn: the route, then the letter
        max_turns=2,
        lr=5e-3,
    ),
    # The GPU comparison (scripts/rlvp_gpu.sh): SmolLM2-135M on terminal-v0, vLLM sampling.
    "terminal": Experiment(
        env="terminal-v0",
        arms=(Arm("beta=0", 0.0), Arm("beta=0.5", 0.5)),
        steps=6,
        seeds=(0,),
        tasks_per_step=8,
        group_size=8,
        max_new_tokens=96,
        lr=2e-6,
        temperature=0.8,
        final_window=3,
        model_alias="smollm2-135m",
        backend="vllm",
        device="cuda",
        max_turns=6,
        max_episode_tokens=768,
    ),
    "progress": Experiment(
        env="toy-subgoal-v0",
        arms=(Arm("no credit (beta=0)", 0.0), Arm("credit (beta=0.5)", 0.5)),
        steps=60,
        max_new_tokens=2,
        lr=5e-3,
        stop_at_success=0.9,
    ),
}


@dataclass
class RunResult:
    arm: str
    seed: int
    steps: int
    final_success: float
    final_violations_per_episode: float
    steps_to_success: int | None
    seconds: float
    history: list[dict[str, Any]] = field(repr=False)


def alphabet(env_id: str) -> str:
    """Every character the env's prompts and answers use: the tiny model's vocabulary."""
    import gymhub

    env = gymhub.make(env_id)
    chars = {ch for t in env.all_tasks for ch in t.prompt + str(t.hidden["letter"])}
    for t in env.all_tasks:  # the scripted replies' characters (e.g. toy-protected-v0's routes)
        for messages in t.hidden.get("solutions", {}).values():
            chars |= {ch for m in messages for ch in m["content"]}
    env.close()
    return "".join(sorted(chars))


def build_model(folder: Path, seed: int, exp: Experiment) -> Path:
    """The tiny random-initialised model (one token per character of the env, or byte-level)
    the runs start from."""
    sys.path.insert(0, str(ROOT / "tests"))
    from tiny_model import PLAIN_TEMPLATE, build_tiny_model

    if not exp.tiny_chars:
        return build_tiny_model(folder, seed=seed, **exp.model)
    return build_tiny_model(
        folder, seed=seed, chars=True, template=PLAIN_TEMPLATE, alphabet=alphabet(exp.env), **exp.model
    )


def grpo_config(exp: Experiment, arm: Arm, seed: int, out: Path, model: str) -> Any:
    from gymhub.trainers.grpo import GRPOConfig

    episodes = exp.tasks_per_step * exp.group_size
    return GRPOConfig(
        env=exp.env,
        model=model,
        steps=exp.steps,
        tasks_per_step=exp.tasks_per_step,
        group_size=exp.group_size,
        max_new_tokens=exp.max_new_tokens,
        max_episode_tokens=exp.max_episode_tokens,
        max_turns=exp.max_turns,
        lr=exp.lr,
        temperature=exp.temperature,
        reward={"beta": arm.beta},
        backend=exp.backend,  # type: ignore[arg-type]
        device=exp.device,
        concurrency=episodes,
        micro_batch=min(episodes, 256 if exp.device == "cpu" else 16),
        seed=seed,
        output_dir=str(out / f"{arm.name.split()[0]}-seed{seed}"),
        console=exp.device != "cpu",
    )


def run_arm(exp: Experiment, arm: Arm, seed: int, out: Path) -> RunResult:
    import torch

    from gymhub.trainers.grpo import GRPOTrainer
    from gymhub.trainers.rlvp_metrics import moving_mean, steps_to_success

    if exp.device == "cpu":
        torch.set_num_threads(1)
    torch.set_flush_denormal(True)
    start = time.perf_counter()
    model = exp.model_alias or str(build_model(out / f"model-seed{seed}", seed, exp))
    cfg = grpo_config(exp, arm, seed, out, model)
    trainer = GRPOTrainer(cfg)
    while trainer.step < exp.steps:
        trainer.train_step()
        if exp.stop_at_success is not None and steps_to_success(trainer.history, exp.stop_at_success):
            break
    trainer.cfg.steps = trainer.step  # train() now only saves the checkpoint and the curves
    history = trainer.train()
    tail = history[-exp.final_window :]
    success = moving_mean([m["rlvp/success"] for m in tail], len(tail))[-1]
    violations = moving_mean([m["rlvp/violations_per_episode"] for m in tail], len(tail))[-1]
    return RunResult(
        arm=arm.name,
        seed=seed,
        steps=trainer.step,
        final_success=success,
        final_violations_per_episode=violations,
        steps_to_success=steps_to_success(history, exp.stop_at_success or 0.9),
        seconds=time.perf_counter() - start,
        history=history,
    )


def experiment(name: str, **overrides: Any) -> Experiment:
    base = EXPERIMENTS[name]
    return Experiment(**{**asdict(base), "arms": base.arms, **overrides})  # asdict would flatten arms


def dry_run(name: str, out: Path, **overrides: Any) -> int:
    """Print the GRPO config of every run and the env's reward config; build nothing heavy."""
    import gymhub

    exp = experiment(name, **overrides)
    env = gymhub.make(exp.env, split="train")
    rules = sorted(r.id for r in env.make_verifier().rules)
    print(f"env {exp.env}: {len(env.tasks)} train tasks, rules {rules}")
    env.close()
    for seed in exp.seeds:
        for arm in exp.arms:
            cfg = grpo_config(exp, arm, seed, out / name, exp.model_alias or "<tiny model>")
            print(json.dumps({"arm": arm.name, "seed": seed, "config": asdict(cfg)}, sort_keys=True))
    return 0


def run_experiment(name: str, out: Path, **overrides: Any) -> list[RunResult]:
    exp = experiment(name, **overrides)
    results = [run_arm(exp, arm, seed, out / name) for seed in exp.seeds for arm in exp.arms]
    summary = {"experiment": name, "config": asdict(exp), "runs": [_public(r) for r in results]}
    stem = name if len(exp.arms) > 1 else f"{name}-{exp.arms[0].name.split()[0]}"
    (out / f"{stem}.json").write_text(json.dumps(summary, indent=2))
    plot(name, exp, results, out / f"{stem}.png")
    return results


def _public(r: RunResult) -> dict[str, Any]:
    return {k: v for k, v in asdict(r).items() if k != "history"}


def summarise(results: list[RunResult]) -> dict[str, dict[str, float | None]]:
    """Per arm: mean final success, violations per episode, steps to 0.9 (None if any seed
    never got there) and the seeds that got there."""
    out: dict[str, dict[str, float | None]] = {}
    for arm in dict.fromkeys(r.arm for r in results):
        mine = [r for r in results if r.arm == arm]
        reached = [r.steps_to_success for r in mine if r.steps_to_success is not None]
        out[arm] = {
            "success": sum(r.final_success for r in mine) / len(mine),
            "violations_per_episode": sum(r.final_violations_per_episode for r in mine) / len(mine),
            "steps_to_0.9": sum(reached) / len(reached) if len(reached) == len(mine) else None,
            "seeds_reaching_0.9": float(len(reached)),
            "seconds": sum(r.seconds for r in mine),
        }
    return out


def plot(name: str, exp: Experiment, results: list[RunResult], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    colours = {arm.name: c for arm, c in zip(exp.arms, ("tab:red", "tab:blue"), strict=False)}
    for r in results:
        steps = [m["step"] for m in r.history if "rlvp/success" in m]
        rows = [m for m in r.history if "rlvp/success" in m]
        label = r.arm if r.seed == exp.seeds[0] else None
        axes[0].plot(steps, [m["rlvp/success"] for m in rows], color=colours[r.arm], alpha=0.8, label=label)
        second = "rlvp/violations_per_episode" if name == "violations" else "rlvp/flat_outcome_groups"
        axes[1].plot(steps, [m[second] for m in rows], color=colours[r.arm], alpha=0.8, label=label)
    axes[0].set_ylabel("success (share of episodes)")
    axes[1].set_ylabel(
        "violations per episode" if name == "violations" else "share of groups with all outcomes equal"
    )
    for ax in axes:
        ax.set_xlabel("GRPO step")
        ax.legend(fontsize="small")
    fig.suptitle(f"{exp.env}: {len(exp.seeds)} seeds per arm")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("experiment", choices=sorted(EXPERIMENTS))
    parser.add_argument("--out", type=Path, default=Path("runs/rlvp"))
    parser.add_argument("--seeds", type=int, nargs="+", default=None)
    parser.add_argument("--steps", type=int, default=None)
    parser.add_argument(
        "--arm",
        type=int,
        default=None,
        help="only this arm (0: beta = 0, 1: beta > 0): one per process",
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="build and print each run's GRPO config and env; train nothing"
    )
    parser.add_argument(
        "--tiny-cpu",
        action="store_true",
        help="the same runs on CPU with the hf backend and a tiny byte-level model, 1 step, 1 task",
    )
    args = parser.parse_args(argv)
    overrides: dict[str, Any] = {}
    if args.seeds:
        overrides["seeds"] = tuple(args.seeds)
    if args.steps:
        overrides["steps"] = args.steps
    if args.arm is not None:
        overrides["arms"] = (EXPERIMENTS[args.experiment].arms[args.arm],)
    if args.tiny_cpu:  # last: it wins over --steps and --seeds
        overrides |= {
            "model_alias": "",
            "tiny_chars": False,
            "model": {"hidden": 32, "layers": 1, "heads": 4},
            "backend": "hf",
            "device": "cpu",
            "steps": 1,
            "seeds": (0,),
            "tasks_per_step": 1,
            "group_size": 2,
            "max_new_tokens": 8,
            "max_turns": 2,
            "max_episode_tokens": 64,
        }
    args.out.mkdir(parents=True, exist_ok=True)
    if args.dry_run:
        return dry_run(args.experiment, args.out, **overrides)
    results = run_experiment(args.experiment, args.out, **overrides)
    print(f"{'arm':<22} {'seed':>4} {'steps':>5} {'success':>8} {'viol/ep':>8} {'to 0.9':>6} {'s':>6}")
    for r in results:
        print(
            f"{r.arm:<22} {r.seed:>4} {r.steps:>5} {r.final_success:>8.3f} "
            f"{r.final_violations_per_episode:>8.3f} {r.steps_to_success!s:>6} {r.seconds:>6.1f}"
        )
    print(json.dumps(summarise(results), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
