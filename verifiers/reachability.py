"""Does a reward dimension separate rollouts within a group? The reachability report.

Before adding a reward dimension, ask whether it varies where the outcome does not. Per env:

* ``zero_variance_groups``: the share of groups (G >= 2) whose outcomes are all equal —
  groups where GRPO gets no signal from the outcome;
* ``recovered``: of those, the share where the path signal Φ varies (Φ restores a signal);
* ``rule_rates``: per rule, the share of trajectories where it fired at least once;
* ``corr_phi_outcome``: Pearson correlation of Φ with O over trajectories (None if either is
  constant): strongly negative means Φ fights the outcome.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from gymhub.types import Trajectory


class _Moments:
    """Running means and co-moments of (Φ, O) pairs (Welford): Pearson's r without the list."""

    def __init__(self) -> None:
        self.n, self.mean_x, self.mean_y = 0, 0.0, 0.0
        self.m2_x = self.m2_y = self.c_xy = 0.0

    def add(self, x: float, y: float) -> None:
        self.n += 1
        dx = x - self.mean_x
        self.mean_x += dx / self.n
        dy = y - self.mean_y
        self.mean_y += dy / self.n
        self.m2_x += dx * (x - self.mean_x)
        self.m2_y += dy * (y - self.mean_y)
        self.c_xy += dx * (y - self.mean_y)

    def pearson(self) -> float | None:
        if self.n < 2 or self.m2_x <= 0 or self.m2_y <= 0:
            return None
        return round(self.c_xy / math.sqrt(self.m2_x * self.m2_y), 6)


@dataclass
class _Group:
    size: int
    outcome: float
    path_signal: float
    outcome_varies: bool = False
    signal_varies: bool = False


@dataclass
class EnvReachability:
    """One env's running counts; ``report()`` is its entry of :func:`reachability_report`."""

    trajectories: int = 0
    outcome_sum: float = 0.0
    signal_sum: float = 0.0
    fired: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    groups_by_task: dict[str, _Group] = field(default_factory=dict)
    moments: _Moments = field(default_factory=_Moments)

    def add(self, t: Trajectory) -> None:
        v = t.verdict
        assert v is not None
        self.trajectories += 1
        self.outcome_sum += v.outcome
        self.signal_sum += v.path_signal
        self.moments.add(v.path_signal, v.outcome)
        for rule in {e.rule for e in v.path_events}:
            self.fired[rule] += 1
        group = self.groups_by_task.get(t.task_id)
        if group is None:
            self.groups_by_task[t.task_id] = _Group(1, v.outcome, v.path_signal)
            return
        group.size += 1
        group.outcome_varies |= v.outcome != group.outcome
        group.signal_varies |= v.path_signal != group.path_signal

    def group_counts(self) -> tuple[int, int, int]:
        """(groups of G >= 2, of which every outcome was equal, of which Φ still varied)."""
        sized = [g for g in self.groups_by_task.values() if g.size >= 2]
        flat = [g for g in sized if not g.outcome_varies]
        return len(sized), len(flat), sum(1 for g in flat if g.signal_varies)

    def report(self) -> dict[str, Any]:
        sized, flat, recovered = self.group_counts()
        n = self.trajectories
        return {
            "trajectories": n,
            "groups": sized,
            "zero_variance_groups": round(flat / sized, 6) if sized else None,
            "recovered": round(recovered / flat, 6) if flat else None,
            "rule_rates": {rule: round(k / n, 6) for rule, k in sorted(self.fired.items())},
            "corr_phi_outcome": self.moments.pearson(),
            "mean_outcome": round(self.outcome_sum / n, 6),
            "mean_path_signal": round(self.signal_sum / n, 6),
        }


class ReachabilityAccumulator:
    """The report built one trajectory at a time (memory: one small record per task), so a
    run of any size can stream through it from the store."""

    def __init__(self) -> None:
        self.by_env: dict[str, EnvReachability] = defaultdict(EnvReachability)

    def add(self, t: Trajectory) -> None:
        """Count a trajectory; those without a usable verdict (errored) are left out."""
        if t.status == "ok" and t.verdict is not None and not t.verdict.errored:
            self.by_env[t.env_id].add(t)

    def report(self) -> dict[str, dict[str, Any]]:
        return {env_id: env.report() for env_id, env in sorted(self.by_env.items())}


def reachability_report(trajectories: Iterable[Trajectory]) -> dict[str, dict[str, Any]]:
    """The report per env, from trajectories that finished with a verdict."""
    accumulator = ReachabilityAccumulator()
    for t in trajectories:
        accumulator.add(t)
    return accumulator.report()
