"""What the path signal (RLVP) does during GRPO training, step by step.

Per step, from the step's groups:

* ``rlvp/flat_outcome_groups``: the share of groups whose outcomes were all equal (all pass or
  all fail): the groups outcome-only GRPO learns nothing from;
* ``rlvp/rescued_groups``: the share of *those* where the path signal still gave non-zero
  advantages (0 when no group was flat);
* ``rlvp/violations_per_episode`` and ``rlvp/violations_per_episode/<rule>``: penalty events
  per episode, in all and per rule (a rule that did not fire in a step has no key there,
  unless it is named in ``known_rules``: read a missing key as 0);
* ``rlvp/progress_per_episode``: progress credits (events) per episode;
* ``rlvp/success``: the share of episodes with outcome 1.

:func:`steps_to_success` reads a run's history for the first step where the success rate (a
moving mean) reaches a threshold; :func:`draw_rlvp` draws the shares and violations on a
matplotlib axis (the reward curve's second panel).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from gymhub.types import TrajectoryGroup, Verdict

PREFIX = "rlvp/"


def _verdicts(groups: Sequence[TrajectoryGroup]) -> list[Verdict]:
    return [t.verdict for g in groups for t in g.trajectories if t.verdict is not None]


def rlvp_stats(groups: Sequence[TrajectoryGroup], known_rules: Iterable[str] = ()) -> dict[str, float]:
    """The step's ``rlvp/...`` figures (see the module docstring); ``{}`` for no episodes."""
    verdicts = _verdicts(groups)
    if not verdicts:
        return {}
    flat = [g for g in groups if len({t.verdict.outcome if t.verdict else 0.0 for t in g.trajectories}) == 1]
    rescued = [g for g in flat if any(a != 0 for a in g.advantages)]
    per_rule: dict[str, int] = dict.fromkeys(known_rules, 0)
    progress = 0
    for v in verdicts:
        for e in v.path_events:
            if e.kind == "penalty":
                per_rule[e.rule] = per_rule.get(e.rule, 0) + 1
            else:
                progress += 1
    n = len(verdicts)
    stats = {
        f"{PREFIX}flat_outcome_groups": len(flat) / len(groups),
        f"{PREFIX}rescued_groups": len(rescued) / len(flat) if flat else 0.0,
        f"{PREFIX}violations_per_episode": sum(per_rule.values()) / n,
        f"{PREFIX}progress_per_episode": progress / n,
        f"{PREFIX}success": sum(v.outcome >= 1.0 for v in verdicts) / n,
    }
    stats |= {f"{PREFIX}violations_per_episode/{r}": k / n for r, k in sorted(per_rule.items())}
    return stats


def penalty_rules_seen(history: Iterable[dict[str, Any]]) -> list[str]:
    """The penalty rules that fired in any step of ``history``."""
    key = f"{PREFIX}violations_per_episode/"
    return sorted({k[len(key) :] for m in history for k in m if k.startswith(key)})


def moving_mean(values: Sequence[float], window: int) -> list[float]:
    """The mean of the last ``window`` values at each position (fewer at the start)."""
    out = []
    for i in range(len(values)):
        part = values[max(0, i - window + 1) : i + 1]
        out.append(sum(part) / len(part))
    return out


def steps_to_success(
    history: Sequence[dict[str, Any]], threshold: float = 0.9, window: int = 3, key: str = "rlvp/success"
) -> int | None:
    """The first training step at which the moving mean of ``key`` over ``window`` steps
    reaches ``threshold``; None if it never does."""
    train = [m for m in history if key in m]
    smooth = moving_mean([m[key] for m in train], window)
    for m, s in zip(train, smooth, strict=True):
        if s >= threshold:
            return int(m["step"])
    return None


def has_rlvp_figures(history: Iterable[dict[str, Any]]) -> bool:
    return any(f"{PREFIX}flat_outcome_groups" in m for m in history)


def draw_rlvp(ax: Any, history: Sequence[dict[str, Any]]) -> bool:
    """Draw the flat-group shares and violations per episode (per rule) on ``ax``; False when
    the history has no ``rlvp/`` figures."""
    train = [m for m in history if f"{PREFIX}flat_outcome_groups" in m]
    if not train:
        return False
    steps = [m["step"] for m in train]
    ax.plot(steps, [m[f"{PREFIX}flat_outcome_groups"] for m in train], label="flat-outcome groups")
    ax.plot(steps, [m[f"{PREFIX}rescued_groups"] for m in train], label="  ... with path advantages")
    for rule in penalty_rules_seen(train):
        key = f"{PREFIX}violations_per_episode/{rule}"
        ax.plot(steps, [m.get(key, 0.0) for m in train], "--", label=f"{rule} / episode")
    ax.set_xlabel("step")
    ax.set_ylabel("share / count")
    ax.legend(fontsize="small")
    return True
