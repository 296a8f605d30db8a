"""Held-out evaluation during GRPO training: greedy pass@1 and sampled pass@k on the eval split.

An episode passes when its verdict's outcome is 1. Per env of the run (the first
``eval_tasks`` tasks of its ``eval`` split, in a fixed order):

    greedy pass@1 = mean over tasks of [the greedy (top-1) episode passes]
    pass@k        = mean over tasks of 1 - C(n-c, k) / C(n, k)

where n = ``eval_samples`` episodes are sampled per task at the training temperature and c
of them pass: the unbiased estimator of "at least one of k samples passes" (Chen et al. 2021).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from gymhub.registry import make
from gymhub.report.pass_at_k import pass_at_k  # the one estimator (gymhub eval uses it too)
from gymhub.types import Task, TrajectoryGroup


def passed(group: TrajectoryGroup) -> int:
    return sum(1 for t in group.trajectories if t.verdict is not None and t.verdict.outcome >= 1.0)


def eval_tasks(env_id: str, env_kwargs: dict[str, Any], limit: int) -> list[Task]:
    """The first ``limit`` tasks of the env's eval split (all of them at 0), in task-id order."""
    env = make(env_id, **{**env_kwargs, "split": "eval"})
    tasks = sorted(env.tasks, key=lambda t: t.id)
    env.close()
    return tasks[:limit] if limit > 0 else tasks


@contextlib.contextmanager
def greedy(policy: Any) -> Iterator[Any]:
    """The policy with top-k = 1 (argmax decoding) inside the block, as it was after it."""
    saved = policy.top_k
    policy.top_k = 1
    try:
        yield policy
    finally:
        policy.top_k = saved


def evaluate(
    policy: Any,
    tasks_by_env: dict[str, list[Task]],
    *,
    samples: int,
    k: int,
    concurrency: int,
    seed: int,
    env_kwargs: dict[str, Any],
) -> dict[str, float]:
    """``eval/...`` metrics: per env (``eval/<env>/...``) when there are several, and overall."""
    from gymhub._rollout_engine import rollout

    def run(env_id: str, tasks: list[Task], group_size: int) -> list[TrajectoryGroup]:
        eval_kwargs = {**env_kwargs, "split": "eval"}
        return rollout(
            env_id,
            policy,
            tasks=tasks,
            group_size=group_size,
            concurrency=concurrency,
            seed=seed,
            env_kwargs=eval_kwargs,
        )

    rows: dict[str, dict[str, float]] = {}
    counts: dict[str, int] = {}
    for env_id, tasks in tasks_by_env.items():
        if not tasks:
            continue
        with greedy(policy):
            greedy_groups = run(env_id, tasks, 1)
        sampled_groups = run(env_id, tasks, samples)
        outcomes = [t.verdict.outcome for g in greedy_groups for t in g.trajectories if t.verdict is not None]
        rows[env_id] = {
            "greedy_pass@1": sum(passed(g) for g in greedy_groups) / len(greedy_groups),
            "greedy_outcome_mean": sum(outcomes) / max(len(outcomes), 1),
            "pass@1": sum(pass_at_k(samples, passed(g), 1) for g in sampled_groups) / len(sampled_groups),
            f"pass@{k}": sum(pass_at_k(samples, passed(g), k) for g in sampled_groups) / len(sampled_groups),
        }
        counts[env_id] = len(tasks)
    metrics: dict[str, float] = {}
    if len(rows) > 1:
        for env_id, row in rows.items():
            metrics |= {f"eval/{env_id}/{name}": value for name, value in row.items()}
    total = sum(counts.values())
    for name in next(iter(rows.values()), {}):  # overall: the task-weighted mean over envs
        metrics[f"eval/{name}"] = sum(row[name] * counts[e] for e, row in rows.items()) / total
    return metrics
