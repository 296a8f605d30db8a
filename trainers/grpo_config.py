"""The GRPO trainer's settings: every knob of a run, read by the trainer (``grpo.py``) and by
its generators (``generators.py``), so neither module needs the other's."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Literal

from gymhub.errors import GymhubError
from gymhub.trainers.env_mixture import env_weights


@dataclass
class GRPOConfig:
    """Every knob of a run, each explained where it is declared.

    Where the episodes run: ``rollout_backend="local"`` (env instances in the trainer's
    process) or ``"ray"`` (env workers as Ray actors spread over a cluster's nodes; see
    :mod:`gymhub._ray_backend`). ``ray_address`` names the cluster as ``ray.init`` takes it
    (``"head-host:6379"``, ``"ray://head-host:10001"``); ``None`` starts or joins a local Ray.
    The policy stays in the trainer either way: the workers run the envs and their sandboxes,
    and an episode whose worker dies (a lost node) is played again on a surviving worker with
    the same seed, so a step loses no episode and counts none twice.
    """

    # what to train, on what
    env: str | dict[str, float] = "toy-letters-v0"  # an env id, or {env_id: weight}: a mixture
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
    rollout_backend: Literal["local", "ray"] = "local"  # where the envs run: here, or Ray actors
    ray_address: str | None = None  # rollout_backend="ray": the cluster; None: a local Ray
    backend: Literal["hf", "vllm", "openai"] = "hf"
    openai_url: str | None = None  # openai backend: the server (runtime LoRA loading enabled)
    openai_model: str | None = None  # openai backend: the base model's served name
    vllm_max_model_len: int = 2048
    vllm_gpu_memory_utilization: float = 0.3  # the trainer shares the GPU
    # reward: each env's RewardConfig unless overridden here (e.g. {"beta": 0.2};
    # Dr. GRPO: {"normalization": "mean"} with loss_agg="dr-grpo")
    reward: dict[str, Any] = field(default_factory=dict)
    dynamic_sampling: bool = False  # drop groups whose advantages are all 0, sample fresh tasks
    max_refills: int = 4
    # optimisation
    lr: float = 1e-3
    weight_decay: float = 0.0
    max_grad_norm: float = 1.0
    micro_batch: int = 16  # sequences per forward/backward; gradients accumulate over them
    updates_per_batch: int = 1  # μ: optimiser steps on each sampled batch, all against one π_old
    old_logprobs: Literal["trainer", "sampler"] = "trainer"  # π_old: the trainer's forward
    # before the first update, or the log-probs the sampler recorded at generation
    clip_low: float = 0.2
    clip_high: float = 0.2  # > clip_low: DAPO's clip-higher
    loss_agg: Literal["token-mean", "seq-mean", "dr-grpo"] = "token-mean"
    kl_coef: float = 0.0  # 0: no reference model is loaded
    tis_cap: float | None = None  # truncated importance sampling against the sampler (e.g. 2.0)
    lora_rank: int = 0  # > 0: train a LoRA adapter (peft) instead of all weights
    lora_alpha: int = 16
    # held-out evaluation (the eval split)
    eval_every: int = 0  # steps; 0: never. Also before the first step and after the last
    eval_tasks: int = 16  # per env, the first N eval-split tasks; 0: all of them
    eval_samples: int = 8  # n: sampled episodes per eval task, for pass@k
    eval_k: int = 4  # k of pass@k (≤ eval_samples)
    # bookkeeping
    checkpoint_every: int = 0  # steps; 0: only at the end
    resume: bool = False  # continue from output_dir/checkpoint
    tensorboard: bool = False
    wandb: bool = False
    console: bool = True

    def __post_init__(self) -> None:
        env_weights(self.env)  # a readable error for a bad mixture, before anything loads
        if self.rollout_backend not in ("local", "ray"):
            raise GymhubError(f"rollout_backend must be local or ray, not {self.rollout_backend!r}")
        if self.ray_address is not None and self.rollout_backend != "ray":
            raise GymhubError("ray_address names a Ray cluster: use it with rollout_backend='ray'")
        if self.updates_per_batch < 1:
            raise GymhubError(f"updates_per_batch must be >= 1, got {self.updates_per_batch}")
        if not (0 <= self.clip_low < 1 and self.clip_high >= 0):
            raise GymhubError(
                f"need 0 <= clip_low < 1 and clip_high >= 0, got {self.clip_low}, {self.clip_high}"
            )
        if self.eval_every and not 1 <= self.eval_k <= self.eval_samples:
            raise GymhubError(f"need 1 <= eval_k <= eval_samples, got {self.eval_k}, {self.eval_samples}")

    @classmethod
    def from_yaml(cls, path: str | Path, **overrides: Any) -> GRPOConfig:
        import yaml

        data = yaml.safe_load(Path(path).read_text()) or {}
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise GymhubError(f"unknown GRPO config keys in {path}: {unknown}")
        return cls(**{**data, **overrides})
