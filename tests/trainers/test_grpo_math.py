"""The GRPO loss and its figures, against values worked out by hand.

The batch: two sequences of three positions. Row 0 (A = +1) samples all three tokens with
ratios r = 1.5, 0.9, 0.5; row 1 (A = -1) samples one token, r = 0.7. ε_low = 0.2,
ε_high = 0.28 (clip-higher), so the clip range is [0.8, 1.28]:

    row 0: min(1.5·1, 1.28·1) = 1.28  (clipped: no further push up)
           min(0.9, 0.9)       = 0.9
           min(0.5, 0.8)       = 0.5   (r < 1-ε but A > 0: the min keeps r, the gradient flows)
    row 1: min(-0.7, -0.8)     = -0.8  (clipped: no further push down)

so the per-token losses -min(...) are -1.28, -0.9, -0.5 | 0.8, and 2 of the 4 policy tokens
are clipped.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from gymhub.trainers.evaluation import pass_at_k  # noqa: E402
from gymhub.trainers.grpo import Batch, GRPOConfig, MicroBatch, grpo_loss, loss_normaliser  # noqa: E402
from gymhub.types import RewardConfig, Verdict  # noqa: E402

RATIOS = [[1.5, 0.9, 0.5], [0.7, 1.0, 1.0]]
MASK = [[1.0, 1.0, 1.0], [1.0, 0.0, 0.0]]
ADVANTAGES = [1.0, -1.0]


def _cfg(**overrides: Any) -> GRPOConfig:
    return GRPOConfig(clip_low=0.2, clip_high=0.28, max_episode_tokens=4, **overrides)


def _inputs() -> tuple[Any, Any, MicroBatch]:
    old = torch.log(torch.tensor([[0.5, 0.4, 0.3], [0.6, 0.2, 0.1]]))
    new = (old + torch.log(torch.tensor(RATIOS))).requires_grad_(True)  # r = exp(new - old)
    return new, old, MicroBatch(torch.tensor(MASK), torch.tensor(ADVANTAGES), old.clone())


def _batch() -> Batch:
    mask = torch.tensor(MASK)
    return Batch(
        input_ids=torch.zeros(2, 4, dtype=torch.long),
        attention=torch.ones(2, 4, dtype=torch.long),
        targets=torch.zeros(2, 3, dtype=torch.long),
        loss_mask=mask,
        behaviour_logprobs=torch.zeros(2, 3),
        advantages=torch.tensor(ADVANTAGES),
        policy_version=[0, 0],
    )


@pytest.mark.parametrize(
    ("loss_agg", "normaliser", "expected"),
    [
        ("token-mean", 4.0, (-1.28 - 0.9 - 0.5 + 0.8) / 4),  # Σ / policy tokens
        ("seq-mean", 2.0, ((-1.28 - 0.9 - 0.5) / 3 + 0.8 / 1) / 2),  # mean of the sequence means
        ("dr-grpo", 8.0, (-1.28 - 0.9 - 0.5 + 0.8) / (2 * 4)),  # Σ / (B · max_episode_tokens)
    ],
)
def test_clipped_loss_and_each_normaliser_by_hand(loss_agg: str, normaliser: float, expected: float) -> None:
    cfg = _cfg(loss_agg=loss_agg)
    norm = loss_normaliser(_batch(), cfg)
    assert float(norm) == normaliser
    new, old, micro = _inputs()
    loss, stats = grpo_loss(new, old, None, micro, cfg, norm)
    assert float(loss.detach()) == pytest.approx(expected, abs=1e-6)
    assert float(stats.clipped_tokens) == 2.0  # the clip fraction is 2 / 4
    assert float(stats.tis_weight_sum) == 4.0  # no TIS: weight 1 per policy token
    loss.backward()
    # the clip bites: no gradient through the two clipped tokens, nor the unsampled ones
    assert new.grad[0, 0] == 0 and new.grad[1, 0] == 0 and new.grad[1, 1] == 0 and new.grad[1, 2] == 0
    # elsewhere ∂(-r·A/norm)/∂log π = -r·A/norm (token-mean / dr-grpo) or -r·A/(|o_i|·B) (seq-mean)
    scale = 1 / (3 * 2) if loss_agg == "seq-mean" else 1 / normaliser
    assert float(new.grad[0, 1]) == pytest.approx(-0.9 * scale, rel=1e-5)
    assert float(new.grad[0, 2]) == pytest.approx(-0.5 * scale, rel=1e-5)


def test_truncated_importance_weights_by_hand() -> None:
    cfg = _cfg(tis_cap=2.5)
    new, old, micro = _inputs()
    # π_old / π_sampler = 2, 0.5, 3 (capped to 2.5) | 1
    behaviour = old - torch.log(torch.tensor([[2.0, 0.5, 3.0], [1.0, 1.0, 1.0]]))
    loss, stats = grpo_loss(new, old, None, micro._replace(behaviour_logprobs=behaviour), cfg, 4.0)
    assert float(stats.tis_weight_sum) == pytest.approx(2.0 + 0.5 + 2.5 + 1.0)
    assert float(loss.detach()) == pytest.approx(
        -(1.28 * 2.0 + 0.9 * 0.5 + 0.5 * 2.5 - 0.8 * 1.0) / 4, abs=1e-6
    )


def test_k3_kl_term_by_hand() -> None:
    cfg = _cfg(kl_coef=0.1)
    new, old, micro = _inputs()
    ref = new.detach() + math.log(2.0)  # π_ref / π_θ = 2 everywhere: k3 = 2 - ln 2 - 1
    k3 = 2 - math.log(2) - 1
    loss, stats = grpo_loss(new, old, ref, micro, cfg, 4.0)
    assert float(stats.kl_sum) == pytest.approx(4 * k3, rel=1e-5)
    assert float(loss.detach()) == pytest.approx((-1.28 - 0.9 - 0.5 + 0.8 + 0.1 * 4 * k3) / 4, abs=1e-6)


def test_dr_grpo_mean_only_advantages_by_hand() -> None:
    def v(outcome: float, signal: float) -> Verdict:
        return Verdict(outcome=outcome, path_signal=signal, verifier="v", verifier_version="1")

    group = [v(1.0, 0.0), v(0.0, -1.0), v(0.0, 0.0), v(1.0, 0.0)]
    rewards, adv = RewardConfig(beta=0.5, normalization="mean").combine(group)
    assert rewards == [1.0, -0.5, 0.0, 1.0]
    # O - mean(O) = ±0.5; Φ - mean(Φ) = 0.25, -0.75, 0.25, 0.25; A = that + 0.5 · that; no ÷ std
    assert adv == pytest.approx([0.625, -0.875, -0.375, 0.625])
    _, zscored = RewardConfig(beta=0.5, eps=0.0).combine(group)
    assert zscored[0] == pytest.approx(1 + 0.5 * (0.25 / math.sqrt(0.1875)))  # the z-score divides
    _, constant = RewardConfig(normalization="mean").combine([v(0.5, 0.0)] * 3)
    assert constant == [0.0, 0.0, 0.0]


def test_pass_at_k_unbiased_estimator_by_hand() -> None:
    assert pass_at_k(5, 2, 2) == pytest.approx(1 - 3 / 10)  # 1 - C(3,2)/C(5,2)
    assert pass_at_k(8, 1, 1) == pytest.approx(1 / 8)  # pass@1 is the pass rate
    assert pass_at_k(8, 0, 4) == 0.0
    assert pass_at_k(4, 2, 3) == 1.0  # n - c < k: every 3 of the 4 include a pass
    with pytest.raises(ValueError):
        pass_at_k(4, 5, 1)


def test_updates_per_batch_keeps_pi_old_so_the_clip_bites(tmp_path: Path) -> None:
    from tiny_model import PLAIN_TEMPLATE, build_tiny_model

    from gymhub.trainers.grpo import GRPOTrainer

    model = build_tiny_model(tmp_path / "m", chars=True, template=PLAIN_TEMPLATE)

    def run(mu: int) -> dict[str, Any]:
        cfg = GRPOConfig(
            env="toy-letters-v0",
            model=str(model),
            tasks_per_step=2,
            group_size=8,
            max_new_tokens=8,
            dynamic_sampling=True,  # groups with a learning signal, so the updates move the policy
            max_refills=8,
            lr=0.05,
            clip_low=0.05,
            clip_high=0.05,
            updates_per_batch=mu,
            output_dir=str(tmp_path / f"mu{mu}"),
            console=False,
        )
        return GRPOTrainer(cfg).train_step()

    one, three = run(1), run(3)
    assert one["zero_variance_groups"] == 0.0 and one["grad_norm"] > 0
    assert one["clip_fraction"] == 0.0  # the first update's ratio is 1: nothing to clip
    # updates 2 and 3 are measured against the same π_old, which the updates moved away from
    assert three["clip_fraction"] > 0.0
    assert one["mismatch/abs_logprob_diff_max"] < 1e-4 and three["mismatch/abs_logprob_diff_max"] < 1e-4
    with pytest.raises(Exception, match="updates_per_batch"):
        GRPOConfig(updates_per_batch=0)
