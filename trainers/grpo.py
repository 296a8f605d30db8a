"""A thin GRPO trainer for gymhub environments: read it top to bottom.

    config → [pick tasks → G episodes per task (multi-turn, tools, token in / token out)
              → verdicts → RewardConfig.combine (outcome + β·path signal, group-normalised)
              → mismatch monitor → clipped token-level loss on policy tokens → optimiser step
              → weight sync to the generator] × steps

The rollouts go through gymhub's rollout engine with a token-in/token-out generator, so the
ids the loss sees are exactly the ids the sampler produced, and env tokens have mask 0.
"""

from __future__ import annotations

import asyncio
import json
import math
import random
import time
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Literal

from gymhub.errors import GymhubError
from gymhub.registry import make
from gymhub.token_episodes import TokenEpisode, token_episode
from gymhub.types import RewardConfig, Task, TrajectoryGroup


@dataclass
class GRPOConfig:
    # what to train, on what
    env: str = "toy-letters-v0"
    model: str = ""  # a transformers folder or a built-in alias (see gymhub.trainers.models)
    split: str = "train"
    output_dir: str = "runs/grpo"
    seed: int = 0
    device: str = "cpu"
    # sampling
    steps: int = 100
    tasks_per_step: int = 4
    group_size: int = 8  # G
    temperature: float = 1.0
    max_new_tokens: int = 32  # per turn
    max_episode_tokens: int = 512  # completion tokens per episode, env tokens included
    max_turns: int | None = None  # overrides the env's turn limit
    concurrency: int = 8  # episodes in flight (the hf generator batches them)
    backend: Literal["hf", "vllm", "openai"] = "hf"
    openai_url: str | None = None  # openai backend: the server (runtime LoRA loading enabled)
    openai_model: str | None = None  # openai backend: the base model's served name
    vllm_max_model_len: int = 2048
    vllm_gpu_memory_utilization: float = 0.3  # the trainer shares the GPU
    # reward: the env's RewardConfig unless overridden here (e.g. {"beta": 0.2})
    reward: dict[str, Any] = field(default_factory=dict)
    dynamic_sampling: bool = False  # drop groups whose advantages are all 0, sample more
    max_refills: int = 4
    # optimisation
    lr: float = 1e-3
    weight_decay: float = 0.0
    max_grad_norm: float = 1.0
    micro_batch: int = 16  # sequences per forward/backward; gradients accumulate over them
    clip_low: float = 0.2
    clip_high: float = 0.2  # > clip_low: DAPO's clip-higher
    loss_agg: Literal["token-mean", "seq-mean", "dr-grpo"] = "token-mean"
    kl_coef: float = 0.0  # 0: no reference model is loaded
    tis_cap: float | None = None  # truncated importance sampling against the sampler (e.g. 2.0)
    lora_rank: int = 0  # > 0: train a LoRA adapter (peft) instead of all weights
    lora_alpha: int = 16
    # bookkeeping
    checkpoint_every: int = 0  # steps; 0: only at the end
    resume: bool = False  # continue from output_dir/checkpoint
    tensorboard: bool = False
    wandb: bool = False
    console: bool = True

    @classmethod
    def from_yaml(cls, path: str | Path, **overrides: Any) -> GRPOConfig:
        import yaml

        data = yaml.safe_load(Path(path).read_text()) or {}
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise GymhubError(f"unknown GRPO config keys in {path}: {unknown}")
        return cls(**{**data, **overrides})


@dataclass
class Batch:
    """The step's episodes as padded tensors (one row per trajectory)."""

    input_ids: Any  # [B, T]  prompt + completion, right-padded
    attention: Any  # [B, T]
    targets: Any  # [B, T-1] next token at each position
    loss_mask: Any  # [B, T-1] 1 where the target was sampled by the policy
    behaviour_logprobs: Any  # [B, T-1] the sampler's log-probs (0 elsewhere)
    advantages: Any  # [B]
    policy_version: list[int]


def load_model(cfg: GRPOConfig) -> tuple[Any, Any]:
    """The policy model (full or LoRA-wrapped) and its tokenizer."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from gymhub.model_aliases import resolve_model

    path = resolve_model(cfg.model)
    tok = AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path, dtype="float32").to(cfg.device)
    if cfg.lora_rank > 0:
        from peft import LoraConfig, get_peft_model

        lora = LoraConfig(r=cfg.lora_rank, lora_alpha=cfg.lora_alpha, target_modules="all-linear")
        model = get_peft_model(model, lora)
    return model, tok


def token_logprobs(model: Any, input_ids: Any, attention: Any, targets: Any, temperature: float) -> Any:
    """log π(target_t | ids_<t) at the sampler's temperature, for every position: [B, T-1]."""
    import torch

    logits = model(input_ids=input_ids, attention_mask=attention).logits[:, :-1].float()
    logp = torch.log_softmax(logits / temperature, dim=-1)  # the distribution the sampler drew from
    return logp.gather(-1, targets.unsqueeze(-1)).squeeze(-1)


