"""The GRPO trainer: the loss sees exactly the sampled tokens, and only those, and it learns."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from gymhub.trainers.grpo import (  # noqa: E402
    GRPOConfig,
    GRPOTrainer,
    grpo_loss,
    loss_normaliser,
    make_batch,
    token_logprobs,
)


def _cfg(tmp_path: Path, model: Path, **overrides: Any) -> GRPOConfig:
    settings: dict[str, Any] = {
        "env": "toy-letters-v0",
        "model": str(model),
        "steps": 2,
        "tasks_per_step": 2,
        "group_size": 4,
        "max_new_tokens": 6,
        "lr": 1e-3,
        "output_dir": str(tmp_path / "run"),
        "console": False,
        "concurrency": 8,
    }
    settings.update(overrides)
    return GRPOConfig(**settings)


def test_sampler_and_trainer_agree_before_the_first_update(tmp_path: Path, tiny_model_path: Path) -> None:
    trainer = GRPOTrainer(_cfg(tmp_path, tiny_model_path, steps=1))
    m = trainer.train_step()
    # Same weights, hf backend: the importance ratio is 1 within float tolerance.
    assert m["mismatch/abs_logprob_diff_max"] < 1e-4
    assert abs(m["mismatch/ratio_max"] - 1) < 1e-4 and abs(m["mismatch/ratio_p01"] - 1) < 1e-4
    assert m["mismatch/staleness_max"] == 0 and m["clip_fraction"] == 0.0
    for key in (
        "reward_mean",
        "reward_std",
        "outcome_mean",
        "path_signal_mean",
        "zero_variance_groups",
        "loss",
        "grad_norm",
        "kl",
        "tokens_per_s",
        "time/generate_s",
        "time/verify_s",
        "time/train_s",
    ):
        assert key in m


def _multiturn_batch(trainer: GRPOTrainer) -> Any:
    groups, _ = trainer.sample()
    return make_batch(groups, 0, trainer.tok.pad_token_id, "cpu")


def test_env_tokens_get_exactly_zero_gradient(tmp_path: Path, tiny_model_path: Path) -> None:
    cfg = _cfg(tmp_path, tiny_model_path, env="search-v0", max_turns=3, tasks_per_step=1, group_size=3)
    trainer = GRPOTrainer(cfg)
    batch = _multiturn_batch(trainer)
    assert (batch.loss_mask[batch.attention[:, 1:].bool()] == 0).any()  # env tokens are present
    batch.advantages = torch.tensor([1.0, -0.5, 2.0])  # any non-zero advantages
    new = token_logprobs(trainer.model, batch.input_ids, batch.attention, batch.targets, cfg.temperature)
    new.retain_grad()
    old = new.detach()
    loss, _ = grpo_loss(new, old, None, batch.micro_batch(slice(None)), cfg, loss_normaliser(batch, cfg))
    loss.backward()
    env_or_pad = batch.loss_mask == 0
    assert torch.count_nonzero(new.grad[env_or_pad]) == 0  # exactly zero, not small
    assert torch.count_nonzero(new.grad[~env_or_pad]) > 0


def test_a_zero_variance_group_contributes_no_gradient(tmp_path: Path, tiny_model_path: Path) -> None:
    cfg = _cfg(tmp_path, tiny_model_path, tasks_per_step=1)
    trainer = GRPOTrainer(cfg)
    batch = _multiturn_batch(trainer)
    batch.advantages = torch.zeros_like(batch.advantages)  # all outcomes equal: advantages 0
    new = token_logprobs(trainer.model, batch.input_ids, batch.attention, batch.targets, cfg.temperature)
    norm = loss_normaliser(batch, cfg)
    loss, _ = grpo_loss(new, new.detach(), None, batch.micro_batch(slice(None)), cfg, norm)
    loss.backward()
    assert all(p.grad is None or torch.count_nonzero(p.grad) == 0 for p in trainer.model.parameters())


def test_resume_reproduces_the_next_steps_loss(tmp_path: Path, tiny_model_path: Path) -> None:
    straight = GRPOTrainer(_cfg(tmp_path / "a", tiny_model_path, steps=3))
    expected = straight.train()
    first = GRPOTrainer(_cfg(tmp_path / "b", tiny_model_path, steps=2))
    first.train()
    resumed = GRPOTrainer(_cfg(tmp_path / "b", tiny_model_path, steps=3, resume=True))
    assert resumed.step == 2
    [third] = resumed.train()[2:]
    assert third["loss"] == pytest.approx(expected[2]["loss"], abs=1e-7)
    assert third["reward_mean"] == expected[2]["reward_mean"]
    lines = (tmp_path / "b" / "run" / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(x)["step"] for x in lines] == [1, 2, 3]
    assert (tmp_path / "b" / "run" / "reward_curve.png").stat().st_size > 0


def test_options_kl_lora_dynamic_sampling_and_aggregations_run(tmp_path: Path, tiny_model_path: Path) -> None:
    for i, options in enumerate(
        [
            {"kl_coef": 0.05, "loss_agg": "seq-mean"},
            {"lora_rank": 4, "kl_coef": 0.05, "loss_agg": "dr-grpo"},
            {"dynamic_sampling": True, "tis_cap": 2.0, "micro_batch": 3},
        ]
    ):
        trainer = GRPOTrainer(_cfg(tmp_path / str(i), tiny_model_path, steps=1, **options))
        before = {n: p.detach().clone() for n, p in trainer.model.named_parameters() if p.requires_grad}
        m = trainer.train()[0]
        assert m["grad_norm"] >= 0 and m["kl"] >= 0
        changed = [
            n
            for n, p in trainer.model.named_parameters()
            if p.requires_grad and not torch.equal(p, before[n])
        ]
        if options.get("lora_rank"):  # only the adapter trains; the base weights stay as they were
            trainable = [n for n, p in trainer.model.named_parameters() if p.requires_grad]
            assert trainable and all("lora_" in n for n in trainable)
            assert all("lora_" in n for n in changed)
    assert GRPOTrainer(_cfg(tmp_path / "noref", tiny_model_path, kl_coef=0.0)).ref_model is None


def test_cli_trains_from_a_yaml_config_with_overrides(tmp_path: Path, tiny_model_path: Path) -> None:
    import subprocess
    import sys

    config = tmp_path / "grpo.yaml"
    config.write_text(
        f"env: toy-letters-v0\nmodel: {tiny_model_path}\nsteps: 2\ntasks_per_step: 2\ngroup_size: 4\n"
        f"max_new_tokens: 4\noutput_dir: {tmp_path / 'cli'}\nconsole: false\n"
    )
    cli = [sys.executable, "-m", "gymhub", "train", "grpo", "--config", str(config)]
    done = subprocess.run([*cli, "--set", "kl_coef=0.02", "--steps", "1"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "trained 1 steps" in done.stdout
    rows = [json.loads(x) for x in (tmp_path / "cli" / "metrics.jsonl").read_text().splitlines()]
    assert len(rows) == 1 and rows[0]["kl"] >= 0
    assert (tmp_path / "cli" / "checkpoint" / "state.pt").exists()
    bad = subprocess.run([*cli, "--set", "no_such_field=1"], capture_output=True, text=True)
    assert bad.returncode != 0 and "no_such_field" in bad.stderr + bad.stdout


def test_an_episode_keeps_to_its_token_budget(tmp_path: Path, tiny_model_path: Path) -> None:
    from gymhub._token_episodes import token_episode

    cfg = _cfg(
        tmp_path,
        tiny_model_path,
        env="search-v0",
        max_turns=4,
        tasks_per_step=1,
        group_size=2,
        max_new_tokens=30,
        max_episode_tokens=40,
    )
    trainer = GRPOTrainer(cfg)
    groups, _ = trainer.sample()
    for t in groups[0].trajectories:
        # Each reply may take only what is left of the 40-token budget (env tokens count), at least 1.
        used = 0
        for turn in t.turns[1:]:
            if turn.source == "policy":
                assert 1 <= len(turn.token_ids) <= max(1, min(30, 40 - used))
            used += len(turn.token_ids)
        assert len([x for x in t.turns if x.source == "policy"]) == 4  # the episode still ran its turns
    batch = make_batch(groups, 0, trainer.tok.pad_token_id, "cpu", cfg.max_episode_tokens)
    widths = [len(token_episode(t).prompt_ids) for t in groups[0].trajectories]
    assert int(batch.loss_mask.sum(-1).max()) <= 40 and int(batch.attention.sum(-1).max()) <= max(widths) + 40


def test_tensorboard_and_wandb_logs_when_asked(
    tmp_path: Path, tiny_model_path: Path, monkeypatch: Any
) -> None:
    pytest.importorskip("tensorboard")
    pytest.importorskip("wandb")
    monkeypatch.setenv("WANDB_MODE", "offline")  # no account, no network: the run is written locally
    monkeypatch.setenv("WANDB_DIR", str(tmp_path))
    monkeypatch.setenv("WANDB_SILENT", "true")
    cfg = _cfg(tmp_path, tiny_model_path, steps=1, tensorboard=True, wandb=True)
    GRPOTrainer(cfg).train()
    assert list((tmp_path / "run" / "tensorboard").glob("events.out.tfevents.*"))
    assert list(tmp_path.glob("wandb/offline-run-*/run-*.wandb"))


def test_scored_positions_match_a_full_log_softmax(tmp_path: Path, tiny_model_path: Path) -> None:
    """token_logprobs scores from the batch's first completion position only (logit minus
    logsumexp, the head run there alone): the same numbers as a full log-softmax, 0 before."""
    cfg = _cfg(tmp_path, tiny_model_path, tasks_per_step=2, temperature=0.7)
    trainer = GRPOTrainer(cfg)
    batch = _multiturn_batch(trainer)
    first = batch.first_target
    assert first > 0 and not batch.loss_mask[:, :first].any()  # no policy token before it
    assert batch.loss_mask[:, first].any()  # the shortest prompt's completion starts there
    with torch.no_grad():
        scored = token_logprobs(
            trainer.model, batch.input_ids, batch.attention, batch.targets, cfg.temperature, first
        )
        logits = trainer.model(input_ids=batch.input_ids, attention_mask=batch.attention).logits
        full = torch.log_softmax(logits[:, :-1].float() / cfg.temperature, -1)
        full = full.gather(-1, batch.targets.unsqueeze(-1)).squeeze(-1)
    assert scored.shape == full.shape
    assert torch.count_nonzero(scored[:, :first]) == 0
    assert torch.allclose(scored[:, first:], full[:, first:], atol=1e-5)


def test_a_step_decodes_all_its_episodes_in_one_batch(tmp_path: Path, tiny_model_path: Path) -> None:
    """Episodes that start together are decoded together: the batcher waits for those still
    rendering their prompt instead of decoding twice (half a batch, then the rest)."""
    cfg = _cfg(tmp_path, tiny_model_path, tasks_per_step=3, group_size=4, concurrency=12, steps=2)
    trainer = GRPOTrainer(cfg)
    policy = trainer.generator.policy()
    batches: list[int] = []
    decode = policy.generate_batch

    def counted(prompts: list[list[int]], seeds: list[int | None], limits: list[int] | None = None) -> Any:
        batches.append(len(prompts))
        return decode(prompts, seeds, limits)

    policy.generate_batch = counted  # type: ignore[method-assign]
    for _ in range(2):  # the first step renders every prompt; the second finds them remembered
        batches.clear()
        groups, _ = trainer.sample()
        trainer.step += 1
        assert batches == [12]
        assert sum(len(g.trajectories) for g in groups) == 12
