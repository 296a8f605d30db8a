"""A thin GRPO trainer for gymhub environments: read it top to bottom.

    config → [draw tasks (one env, or a weighted mixture) → G episodes per task (multi-turn,
              tools, token in / token out) → verdicts → RewardConfig.combine (outcome + β·path
              signal, group-normalised) → π_old and the mismatch monitor → μ × (clipped
              token-level loss on policy tokens → optimiser step) → weight sync to the generator
              → every ``eval_every`` steps: greedy pass@1 and pass@k on held-out tasks] × steps

The rollouts go through gymhub's rollout engine with a token-in/token-out generator, so the
ids the loss sees are exactly the ids the sampler produced, and env tokens have mask 0.
Every tensor lives on the model's device; log-probs and the loss are float32 whatever the
model's dtype (``token_logprobs`` upcasts the logits), and so are the batch's float tensors.
Helpers live beside this file: ``grpo_config`` (the knobs), ``generators`` (the sampling
backends), ``env_mixture`` (which tasks), ``mismatch`` (the monitor), ``evaluation`` (pass@k),
``grpo_logs`` (metrics, writers, the reward curve).
"""

from __future__ import annotations

import asyncio
import random
import time
import weakref
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from gymhub._rollout_engine import arollout, rollout_backend
from gymhub._token_episodes import TokenEpisode, token_episode
from gymhub.errors import GymhubError
from gymhub.trainers.env_mixture import EnvMixture
from gymhub.trainers.evaluation import eval_tasks, evaluate
from gymhub.trainers.generators import make_generator
from gymhub.trainers.grpo_config import GRPOConfig
from gymhub.trainers.grpo_logs import Writers, per_env_stats, plot_rewards, reward_stats
from gymhub.trainers.mismatch import mismatch_report
from gymhub.trainers.rlvp_metrics import rlvp_stats
from gymhub.types import Task, TrajectoryGroup

if TYPE_CHECKING:
    from torch import Tensor

__all__ = [
    "Batch",
    "GRPOConfig",
    "GRPOTrainer",
    "LossStats",
    "MicroBatch",
    "cut_episode",
    "grpo_loss",
    "loss_normaliser",
    "make_batch",
    "mismatch_report",
    "plot_rewards",
    "token_logprobs",
]


@dataclass
class Batch:
    """The step's episodes as padded tensors (one row per trajectory), on the model's device."""

    input_ids: Tensor  # [B, T]  prompt + completion, right-padded
    attention: Tensor  # [B, T]
    targets: Tensor  # [B, T-1] next token at each position
    loss_mask: Tensor  # [B, T-1] 1 where the target was sampled by the policy
    behaviour_logprobs: Tensor  # [B, T-1] the sampler's log-probs (0 elsewhere)
    advantages: Tensor  # [B]
    policy_version: list[int]
    first_target: int = 0  # no row's loss mask is 1 before this position (the shortest prompt's end)

    def micro_batch(self, s: slice) -> MicroBatch:
        """The loss's inputs from rows ``s`` of the batch (a micro-batch)."""
        return MicroBatch(self.loss_mask[s], self.advantages[s], self.behaviour_logprobs[s])


class MicroBatch(NamedTuple):
    """What :func:`grpo_loss` reads of a micro-batch's rows, besides the policies' log-probs."""

    loss_mask: Tensor  # [b, T-1] 1 where the target was sampled by the policy
    advantages: Tensor  # [b]
    behaviour_logprobs: Tensor  # [b, T-1] the sampler's log-probs (0 elsewhere)


class LossStats(NamedTuple):
    """A micro-batch's figures from :func:`grpo_loss`: 0-d tensors, sums over policy tokens."""

    clipped_tokens: Tensor  # tokens whose gradient the clip removed
    kl_sum: Tensor  # k3 estimate of KL(π_θ‖π_ref); 0 without a reference
    tis_weight_sum: Tensor  # truncated importance weights; 1 per token without TIS