def _cut(record: TokenEpisode, max_tokens: int) -> TokenEpisode:
    """An episode's completion cut to ``max_tokens`` (env tokens included) for the loss."""
    return TokenEpisode(
        record.prompt_ids,
        record.completion_ids[:max_tokens],
        record.loss_mask[:max_tokens],
        record.logprobs[:max_tokens],
    )


def make_batch(
    groups: list[TrajectoryGroup], version: int, pad_id: int, device: str, max_tokens: int = 1 << 30
) -> Batch:
    import torch

    rows: list[tuple[TokenEpisode, float]] = [
        (_cut(token_episode(t), max_tokens), a)
        for g in groups
        for t, a in zip(g.trajectories, g.advantages, strict=True)
    ]
    width = max(len(r.prompt_ids) + len(r.completion_ids) for r, _ in rows)
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    attention = torch.zeros((len(rows), width), dtype=torch.long)
    mask = torch.zeros((len(rows), width - 1))
    behaviour = torch.zeros((len(rows), width - 1))
    for i, (r, _) in enumerate(rows):
        seq = r.prompt_ids + r.completion_ids
        ids[i, : len(seq)] = torch.tensor(seq)
        attention[i, : len(seq)] = 1
        start = len(r.prompt_ids) - 1  # position predicting the first completion token
        mask[i, start : start + len(r.completion_ids)] = torch.tensor(r.loss_mask, dtype=torch.float)
        behaviour[i, start : start + len(r.completion_ids)] = torch.tensor(r.logprobs)
    return Batch(
        input_ids=ids.to(device),
        attention=attention.to(device),
        targets=ids[:, 1:].to(device),
        loss_mask=mask.to(device),
        behaviour_logprobs=behaviour.to(device),
        advantages=torch.tensor([a for _, a in rows], dtype=torch.float).to(device),
        policy_version=[version] * len(rows),
    )


def grpo_loss(
    new: Any,
    old: Any,
    behaviour: Any,
    ref: Any | None,
    batch_slice: dict[str, Any],
    cfg: GRPOConfig,
    norm: float,
) -> tuple[Any, dict[str, float]]:
    """The clipped surrogate on policy tokens of one micro-batch, already divided by ``norm``.

    ``norm`` is the whole batch's normaliser, so summing micro-batch losses gives the
    full-batch loss and accumulated gradients equal the full-batch gradient.
    """
    import torch

    mask, adv = batch_slice["mask"], batch_slice["advantages"].unsqueeze(-1)
    ratio = torch.exp(new - old)  # r_t = π_θ(a_t) / π_old(a_t)
    clipped = torch.clamp(ratio, 1 - cfg.clip_low, 1 + cfg.clip_high)  # clip(r_t, 1-ε_low, 1+ε_high)
    surrogate = torch.minimum(ratio * adv, clipped * adv)  # min(r·A, clip(r)·A): the PPO objective
    if cfg.tis_cap is not None:  # w_t = min(π_old / π_sampler, C): correct for sampler mismatch
        surrogate = surrogate * torch.clamp(torch.exp(old - behaviour), max=cfg.tis_cap)
    per_token = -surrogate
    if ref is not None:  # k3 = exp(ref - new) - (ref - new) - 1 ≥ 0: an unbiased KL(π_θ‖π_ref) estimate
        delta = ref - new
        per_token = per_token + cfg.kl_coef * (torch.exp(delta) - delta - 1)
    if cfg.loss_agg == "seq-mean":  # mean over sequences of each sequence's token mean
        per_seq = (per_token * mask).sum(-1) / mask.sum(-1).clamp(min=1)
        loss = per_seq.sum() / norm
    else:  # token-mean: Σ / (policy tokens in the batch); dr-grpo: Σ / (B · max_episode_tokens)
        loss = (per_token * mask).sum() / norm
    with torch.no_grad():
        m = mask.bool()
        stats = {
            "clipped_tokens": float(((ratio[m] < 1 - cfg.clip_low) | (ratio[m] > 1 + cfg.clip_high)).sum()),
            "kl_sum": float((((ref - new).exp() - (ref - new) - 1)[m]).sum()) if ref is not None else 0.0,
        }
    return loss, stats


