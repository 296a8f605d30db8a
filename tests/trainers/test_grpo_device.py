"""Every tensor the trainer makes follows the model's device.

On CPU the batch, loss and mismatch-monitor path runs with inputs on the ``meta`` device: a
tensor made on the CPU beside them (the monitor's quantile levels once were) raises there, as
it would on a GPU. Where an accelerator exists, a whole training step runs on it.
"""

from __future__ import annotations

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
)
from gymhub.trainers.mismatch import mismatch_report  # noqa: E402


def _accelerator() -> str | None:
    if torch.cuda.is_available():
        return "cuda"
    if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        return "mps"
    return None


def _cfg(tmp_path: Path, model: Path, **overrides: Any) -> GRPOConfig:
    settings: dict[str, Any] = {
        "env": "toy-letters-v0",
        "model": str(model),
        "tasks_per_step": 2,
        "group_size": 4,
        "max_new_tokens": 4,
        "output_dir": str(tmp_path / "run"),
        "console": False,
    }
    return GRPOConfig(**{**settings, **overrides})


@pytest.mark.parametrize("loss_agg", ["token-mean", "seq-mean", "dr-grpo"])
def test_batch_loss_and_monitor_stay_on_the_meta_device(
    tmp_path: Path, tiny_model_path: Path, loss_agg: str
) -> None:
    cfg = _cfg(tmp_path, tiny_model_path, loss_agg=loss_agg, kl_coef=0.1, tis_cap=2.0)
    trainer = GRPOTrainer(cfg)
    groups, _ = trainer.sample()
    batch = make_batch(groups, 0, trainer.pad_id, "meta", cfg.max_episode_tokens)
    for name in ("input_ids", "attention", "targets", "loss_mask", "behaviour_logprobs", "advantages"):
        assert getattr(batch, name).device.type == "meta", name
    shape = batch.loss_mask.shape
    new = torch.empty(shape, device="meta", requires_grad=True)
    old = torch.empty(shape, device="meta")
    ref = torch.empty(shape, device="meta")
    norm = loss_normaliser(batch, cfg)
    loss, stats = grpo_loss(new, old, ref, batch.micro_batch(slice(None)), cfg, norm)
    assert loss.device.type == "meta" and loss.shape == ()
    assert all(v.device.type == "meta" for v in stats)
    loss.backward()
    assert new.grad is not None and new.grad.device.type == "meta"
    report = mismatch_report(old, batch.behaviour_logprobs, batch.loss_mask)
    assert "mismatch/ratio_p99" in report
    assert all(v.device.type == "meta" and v.shape == () for v in report.values())


def test_monitor_quantiles_by_hand() -> None:
    trainer = torch.log(torch.tensor([[1.0, 2.0, 9.0], [4.0, 1.0, 1.0]]))
    behaviour = torch.zeros(2, 3)
    mask = torch.tensor([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]])  # ratios 1, 2, 4 (9 is not sampled)
    report = {k: float(v) for k, v in mismatch_report(trainer, behaviour, mask).items()}
    assert report["mismatch/ratio_p50"] == pytest.approx(2.0)
    assert report["mismatch/ratio_max"] == pytest.approx(4.0)
    assert report["mismatch/ratio_mean"] == pytest.approx(7 / 3)
    assert report["mismatch/abs_logprob_diff_max"] == pytest.approx(torch.log(torch.tensor(4.0)).item())
    assert report["mismatch/ratio_p01"] == pytest.approx(1.0 + 0.02 * 1.0)  # linear interpolation


@pytest.mark.parametrize("device", ["accelerator"])
def test_a_training_step_runs_on_the_accelerator(tmp_path: Path, tiny_model_path: Path, device: str) -> None:
    found = _accelerator()
    if found is None:
        pytest.skip("no CUDA or MPS device here")
    cfg = _cfg(
        tmp_path,
        tiny_model_path,
        device=found,
        kl_coef=0.05,
        tis_cap=2.0,
        updates_per_batch=2,
        eval_every=1,
        eval_tasks=2,
        eval_samples=2,
        eval_k=2,
        steps=1,
    )
    trainer = GRPOTrainer(cfg)
    assert trainer.device.type == found
    history = trainer.train()
    m = history[-1]
    assert m["step"] == 1 and m["policy_tokens"] > 0
    assert m["mismatch/abs_logprob_diff_max"] < 1e-3
    assert "eval/greedy_pass@1" in m and "eval/pass@2" in m