def load_model(cfg: GRPOConfig) -> tuple[Any, Any]:
    """The policy model (full or LoRA-wrapped) and its tokenizer."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from gymhub._model_aliases import resolve_model

    path = resolve_model(cfg.model)
    tok = AutoTokenizer.from_pretrained(path)
    model: Any = AutoModelForCausalLM.from_pretrained(path, dtype="float32")
    model = model.to(cfg.device)
    if cfg.lora_rank > 0:
        from peft import LoraConfig, get_peft_model

        lora = LoraConfig(r=cfg.lora_rank, lora_alpha=cfg.lora_alpha, target_modules="all-linear")
        model = get_peft_model(model, lora)
    return model, tok


def token_logprobs(
    model: Any, input_ids: Any, attention: Any, targets: Any, temperature: float, first: int = 0
) -> Any:
    """log π(target_t | ids_<t) at the sampler's temperature: [B, T-1].

    Only positions ``first`` onwards are scored (the batch's first completion token is
    predicted at ``first``); earlier ones, prompt tokens in every row, hold 0. The model's
    head runs only there (``logits_to_keep``), and the log-prob of the target is its logit
    minus the row's logsumexp: no [B, T, V] log-softmax is materialised.
    """
    import torch

    out = model(
        input_ids=input_ids,
        attention_mask=attention,
        use_cache=False,
        logits_to_keep=targets.shape[1] + 1 - first,
    )
    logits = out.logits[:, :-1].float() / temperature  # the distribution the sampler drew from
    picked = logits.gather(-1, targets[:, first:].unsqueeze(-1)).squeeze(-1) - logits.logsumexp(-1)
    return torch.nn.functional.pad(picked, (first, 0)) if first else picked


def cut_episode(record: TokenEpisode, max_tokens: int) -> TokenEpisode:
    """An episode's completion cut to ``max_tokens`` (env tokens included) for the loss."""
    return TokenEpisode(
        record.prompt_ids,
        record.completion_ids[:max_tokens],
        record.loss_mask[:max_tokens],
        record.logprobs[:max_tokens],
    )


def make_batch(
    groups: list[TrajectoryGroup], version: int, pad_id: int, device: Any, max_tokens: int = 1 << 30
) -> Batch:
    """Pad the episodes into one batch, assembled on the host, then moved to ``device`` in one
    transfer per tensor. Float tensors are float32, the dtype of the log-probs they meet."""
    import torch

    rows: list[tuple[TokenEpisode, float]] = [
        (cut_episode(token_episode(t), max_tokens), a)
        for g in groups
        for t, a in zip(g.trajectories, g.advantages, strict=True)
    ]
    width = max(len(r.prompt_ids) + len(r.completion_ids) for r, _ in rows)
    seqs, present, policy, sampled = [], [], [], []  # rows as lists: one tensor each, made once
    for r, _ in rows:
        seq = [*r.prompt_ids, *r.completion_ids]
        gap = width - len(seq)
        before = [0.0] * (len(r.prompt_ids) - 1)  # up to the position predicting the first completion token
        seqs.append(seq + [pad_id] * gap)
        present.append([1] * len(seq) + [0] * gap)
        policy.append(before + list(r.loss_mask) + [0.0] * gap)
        sampled.append(before + list(r.logprobs) + [0.0] * gap)
    ids = torch.tensor(seqs, dtype=torch.long)
    return Batch(
        input_ids=ids.to(device),
        attention=torch.tensor(present, dtype=torch.long).to(device),
        targets=ids[:, 1:].to(device),
        loss_mask=torch.tensor(policy, dtype=torch.float32).to(device),
        behaviour_logprobs=torch.tensor(sampled, dtype=torch.float32).to(device),
        advantages=torch.tensor([a for _, a in rows], dtype=torch.float32).to(device),
        policy_version=[version] * len(rows),
        first_target=min(len(r.prompt_ids) for r, _ in rows) - 1,
    )