def loss_normaliser(batch: Batch, cfg: GRPOConfig) -> float:
    if cfg.loss_agg == "token-mean":
        return float(batch.loss_mask.sum().clamp(min=1))
    if cfg.loss_agg == "seq-mean":
        return float(len(batch.advantages))
    return float(len(batch.advantages) * cfg.max_episode_tokens)  # Dr. GRPO's constant


def mismatch_report(
    old: Any, behaviour: Any, mask: Any, version: list[int], trainer_version: int
) -> dict[str, float]:
    """How far the sampler's log-probs are from the trainer's, on the sampled tokens.

    The failure this catches: a generator whose weights, dtype or kernels differ from the
    trainer's silently turns on-policy training off-policy.
    """
    import torch

    m = mask.bool()
    if not m.any():
        return {}
    delta = (old - behaviour)[m]
    ratio = torch.exp(delta)  # π_trainer / π_sampler per token
    q = torch.quantile(ratio, torch.tensor([0.01, 0.5, 0.99], dtype=ratio.dtype))
    return {
        "mismatch/abs_logprob_diff_mean": float(delta.abs().mean()),
        "mismatch/abs_logprob_diff_max": float(delta.abs().max()),
        "mismatch/ratio_mean": float(ratio.mean()),
        "mismatch/ratio_p01": float(q[0]),
        "mismatch/ratio_p50": float(q[1]),
        "mismatch/ratio_p99": float(q[2]),
        "mismatch/ratio_max": float(ratio.max()),
        "mismatch/kl_approx": float((ratio - 1 - delta).mean()),  # k3 of sampler vs trainer
        "mismatch/staleness_max": float(max(trainer_version - v for v in version)),
    }


