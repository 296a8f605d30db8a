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
from typing import Any

from gymhub.types import Trajectory


def _pearson(xs: list[float], ys: list[float]) -> float | None:
    if len(xs) < 2:
        return None
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    sx = math.sqrt(sum((x - mx) ** 2 for x in xs))
    sy = math.sqrt(sum((y - my) ** 2 for y in ys))
    if sx == 0 or sy == 0:
        return None
    return round(sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / (sx * sy), 6)


def _varies(values: list[float]) -> bool:
    return any(v != values[0] for v in values)


def reachability_report(trajectories: list[Trajectory]) -> dict[str, dict[str, Any]]:
    """The report per env, from trajectories that finished with a verdict."""
    by_env: dict[str, list[Trajectory]] = defaultdict(list)
    for t in trajectories:
        if t.status == "ok" and t.verdict is not None and not t.verdict.errored:
            by_env[t.env_id].append(t)
    report = {}
    for env_id, trajs in sorted(by_env.items()):
        groups: dict[str, list[Trajectory]] = defaultdict(list)
        for t in trajs:
            groups[t.task_id].append(t)
        sized = [g for g in groups.values() if len(g) >= 2]
        flat = [g for g in sized if not _varies([t.verdict.outcome for t in g])]  # type: ignore[union-attr]
        recovered = [g for g in flat if _varies([t.verdict.path_signal for t in g])]  # type: ignore[union-attr]
        fired: dict[str, int] = defaultdict(int)
        for t in trajs:
            for rule in {e.rule for e in t.verdict.path_events}:  # type: ignore[union-attr]
                fired[rule] += 1
        outcomes = [t.verdict.outcome for t in trajs]  # type: ignore[union-attr]
        signals = [t.verdict.path_signal for t in trajs]  # type: ignore[union-attr]
        report[env_id] = {
            "trajectories": len(trajs),
            "groups": len(sized),
            "zero_variance_groups": round(len(flat) / len(sized), 6) if sized else None,
            "recovered": round(len(recovered) / len(flat), 6) if flat else None,
            "rule_rates": {rule: round(n / len(trajs), 6) for rule, n in sorted(fired.items())},
            "corr_phi_outcome": _pearson(signals, outcomes),
            "mean_outcome": round(sum(outcomes) / len(outcomes), 6),
            "mean_path_signal": round(sum(signals) / len(signals), 6),
        }
    return report
