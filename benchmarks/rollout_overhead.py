"""Framework overhead per step, and code-python-v0 throughput at concurrency 1 and 2.

    python benchmarks/rollout_overhead.py [--episodes 200] [--json out.json]

Prints a table. Figures are medians over repeats within one run; compare the ratios, not the
absolute numbers, on a noisy shared machine.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from typing import Any, ClassVar

from rich.console import Console
from rich.table import Table

import gymhub
from gymhub import Env, EnvReply, Message, Task
from gymhub.envs.toy.letters_env import LettersVerifier


class EndlessEchoEnv(Env):
    """A trivial in-memory env whose steps never end the episode: pure framework cost."""

    default_max_turns: ClassVar[int] = 10**9

    def load_tasks(self) -> list[Task]:
        return [Task.create(self.env_id, "train", "echo", {"letter": "a"})]

    def make_verifier(self) -> LettersVerifier:
        return LettersVerifier()

    async def on_action(self, message: Message) -> EnvReply:
        return EnvReply([Message(role="user", content=message.content)])

    async def final_state(self) -> dict[str, Any]:
        return {"reply": ""}


def step_overhead_us(steps: int) -> float:
    env = EndlessEchoEnv(env_id="bench-echo")
    env.reset(seed=0)
    action = Message(role="assistant", content="hello")
    loop = asyncio.new_event_loop()

    async def run() -> float:
        start = time.perf_counter()
        for _ in range(steps):
            await env.astep(action)
        return (time.perf_counter() - start) / steps * 1e6

    try:
        return statistics.median(loop.run_until_complete(run()) for _ in range(5))
    finally:
        loop.close()


def episode_overhead_us(episodes: int) -> float:
    """reset + one final step + verdict (rules, digest) on toy-letters-v0."""
    env = gymhub.make("toy-letters-v0")
    task_ids = [t.id for t in env.tasks]
    loop = asyncio.new_event_loop()

    async def run() -> float:
        start = time.perf_counter()
        for i in range(episodes):
            await env.areset(options={"task_id": task_ids[i % len(task_ids)]})
            await env.astep("aaaa")
        return (time.perf_counter() - start) / episodes * 1e6

    try:
        return statistics.median(loop.run_until_complete(run()) for _ in range(5))
    finally:
        loop.close()


def rollout_rate(env_id: str, concurrency: int, tasks: int, group_size: int = 1) -> float:
    start = time.perf_counter()
    groups = gymhub.rollout(env_id, "reference", tasks=tasks, group_size=group_size, concurrency=concurrency)
    elapsed = time.perf_counter() - start
    count = sum(len(g.trajectories) for g in groups)
    assert all(t.verdict.outcome == 1.0 for g in groups for t in g.trajectories)
    return count / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--episodes", type=int, default=150)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", dest="json_path")
    args = parser.parse_args()

    rows: dict[str, float] = {}
    rows["step overhead, in-memory env (µs/step)"] = step_overhead_us(2000)
    rows["episode overhead, toy-letters-v0 reset+step+verdict (µs)"] = episode_overhead_us(500)
    rows["toy-letters-v0 rollout, concurrency 1 (traj/s)"] = statistics.median(
        rollout_rate("toy-letters-v0", 1, 78, 4) for _ in range(args.repeats)
    )
    c1, c2 = [], []
    for _ in range(args.repeats):  # interleave, so drift hits both alike
        c1.append(rollout_rate("code-python-v0", 1, args.episodes))
        c2.append(rollout_rate("code-python-v0", 2, args.episodes))
    rows["code-python-v0 reference, concurrency 1 (traj/s)"] = statistics.median(c1)
    rows["code-python-v0 reference, concurrency 2 (traj/s)"] = statistics.median(c2)
    rows["code-python-v0 speed-up, concurrency 2 / 1 (x)"] = statistics.median(
        b / a for a, b in zip(c1, c2, strict=True)
    )

    targets = {
        "step overhead, in-memory env (µs/step)": "< 200",
        "code-python-v0 speed-up, concurrency 2 / 1 (x)": ">= 1.7",
    }
    table = Table("measure", "value", "target", title="gymhub rollout overhead")
    for name, value in rows.items():
        table.add_row(name, f"{value:,.1f}" if value >= 10 else f"{value:.2f}", targets.get(name, ""))
    Console(width=120).print(table)
    if args.json_path:
        with open(args.json_path, "w") as fh:
            json.dump(rows, fh, indent=2)


if __name__ == "__main__":
    main()