class GRPOTrainer:
    """Holds the model, optimiser, generator and logs; :meth:`train` runs the loop."""

    def __init__(self, cfg: GRPOConfig, model: Any = None, tokenizer: Any = None) -> None:
        import torch

        from gymhub.trainers.generators import make_generator

        self.cfg = cfg
        random.seed(cfg.seed)
        torch.manual_seed(cfg.seed)
        self.out = Path(cfg.output_dir)
        self.out.mkdir(parents=True, exist_ok=True)
        if model is None:
            model, tokenizer = load_model(cfg)
        self.model, self.tok = model, tokenizer
        self.ref_model = self._reference() if cfg.kl_coef > 0 else None  # none loaded when β_KL = 0
        params = [p for p in self.model.parameters() if p.requires_grad]
        self.optimizer = torch.optim.AdamW(params, lr=cfg.lr, weight_decay=cfg.weight_decay)
        self.generator = make_generator(cfg, self.model, self.tok)
        env_kwargs: dict[str, Any] = {"split": cfg.split}
        if cfg.max_turns is not None:
            env_kwargs["max_turns"] = cfg.max_turns
        self.env_kwargs = env_kwargs
        probe = make(cfg.env, **env_kwargs)
        self.tasks: list[Task] = list(probe.tasks)
        base = probe.reward_config.model_dump()
        probe.close()
        self.reward = RewardConfig(**{**base, **cfg.reward})
        self.step = 0
        self.history: list[dict[str, Any]] = []
        self._writers = _Writers(cfg, self.out)
        if cfg.resume:
            self.load_checkpoint(self.out / "checkpoint")

    def _reference(self) -> Any:
        import copy

        if self.cfg.lora_rank > 0:
            return None  # the reference is the base model: the adapter is disabled to score it
        ref = copy.deepcopy(self.model).eval()
        for p in ref.parameters():
            p.requires_grad_(False)
        return ref

    # ------------------------------------------------------------ 1. sample
    def pick_tasks(self, step: int, n: int, offset: int = 0) -> list[Task]:
        """A fresh shuffle of the task pool per epoch, walked in order (resumable by step)."""
        out = []
        for k in range(n):
            index = (step * self.cfg.tasks_per_step + offset + k) % len(self.tasks)
            epoch = (step * self.cfg.tasks_per_step + offset + k) // len(self.tasks)
            order = list(range(len(self.tasks)))
            random.Random(self.cfg.seed * 1_000_003 + epoch).shuffle(order)
            out.append(self.tasks[order[index]])
        return out

    def sample(self) -> tuple[list[TrajectoryGroup], dict[str, float]]:
        from gymhub.rollout_engine import arollout

        cfg = self.cfg
        groups: list[TrajectoryGroup] = []
        flat: list[TrajectoryGroup] = []  # zero-variance groups, used only if nothing else came
        dropped, offset = 0, 0
        for attempt in range(1 + (cfg.max_refills if cfg.dynamic_sampling else 0)):
            need = cfg.tasks_per_step - len(groups)
            tasks = self.pick_tasks(self.step, need, offset)
            offset += need

            async def play(tasks: list[Task] = tasks, attempt: int = attempt) -> list[TrajectoryGroup]:
                return [
                    g
                    async for g in arollout(
                        cfg.env,
                        self.generator.policy(),
                        tasks=tasks,
                        group_size=cfg.group_size,
                        concurrency=cfg.concurrency,
                        seed=cfg.seed * 1_000_003 + self.step * 101 + attempt,
                        env_kwargs=self.env_kwargs,
                    )
                ]

            for g in asyncio.run(play()):
                g = self._rescored(g)
                if cfg.dynamic_sampling and all(a == 0 for a in g.advantages):
                    dropped += 1  # a zero-variance group carries no gradient: sample another
                    flat.append(g)
                    continue
                groups.append(g)
            if len(groups) >= cfg.tasks_per_step:
                break
        groups = groups or flat  # refills exhausted: a step with no gradient, logged as such
        errored = [t for g in groups for t in g.trajectories if t.status != "ok"]
        if errored:
            raise GymhubError(f"{len(errored)} episodes failed, e.g.: {errored[0].error}")
        return groups[: cfg.tasks_per_step], {"dropped_groups": float(dropped)}

    def _rescored(self, group: TrajectoryGroup) -> TrajectoryGroup:
        return TrajectoryGroup.build(list(group.trajectories), self.reward)

    # ------------------------------------------------------------ 2. learn
    def train_step(self) -> dict[str, Any]:
        import torch

        cfg = self.cfg
        t0 = time.perf_counter()
        self.model.eval()
        groups, sample_stats = self.sample()
        t_generate = time.perf_counter() - t0
        pad = self.tok.pad_token_id if self.tok.pad_token_id is not None else self.tok.eos_token_id
        batch = make_batch(groups, self.generator.version, pad, cfg.device, cfg.max_episode_tokens)
        t1 = time.perf_counter()
        self.model.train()
        rows = len(batch.advantages)
        slices = [slice(i, min(i + cfg.micro_batch, rows)) for i in range(0, rows, cfg.micro_batch)]
        norm = loss_normaliser(batch, cfg)
        total_loss, clipped, kl_sum, olds = 0.0, 0.0, 0.0, []
        self.optimizer.zero_grad(set_to_none=True)
        for s in slices:  # gradient accumulation over micro-batches; the step comes after all of them
            new = self._logprobs(self.model, batch, s)
            # π_old = π_θ before this update: one update per batch, so it is this very forward,
            # detached (r = 1 in value, ∇r = ∇log π_θ). Also the mismatch monitor's input.
            old = new.detach()
            with torch.no_grad():
                ref = self._ref_logprobs(batch, s) if cfg.kl_coef > 0 else None
            part = {"mask": batch.loss_mask[s], "advantages": batch.advantages[s]}
            loss, stats = grpo_loss(new, old, batch.behaviour_logprobs[s], ref, part, cfg, norm)
            loss.backward()
            olds.append(old)
            total_loss += float(loss.detach())
            clipped += stats["clipped_tokens"]
            kl_sum += stats["kl_sum"]
        monitor = mismatch_report(
            torch.cat(olds), batch.behaviour_logprobs, batch.loss_mask, batch.policy_version, self.step
        )
        params = [p for p in self.model.parameters() if p.requires_grad]
        grad_norm = float(torch.nn.utils.clip_grad_norm_(params, cfg.max_grad_norm))
        self.optimizer.step()
        self.step += 1
        self.generator.sync(self.model, self.step)  # the generator samples from the new weights
        t_train = time.perf_counter() - t1
        policy_tokens = float(batch.loss_mask.sum())
        metrics = {
            "step": self.step,
            "loss": total_loss,
            "grad_norm": grad_norm,
            "kl": kl_sum / max(policy_tokens, 1.0),
            "clip_fraction": clipped / max(policy_tokens, 1.0),
            "policy_tokens": policy_tokens,
            "tokens_per_s": policy_tokens / max(t_generate, 1e-9),
            "time/generate_s": t_generate,
            "time/train_s": t_train,
            **sample_stats,
            **_reward_stats(groups),
            **monitor,
        }
        metrics["time/verify_s"] = sum(t.timings.get("env_s", 0.0) for g in groups for t in g.trajectories)
        self.history.append(metrics)
        self._writers.write(metrics)
        return metrics

    def _logprobs(self, model: Any, batch: Batch, s: slice) -> Any:
        return token_logprobs(
            model, batch.input_ids[s], batch.attention[s], batch.targets[s], self.cfg.temperature
        )

    def _ref_logprobs(self, batch: Batch, s: slice) -> Any:
        if self.ref_model is not None:
            return self._logprobs(self.ref_model, batch, s)
        with self.model.disable_adapter():  # LoRA: the base model is the reference
            return self._logprobs(self.model, batch, s)

    def train(self) -> list[dict[str, Any]]:
        cfg = self.cfg
        while self.step < cfg.steps:
            self.train_step()
            if cfg.checkpoint_every and self.step % cfg.checkpoint_every == 0:
                self.save_checkpoint(self.out / "checkpoint")
        self.save_checkpoint(self.out / "checkpoint")
        self._writers.close(self.history)
        return self.history

    # ------------------------------------------------------------ 3. checkpoints
    def save_checkpoint(self, folder: Path) -> None:
        import torch

        folder.mkdir(parents=True, exist_ok=True)
        self.model.save_pretrained(folder / "model")
        self.tok.save_pretrained(folder / "model")
        torch.save(
            {
                "optimizer": self.optimizer.state_dict(),
                "step": self.step,
                "rng": {"torch": torch.get_rng_state(), "python": random.getstate()},
                "history": self.history,
                "config": asdict(self.cfg),
            },
            folder / "state.pt",
        )

    def load_checkpoint(self, folder: Path) -> None:
        import torch

        state = torch.load(folder / "state.pt", weights_only=False)
        trained = self._load_weights(folder / "model")
        with torch.no_grad():
            for name, p in self.model.named_parameters():
                if name in trained:
                    p.copy_(trained[name])
        self.optimizer.load_state_dict(state["optimizer"])
        self.step = state["step"]
        self.history = list(state["history"])
        torch.set_rng_state(state["rng"]["torch"])
        random.setstate(state["rng"]["python"])
        self.generator.sync(self.model, self.step)

    def _load_weights(self, folder: Path) -> dict[str, Any]:
        from safetensors.torch import load_file

        files = sorted(folder.glob("*.safetensors"))
        if not files:
            raise GymhubError(f"no safetensors weights in {folder}")
        weights: dict[str, Any] = {}
        for f in files:
            weights.update(load_file(str(f)))
        if self.cfg.lora_rank > 0:  # adapter files name weights without the adapter name
            return {_peft_name(k): v for k, v in weights.items()}
        return weights


