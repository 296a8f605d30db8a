"""pass@k: the unbiased estimator of "at least one of k samples passes", per task and overall.

For a task with n samples of which c passed (outcome 1)::

    pass@k = 1 - C(n-c, k) / C(n, k)        (Chen et al. 2021)

the chance that k samples drawn without replacement from the n include a pass. The overall
figure is the mean over tasks; its interval is a percentile bootstrap over tasks (tasks are
resampled with replacement, a fixed seed, so the same counts give the same interval).
"""

from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict

BOOTSTRAP_RESAMPLES = 1000
BOOTSTRAP_SEED = 0


def pass_at_k(n: int, c: int, k: int) -> float:
    """1 - C(n-c, k) / C(n, k): the chance that k of the n samples, drawn without
    replacement, include at least one of the c that passed."""
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"pass@k needs 0 <= c <= n and 1 <= k <= n, got n={n} c={c} k={k}")
    if n - c < k:
        return 1.0  # every k-subset holds a pass
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


class TaskPassAtK(BaseModel):
    """One task: its samples, how many passed, and pass@k for every k <= n."""

    model_config = ConfigDict(frozen=True)

    task_id: str
    samples: int
    passed: int
    pass_at: dict[int, float]


class OverallPassAtK(BaseModel):
    """pass@k over tasks: the mean, and a 95 % bootstrap interval over tasks."""

    model_config = ConfigDict(frozen=True)

    k: int
    tasks: int
    mean: float
    low: float
    high: float


class PassAtKTable(BaseModel):
    model_config = ConfigDict(frozen=True)

    max_k: int
    overall: list[OverallPassAtK]
    tasks: list[TaskPassAtK]


def pass_at_k_table(
    counts: dict[str, tuple[int, int]], max_k: int, *, resamples: int = BOOTSTRAP_RESAMPLES
) -> PassAtKTable:
    """pass@k for k = 1..max_k from ``task_id -> (samples, passed)``.

    A task with fewer than k samples has no pass@k and is left out of that k's mean (the
    overall row says over how many tasks it is).
    """
    tasks = [
        TaskPassAtK(
            task_id=task_id,
            samples=n,
            passed=c,
            pass_at={k: round(pass_at_k(n, c, k), 9) for k in range(1, min(n, max_k) + 1)},
        )
        for task_id, (n, c) in sorted(counts.items())
    ]
    overall = []
    for k in range(1, max_k + 1):
        values = [t.pass_at[k] for t in tasks if k in t.pass_at]
        if not values:
            continue
        low, high = bootstrap_interval(values, resamples=resamples)
        overall.append(
            OverallPassAtK(
                k=k, tasks=len(values), mean=round(math.fsum(values) / len(values), 9), low=low, high=high
            )
        )
    return PassAtKTable(max_k=max_k, overall=overall, tasks=tasks)


def bootstrap_interval(
    values: list[float],
    *,
    resamples: int = BOOTSTRAP_RESAMPLES,
    level: float = 0.95,
    seed: int = BOOTSTRAP_SEED,
) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of ``values`` (resampled with replacement)."""
    if not values:
        raise ValueError("a bootstrap interval needs at least one value")
    if len(values) == 1:
        return values[0], values[0]
    import numpy as np  # a dependency of gymnasium; loaded only here

    # A resample's mean depends only on how often it drew each distinct value: draw those
    # counts from a multinomial (cost: resamples x distinct values, not x tasks).
    distinct, counts = np.unique(np.asarray(values, dtype=float), return_counts=True)
    n = len(values)
    draws = np.random.default_rng(seed).multinomial(n, counts / n, size=resamples)
    means = np.sort(draws @ distinct / n)
    tail = (1 - level) / 2
    low = float(means[max(0, math.floor(tail * resamples))])
    high = float(means[min(resamples - 1, math.ceil((1 - tail) * resamples) - 1)])
    return round(low, 9), round(high, 9)
