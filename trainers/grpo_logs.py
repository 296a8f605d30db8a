"""The GRPO trainer's logs: reward statistics, the writers (JSONL, console, TensorBoard, W&B)
and the reward curve."""

from __future__ import annotations

import json
import math
from dataclasses import asdict
from pathlib import Path
from typing import Any

from gymhub.types import TrajectoryGroup


def reward_stats(groups: list[TrajectoryGroup], prefix: str = "") -> dict[str, float]:
    """Reward and verdict figures of ``groups``: reward mean/std, outcome, path signal, the
    zero-variance group fraction and the firing rate of each path rule."""
    rewards = [r for g in groups for r in g.rewards]
    verdicts = [t.verdict for g in groups for t in g.trajectories if t.verdict is not None]
    if not rewards or not verdicts:
        return {}
    mean = sum(rewards) / len(rewards)
    stats = {
        "reward_mean": mean,
        "reward_std": math.sqrt(sum((r - mean) ** 2 for r in rewards) / len(rewards)),
        "outcome_mean": sum(v.outcome for v in verdicts) / len(verdicts),
        "path_signal_mean": sum(v.path_signal for v in verdicts) / len(verdicts),
        "zero_variance_groups": sum(all(a == 0 for a in g.advantages) for g in groups) / len(groups),
    }
    rules: dict[str, int] = {}
    for v in verdicts:
        for rule in {e.rule for e in v.path_events}:
            rules[rule] = rules.get(rule, 0) + 1
    stats |= {f"rule/{rule}": n / len(verdicts) for rule, n in sorted(rules.items())}
    return {f"{prefix}{k}": v for k, v in stats.items()}


def per_env_stats(groups: list[TrajectoryGroup]) -> dict[str, float]:
    """``env/<id>/...`` reward figures for each env of a mixture (nothing for a single env)."""
    envs = sorted({g.env_id for g in groups})
    if len(envs) < 2:
        return {}
    stats: dict[str, float] = {}
    for env_id in envs:
        mine = [g for g in groups if g.env_id == env_id]
        stats |= reward_stats(mine, prefix=f"env/{env_id}/")
        stats[f"env/{env_id}/groups"] = float(len(mine))
    return stats


class Writers:
    """JSONL always; a rich console line; TensorBoard / W&B when asked and installed."""

    def __init__(self, cfg: Any, out: Path) -> None:
        self.jsonl = open(out / "metrics.jsonl", "a", encoding="utf-8")
        self.console = None
        if cfg.console:
            from rich.console import Console

            self.console = Console(stderr=True)
        self.tb = None
        if cfg.tensorboard:
            from torch.utils.tensorboard import SummaryWriter

            self.tb = SummaryWriter(str(out / "tensorboard"))
        self.wandb = None
        if cfg.wandb:
            import wandb

            self.wandb = wandb.init(project="gymhub", config=asdict(cfg))
        self.out = out

    def write(self, m: dict[str, Any]) -> None:
        self.jsonl.write(json.dumps(m) + "\n")
        self.jsonl.flush()
        if self.console is not None:
            line = f"step {m['step']:>4}"
            if "reward_mean" in m:
                line += (
                    f"  reward {m['reward_mean']:.3f}±{m['reward_std']:.3f}  "
                    f"outcome {m['outcome_mean']:.3f}  loss {m['loss']:+.4f}  |g| {m['grad_norm']:.3f}  "
                    f"kl {m['kl']:.4f}  clip {m['clip_fraction']:.3f}  "
                    f"Δlogp {m.get('mismatch/abs_logprob_diff_max', 0.0):.1e}  "
                    f"gen {m['time/generate_s']:.2f}s train {m['time/train_s']:.2f}s"
                )
            if "eval/greedy_pass@1" in m:
                line += f"  eval pass@1 {m['eval/greedy_pass@1']:.3f}"
            self.console.print(line, highlight=False)
        if self.tb is not None:
            for k, v in m.items():
                self.tb.add_scalar(k, v, m["step"])
        if self.wandb is not None:
            self.wandb.log(m, step=m["step"])

    def close(self, history: list[dict[str, Any]]) -> None:
        self.jsonl.close()
        if self.tb is not None:
            self.tb.close()
        if self.wandb is not None:
            self.wandb.finish()
        plot_rewards(history, self.out / "reward_curve.png")


def plot_rewards(history: list[dict[str, Any]], path: Path) -> list[str]:
    """Train reward and outcome per step, and the eval figures where they were taken, as a PNG
    (skipped without matplotlib). Returns the curves' labels."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    from gymhub.trainers.rlvp_metrics import draw_rlvp, has_rlvp_figures

    panels = 2 if has_rlvp_figures(history) else 1  # the second: what the path signal did
    fig, axes = plt.subplots(1, panels, figsize=(6 * panels, 3.5), squeeze=False)
    ax = axes[0][0]
    train = [m for m in history if "reward_mean" in m]
    ax.plot([m["step"] for m in train], [m["reward_mean"] for m in train], label="train reward")
    ax.plot([m["step"] for m in train], [m["outcome_mean"] for m in train], label="train outcome", alpha=0.7)
    evals = [m for m in history if "eval/greedy_pass@1" in m]
    if evals:
        steps = [m["step"] for m in evals]
        ax.plot(steps, [m["eval/greedy_pass@1"] for m in evals], "o-", label="eval greedy pass@1")
        ax.plot(steps, [m["eval/greedy_outcome_mean"] for m in evals], "s--", label="eval greedy outcome")
    ax.set_xlabel("step")
    ax.set_ylabel("mean")
    ax.legend(fontsize="small")
    if panels == 2:
        draw_rlvp(axes[0][1], history)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    labels = [str(line.get_label()) for line in ax.get_lines()]
    plt.close(fig)
    return labels