def _peft_name(key: str) -> str:
    return key.replace(".lora_A.weight", ".lora_A.default.weight").replace(
        ".lora_B.weight", ".lora_B.default.weight"
    )


def _reward_stats(groups: list[TrajectoryGroup]) -> dict[str, float]:
    rewards = [r for g in groups for r in g.rewards]
    verdicts = [t.verdict for g in groups for t in g.trajectories if t.verdict is not None]
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
    return stats


class _Writers:
    """JSONL always; a rich console line; TensorBoard / W&B when asked and installed."""

    def __init__(self, cfg: GRPOConfig, out: Path) -> None:
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
            self.console.print(
                f"step {m['step']:>4}  reward {m['reward_mean']:.3f}±{m['reward_std']:.3f}  "
                f"outcome {m['outcome_mean']:.3f}  loss {m['loss']:+.4f}  |g| {m['grad_norm']:.3f}  "
                f"kl {m['kl']:.4f}  Δlogp {m.get('mismatch/abs_logprob_diff_max', 0.0):.1e}  "
                f"gen {m['time/generate_s']:.2f}s train {m['time/train_s']:.2f}s",
                highlight=False,
            )
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


def plot_rewards(history: list[dict[str, Any]], path: Path) -> None:
    """The reward curve as a PNG (skipped without matplotlib)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    fig, ax = plt.subplots(figsize=(6, 3.5))
    steps = [m["step"] for m in history]
    ax.plot(steps, [m["reward_mean"] for m in history], label="reward")
    ax.plot(steps, [m["outcome_mean"] for m in history], label="outcome", alpha=0.7)
    ax.set_xlabel("step")
    ax.set_ylabel("mean")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
