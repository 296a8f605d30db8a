"""Every registered env with the reference policy: reset and step latency, episodes/s.

    python benchmarks/envs.py [--episodes 40]

Medians within one run; compare ratios (concurrency 2 / 1), not absolute numbers.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

from rich.console import Console
from rich.table import Table

import gymhub
from gymhub.env import message_from_openai


async def latencies(env_id: str, episodes: int) -> tuple[float, float]:
    env = gymhub.make(env_id)
    resets, steps = [], []
    for task in env.tasks[:episodes]:
        start = time.perf_counter()
        await env.areset(options={"task_id": task.id})
        resets.append(time.perf_counter() - start)
        for action in task.hidden["solutions"]["reference"]:
            start = time.perf_counter()
            _, _, terminated, truncated, _ = await env.astep(message_from_openai(action))
            steps.append(time.perf_counter() - start)
            if terminated or truncated:
                break
    await env.aclose()
    return statistics.median(resets) * 1000, statistics.median(steps) * 1000


def rate(env_id: str, episodes: int, concurrency: int) -> float:
    start = time.perf_counter()
    groups = gymhub.rollout(env_id, "reference", tasks=episodes, concurrency=concurrency)
    assert all(g.trajectories[0].verdict.outcome == 1.0 for g in groups), env_id
    return len(groups) / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--episodes", type=int, default=40)
    args = parser.parse_args()
    table = Table(
        "env",
        "reset p50 (ms)",
        "step p50 (ms)",
        "episodes/s (c=1)",
        "episodes/s (c=2)",
        "speed-up",
        title="gymhub environments, reference policy",
    )
    for spec in gymhub.list_envs():
        reset_ms, step_ms = asyncio.run(latencies(spec.id, min(args.episodes, 20)))
        rate(spec.id, 2, 1)  # warm caches (task sets, indexes, sandbox pools)
        one, two = rate(spec.id, args.episodes, 1), rate(spec.id, args.episodes, 2)
        table.add_row(
            spec.id, f"{reset_ms:.2f}", f"{step_ms:.2f}", f"{one:.1f}", f"{two:.1f}", f"{two / one:.2f}x"
        )
    Console(width=140).print(table)


if __name__ == "__main__":
    main()
