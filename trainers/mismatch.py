"""The mismatch monitor: how far the sampler's log-probs are from the trainer's.

The failure it catches: a generator whose weights, dtype or kernels differ from the trainer's
silently turns on-policy training off-policy. Every tensor is made on the inputs' device and
no value leaves it until the caller converts the report (one transfer per step).
"""

from __future__ import annotations

from typing import Any


def mismatch_report(trainer: Any, behaviour: Any, mask: Any) -> dict[str, Any]:
    """0-d tensors on the inputs' device, over the sampled (mask 1) tokens; {} when there are none.

    ``trainer``: π_trainer's log-probs of the sampled tokens, before any update; ``behaviour``:
    the sampler's; ``mask``: 1 where the policy sampled the token. All [B, T-1].
    """
    import torch

    if mask.numel() == 0:
        return {}
    m = mask.bool()
    count = m.sum().clamp(min=1)
    delta = torch.where(m, trainer - behaviour, 0.0)  # log π_trainer - log π_sampler
    ratio = torch.exp(delta)  # π_trainer / π_sampler per token
    q = torch.tensor([0.01, 0.5, 0.99], dtype=ratio.dtype, device=ratio.device)
    quantiles = torch.nanquantile(torch.where(m, ratio, torch.nan).flatten(), q)
    return {
        "mismatch/abs_logprob_diff_mean": delta.abs().sum() / count,
        "mismatch/abs_logprob_diff_max": delta.abs().amax(),
        "mismatch/ratio_mean": torch.where(m, ratio, 0.0).sum() / count,
        "mismatch/ratio_p01": quantiles[0],
        "mismatch/ratio_p50": quantiles[1],
        "mismatch/ratio_p99": quantiles[2],
        "mismatch/ratio_max": torch.where(m, ratio, -torch.inf).amax(),
        "mismatch/kl_approx": (ratio - 1 - delta).sum() / count,  # k3 of sampler vs trainer (0 off-mask)
    }
