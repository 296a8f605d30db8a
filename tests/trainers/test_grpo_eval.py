"""Held-out evaluation during training: the eval split, greedy pass@1, sampled pass@k, logged
as ``eval/...`` and drawn on the reward curve beside the training reward."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from gymhub.trainers.evaluation import pass_at_k, passed  # noqa: E402
from gymhub.trainers.grpo import GRPOConfig, GRPOTrainer  # noqa: E402
from gymhub.trainers.grpo_logs import plot_rewards  # noqa: E402


def test_eval_every_logs_greedy_and_sampled_pass_rates(tmp_path: Path, tiny_model_path: Path) -> None:
    cfg = GRPOConfig(
        env="toy-letters-v0",
        model=str(tiny_model_path),
        steps=2,
        tasks_per_step=2,
        group_size=2,
        max_new_tokens=2,
        eval_every=1,
        eval_tasks=3,
        eval_samples=3,
        eval_k=2,
        output_dir=str(tmp_path / "run"),
        console=False,
    )
    trainer = GRPOTrainer(cfg)
    [tasks] = trainer.eval_tasks.values()
    train_ids = {t.id for t in trainer.mixture.pools["toy-letters-v0"]}
    assert len(tasks) == 3 and all(t.split == "eval" and t.id not in train_ids for t in tasks)
    history = trainer.train()
    assert [r["step"] for r in history] == [0, 1, 2]  # the starting point, then every step
    assert "reward_mean" not in history[0]
    for row in history:
        for key in ("eval/greedy_pass@1", "eval/greedy_outcome_mean", "eval/pass@1", "eval/pass@2"):
            assert 0.0 <= row[key] <= 1.0, key
        assert row["eval/pass@1"] <= row["eval/pass@2"]  # pass@k grows with k
    assert trainer.generator.policy().top_k == 0  # greedy decoding was only for the greedy pass
    rows = [json.loads(x) for x in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [0, 1, 2] and "eval/pass@2" in rows[0]
    labels = plot_rewards(history, tmp_path / "curve.png")
    assert {"train reward", "eval greedy pass@1"} <= set(labels)


def test_greedy_eval_decodes_the_argmax_and_pass_at_k_counts_passes(
    tmp_path: Path, tiny_model_path: Path
) -> None:
    import asyncio

    from gymhub._rollout_engine import arollout
    from gymhub._token_episodes import token_episode
    from gymhub.trainers.evaluation import greedy

    cfg = GRPOConfig(
        env="toy-letters-v0",
        model=str(tiny_model_path),
        max_new_tokens=3,
        eval_every=1,
        eval_tasks=1,
        output_dir=str(tmp_path / "run"),
        console=False,
    )
    trainer = GRPOTrainer(cfg)
    [tasks] = trainer.eval_tasks.values()
    policy = trainer.generator.policy()

    async def play() -> list:
        return [g async for g in arollout("toy-letters-v0", policy, tasks=tasks, group_size=1, seed=5)]

    with greedy(policy):
        [group] = asyncio.run(play())
    record = token_episode(group.trajectories[0])
    ids = record.prompt_ids + record.completion_ids
    with torch.no_grad():
        logits = trainer.model(input_ids=torch.tensor([ids])).logits[0]
    for i, token in enumerate(record.completion_ids):  # each sampled token is the argmax
        assert int(logits[len(record.prompt_ids) - 1 + i].argmax()) == token
    assert passed(group) in (0, 1)
    assert pass_at_k(1, passed(group), 1) == float(passed(group))