def grpo_loss(
    new: Tensor, old: Tensor, ref: Tensor | None, micro: MicroBatch, cfg: GRPOConfig, norm: Tensor | float
) -> tuple[Tensor, LossStats]:
    """The clipped surrogate on policy tokens of one micro-batch, already divided by ``norm``.

    ``new``, ``old``, ``ref``: log π_θ, log π_old, log π_ref of each target token, [b, T-1]
    (``ref`` None: no KL term); ``micro``: the micro-batch's mask, advantages and the
    sampler's log-probs (log π_sampler). ``norm`` is the whole batch's normaliser
    (:func:`loss_normaliser`), so summing micro-batch losses gives the full-batch loss and
    accumulated gradients equal the full-batch gradient. The stats are 0-d tensors on the
    inputs' device (sums over policy tokens), so no value leaves the device here.
    """
    import torch

    mask, adv = micro.loss_mask, micro.advantages.unsqueeze(-1)
    ratio = torch.exp(new - old)  # r_t = π_θ(a_t) / π_old(a_t)
    clipped = torch.clamp(ratio, 1 - cfg.clip_low, 1 + cfg.clip_high)  # clip(r_t, 1-ε_low, 1+ε_high)
    surrogate = torch.minimum(ratio * adv, clipped * adv)  # min(r·A, clip(r)·A): the PPO objective
    tis = torch.ones_like(ratio)
    if cfg.tis_cap is not None:  # w_t = min(π_old / π_sampler, C): correct for sampler mismatch
        tis = torch.clamp(torch.exp(old - micro.behaviour_logprobs), max=cfg.tis_cap).detach()
        surrogate = surrogate * tis
    per_token = -surrogate
    if ref is not None:  # k3 = exp(ref - new) - (ref - new) - 1 ≥ 0: an unbiased KL(π_θ‖π_ref) estimate
        delta = ref - new
        per_token = per_token + cfg.kl_coef * (torch.exp(delta) - delta - 1)
    if cfg.loss_agg == "seq-mean":  # Σ_i (Σ_t ℓ_it / |o_i|) / B: each sequence's token mean, averaged
        per_seq = (per_token * mask).sum(-1) / mask.sum(-1).clamp(min=1)
        loss = per_seq.sum() / norm
    else:  # token-mean: Σ_it ℓ_it / (policy tokens in the batch); dr-grpo: Σ_it ℓ_it / (B · L_max)
        loss = (per_token * mask).sum() / norm
    with torch.no_grad():
        # the clip bites where min() took the clipped term: A > 0 and r > 1+ε_high (no further
        # push up), or A < 0 and r < 1-ε_low (no further push down); there the gradient is 0
        bites = ((adv > 0) & (ratio > 1 + cfg.clip_high)) | ((adv < 0) & (ratio < 1 - cfg.clip_low))
        kl = torch.exp(ref - new) - (ref - new) - 1 if ref is not None else torch.zeros_like(ratio)
        stats = LossStats(
            clipped_tokens=(bites * mask).sum(),
            kl_sum=(kl * mask).sum(),
            tis_weight_sum=(tis * mask).sum(),
        )
    return loss, stats


def loss_normaliser(batch: Batch, cfg: GRPOConfig) -> Tensor | float:
    """The whole batch's loss denominator (a 0-d tensor on the batch's device, or a number)."""
    if cfg.loss_agg == "token-mean":  # policy tokens in the batch
        return batch.loss_mask.sum().clamp(min=1)
    if cfg.loss_agg == "seq-mean":  # sequences in the batch
        return float(len(batch.advantages))
    return float(len(batch.advantages) * cfg.max_episode_tokens)  # Dr. GRPO's constant: B · L_max


class GRPOTrainer:
    """Holds the model, optimiser, generator and logs; :meth:`train` runs the loop."""

    def __init__(self, cfg: GRPOConfig, model: Any = None, tokenizer: Any = None) -> None:
        import torch

        self.cfg = cfg
        random.seed(cfg.seed)
        torch.manual_seed(cfg.seed)
        self.out = Path(cfg.output_dir)
        self.out.mkdir(parents=True, exist_ok=True)
        if model is None:
            model, tokenizer = load_model(cfg)
        self.model, self.tok = model, tokenizer
        self.device = next(self.model.parameters()).device  # every tensor the trainer makes goes here
        if self.device.type != torch.device(cfg.device).type:
            raise GymhubError(f"the model is on {self.device} but cfg.device is {cfg.device!r}")
        pad = self.tok.pad_token_id
        self.pad_id = pad if pad is not None else self.tok.eos_token_id
        self.ref_model = self._reference() if cfg.kl_coef > 0 else None  # none loaded when β_KL = 0
        params = [p for p in self.model.parameters() if p.requires_grad]
        fused = self.device.type in ("cpu", "cuda")  # one kernel for all parameters (TRL's default too)
        self.optimizer = torch.optim.AdamW(params, lr=cfg.lr, weight_decay=cfg.weight_decay, fused=fused)
        self._loop = asyncio.new_event_loop()  # the rollouts' loop, kept with its worker threads
        weakref.finalize(self, self._loop.close)
        self.generator = make_generator(cfg, self.model, self.tok)
        # one for the whole run: its envs (local ones, or Ray's workers) serve every step and
        # are closed by close(), at the end of train(), or when the trainer is collected
        self.episode_backend = rollout_backend(cfg.rollout_backend, cfg.ray_address, keep_workers=True)
        weakref.finalize(self, self.episode_backend.close)
        self.env_kwargs: dict[str, Any] = {"split": cfg.split}
        if cfg.max_turns is not None:
            self.env_kwargs["max_turns"] = cfg.max_turns
        self.mixture = EnvMixture(
            cfg.env, split=cfg.split, seed=cfg.seed, env_kwargs=self.env_kwargs, reward_overrides=cfg.reward
        )
        self.eval_tasks: dict[str, list[Task]] = (
            {e: eval_tasks(e, self.env_kwargs, cfg.eval_tasks) for e in self.mixture.env_ids}
            if cfg.eval_every
            else {}
        )
        self.step = 0
        self.history: list[dict[str, Any]] = []
        self._writers = Writers(cfg, self.out)
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
    def sample(self) -> tuple[list[TrajectoryGroup], dict[str, float]]:
        """``tasks_per_step`` groups. With dynamic sampling, a group whose advantages are all 0
        is dropped and a refill draws fresh tasks (never the next step's: the draw advances)."""
        cfg = self.cfg
        groups: list[TrajectoryGroup] = []
        flat: list[TrajectoryGroup] = []  # zero-variance groups, used only if nothing else came
        dropped = 0
        for attempt in range(1 + (cfg.max_refills if cfg.dynamic_sampling else 0)):
            drawn = self.mixture.draw(cfg.tasks_per_step - len(groups))
            seed = cfg.seed * 1_000_003 + self.step * 101 + attempt
            for g in self._rollout(drawn, seed):
                # rewards and advantages under this run's RewardConfig for the group's env
                g = TrajectoryGroup.build(list(g.trajectories), self.mixture.rewards[g.env_id])
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

    def _rollout(self, drawn: list[tuple[str, Task]], seed: int) -> list[TrajectoryGroup]:
        """G episodes of each drawn task, each env's tasks through the rollout engine at once;
        the groups come back in draw order."""
        cfg = self.cfg
        policy = self.generator.policy()
        by_env: dict[str, list[Task]] = {}
        for env_id, task in drawn:
            by_env.setdefault(env_id, []).append(task)

        async def play(env_id: str, tasks: list[Task]) -> list[TrajectoryGroup]:
            return [
                g
                async for g in arollout(
                    env_id,
                    policy,
                    tasks=tasks,
                    group_size=cfg.group_size,
                    concurrency=cfg.concurrency,
                    seed=seed,
                    env_kwargs=self.env_kwargs,
                    backend=self.episode_backend,
                )
            ]

        async def play_all() -> list[list[TrajectoryGroup]]:
            return await asyncio.gather(*(play(e, tasks) for e, tasks in by_env.items()))

        groups = [g for per_env in self._loop.run_until_complete(play_all()) for g in per_env]
        position: dict[tuple[str, str], int] = {}
        for i, (env_id, task) in enumerate(drawn):
            position.setdefault((env_id, task.id), i)
        return sorted(groups, key=lambda g: position.get((g.env_id, g.task_id), len(drawn)))

    # ------------------------------------------------------------ 2. learn
    def train_step(self) -> dict[str, Any]:
        import torch

        cfg = self.cfg
        t0 = time.perf_counter()
        self.model.eval()
        groups, sample_stats = self.sample()
        t_generate = time.perf_counter() - t0
        batch = make_batch(groups, self.generator.version, self.pad_id, self.device, cfg.max_episode_tokens)
        t1 = time.perf_counter()
        self.model.train()
        rows = len(batch.advantages)
        slices = [slice(i, min(i + cfg.micro_batch, rows)) for i in range(0, rows, cfg.micro_batch)]
        norm = loss_normaliser(batch, cfg)
        params = [p for p in self.model.parameters() if p.requires_grad]
        before: list[Any] = []  # log π_θ before the first update, per micro-batch
        olds: list[Any] = []  # log π_old, kept for all μ updates
        refs: list[Any] = []  # log π_ref (KL), likewise fixed
        per_update = []  # [loss, grad norm, clipped tokens, KL sum, TIS weight sum] of each update
        for update in range(cfg.updates_per_batch):  # μ optimiser steps on this one batch
            self.optimizer.zero_grad(set_to_none=True)
            sums = torch.zeros(4, device=self.device)
            for i, s in enumerate(slices):  # gradient accumulation; the step comes after all of them
                micro = batch.micro_batch(s)
                new = self._logprobs(self.model, batch, s)
                if update == 0:
                    # π_old = the policy that sampled this batch: the trainer's own forward before
                    # any update (detached: r = 1 in value, ∇r = ∇log π_θ), or the sampler's record.
                    before.append(new.detach())
                    olds.append(before[i] if cfg.old_logprobs == "trainer" else micro.behaviour_logprobs)
                    with torch.no_grad():
                        refs.append(self._ref_logprobs(batch, s) if cfg.kl_coef > 0 else None)
                loss, stats = grpo_loss(new, olds[i], refs[i], micro, cfg, norm)
                loss.backward()
                sums += torch.stack([loss.detach(), *stats])  # loss, clipped tokens, KL sum, TIS sum
            grad_norm = torch.nn.utils.clip_grad_norm_(params, cfg.max_grad_norm)  # ‖g‖ ≤ max_grad_norm
            self.optimizer.step()
            per_update.append(torch.cat([sums[:1], grad_norm.reshape(1).to(sums), sums[1:]]))
        loss_mean, grad_norm_mean, clipped, kl_sum, tis_sum = torch.stack(per_update).mean(0).tolist()
        policy_tokens = float(batch.loss_mask.sum())
        monitor: dict[str, float] = {}
        if policy_tokens > 0:  # the sampler's log-probs against the trainer's, before the update
            report = mismatch_report(torch.cat(before), batch.behaviour_logprobs, batch.loss_mask)
            monitor = dict(zip(report, torch.stack(list(report.values())).tolist(), strict=True))
            monitor["mismatch/staleness_max"] = float(max(self.step - v for v in batch.policy_version))
        self.step += 1
        self.generator.sync(self.model, self.step)  # the generator samples from the new weights
        t_train = time.perf_counter() - t1
        tokens = max(policy_tokens, 1.0)
        metrics = {
            "step": self.step,
            "loss": loss_mean,  # means over the μ updates
            "grad_norm": grad_norm_mean,
            "kl": kl_sum / tokens,
            "clip_fraction": clipped / tokens,  # policy tokens whose gradient the clip removed
            "tis_weight_mean": tis_sum / tokens,
            "policy_tokens": policy_tokens,
            "tokens_per_s": policy_tokens / max(t_generate, 1e-9),
            "time/generate_s": t_generate,
            "time/train_s": t_train,
            **sample_stats,
            **reward_stats(groups),
            **rlvp_stats(groups),  # flat-outcome groups the path signal rescued, violations
            **per_env_stats(groups),
            **monitor,
        }
        metrics["time/verify_s"] = sum(t.timings.get("env_s", 0.0) for g in groups for t in g.trajectories)
        if cfg.eval_every and (self.step % cfg.eval_every == 0 or self.step == cfg.steps):
            metrics |= self.evaluate()
        self.history.append(metrics)
        self._writers.write(metrics)
        return metrics

    def _logprobs(self, model: Any, batch: Batch, s: slice) -> Any:
        return token_logprobs(
            model,
            batch.input_ids[s],
            batch.attention[s],
            batch.targets[s],
            self.cfg.temperature,
            batch.first_target,
        )

    def _ref_logprobs(self, batch: Batch, s: slice) -> Any:
        if self.ref_model is not None:
            return self._logprobs(self.ref_model, batch, s)
        with self.model.disable_adapter():  # LoRA: the base model is the reference
            return self._logprobs(self.model, batch, s)

    # ------------------------------------------------------------ 3. evaluate
    def evaluate(self) -> dict[str, float]:
        """``eval/...``: greedy pass@1 and sampled pass@k on the held-out tasks (see evaluation.py)."""
        cfg = self.cfg
        start = time.perf_counter()
        self.model.eval()
        metrics = evaluate(
            self.generator.policy(),
            self.eval_tasks,
            samples=cfg.eval_samples,
            k=cfg.eval_k,
            concurrency=cfg.concurrency,
            seed=2**62 + cfg.seed,  # apart from training's seeds; the same draws at every evaluation
            env_kwargs=self.env_kwargs,
        )
        return metrics | {"time/eval_s": time.perf_counter() - start}

    def train(self) -> list[dict[str, Any]]:
        cfg = self.cfg
        if cfg.eval_every and self.step == 0:  # the starting point of the eval curve
            row = {"step": 0, **self.evaluate()}
            self.history.append(row)
            self._writers.write(row)
        while self.step < cfg.steps:
            self.train_step()
            if cfg.checkpoint_every and self.step % cfg.checkpoint_every == 0:
                self.save_checkpoint(self.out / "checkpoint")
        self.save_checkpoint(self.out / "checkpoint")
        self._writers.close(self.history)
        self.close()
        return self.history

    def close(self) -> None:
        """Close the envs and env workers kept between steps (a later step makes new ones)."""
        self.episode_backend.close()

    # ------------------------------------------------------------ 4. checkpoints
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
                "tasks": self.mixture.state_dict(),
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
        if "tasks" in state:  # checkpoints from before the task sampler had a state lack it
            self.mixture.load_state_dict(state["tasks"])
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
