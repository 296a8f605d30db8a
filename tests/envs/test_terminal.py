"""terminal-v0: the task set, references, isolation between episodes, tools."""

from __future__ import annotations

import asyncio
import json

import pytest

import gymhub
from gymhub.env import Env


@pytest.fixture(scope="module")
def env() -> Env:
    return gymhub.make("terminal-v0")


def test_task_set(env: Env) -> None:
    tasks = env.all_tasks
    assert len(tasks) >= 300
    kinds = {t.metadata["kind"] for t in tasks}
    assert kinds == {
        "count-errors",
        "unique-values",
        "permissions",
        "archive",
        "git-commit",
        "fix-config",
        "write-script",
    }
    assert {t.metadata["difficulty"] for t in tasks} == {1, 2, 3}
    train = {t.id for t in tasks if t.split == "train"}
    evals = {t.id for t in tasks if t.split == "eval"}
    assert train and evals and not train & evals


@pytest.mark.parametrize("split", ["train", "eval"])
def test_reference_solves_every_task(split: str) -> None:
    groups = gymhub.rollout("terminal-v0", "reference", split=split, concurrency=2)
    failures = [
        (g.task_id, g.trajectories[0].error or g.trajectories[0].verdict.details)
        for g in groups
        if g.trajectories[0].verdict is None or g.trajectories[0].verdict.outcome != 1.0
    ]
    assert failures == []
    assert len(groups) == len(gymhub.make("terminal-v0", split=split).tasks)


def test_hidden_checks_never_enter_the_sandbox(env: Env) -> None:
    task = next(t for t in env.tasks if t.metadata["kind"] == "count-errors")
    env.reset(options={"task_id": task.id})
    listing = env.step(
        {
            "role": "assistant",
            "tool_calls": [
                {
                    "id": "c",
                    "function": {
                        "name": "bash",
                        "arguments": json.dumps({"command": "ls -laR; cat input/*; env; ls -la /tmp"}),
                    },
                }
            ],
        }
    )[0]
    expected = task.hidden["checks"][0]["content"].strip()
    assert "count.txt" not in listing and "checks" not in listing
    assert f"output/count.txt\n{expected}" not in listing


def test_bash_errors_and_timeouts_are_observations() -> None:
    env = gymhub.make("terminal-v0", command_timeout=1.0)
    env.reset(seed=3)
    obs = env.step(
        {
            "role": "assistant",
            "tool_calls": [
                {"id": "c", "function": {"name": "bash", "arguments": json.dumps({"command": "sleep 30"})}}
            ],
        }
    )[0]
    assert "timed out" in obs
    obs = env.step(
        {
            "role": "assistant",
            "tool_calls": [
                {"id": "c", "function": {"name": "bash", "arguments": json.dumps({"command": "  "})}}
            ],
        }
    )[0]
    assert obs.startswith("error")
    obs = env.step(
        {
            "role": "assistant",
            "tool_calls": [
                {
                    "id": "c",
                    "function": {
                        "name": "bash",
                        "arguments": json.dumps({"command": "yes | head -c 5000000"}),
                    },
                }
            ],
        }
    )[0]
    assert len(obs) < 20_000
    env.close()


def test_eight_concurrent_episodes_are_isolated() -> None:
    tasks = gymhub.make("terminal-v0").tasks[:8]

    async def episode(i: int) -> str:
        env = gymhub.make("terminal-v0")
        await env.areset(options={"task_id": tasks[i].id})
        cmd = f"echo {i} > mine-{i}.txt; sleep 0.5 & sleep 0.2; ls; ps -eo comm= | grep -cx sleep"
        obs = (
            await env.astep(
                {
                    "role": "assistant",
                    "tool_calls": [
                        {"id": "c", "function": {"name": "bash", "arguments": json.dumps({"command": cmd})}}
                    ],
                }
            )
        )[0]
        await env.aclose()
        return obs

    async def all_eight() -> list[str]:
        return await asyncio.gather(*(episode(i) for i in range(8)))

    for i, obs in enumerate(asyncio.run(all_eight())):
        mine = [w for w in obs.split() if w.startswith("mine-")]
        assert mine == [f"mine-{i}.txt"], obs
        assert "\n1\n" in obs  # sees its own background process only


def test_rewriting_the_inputs_never_pays_found_by_the_verifier_benchmark() -> None:
    # Once, a count task whose answer was 0 let "truncate the inputs, write 0" score 1:
    # count tasks now always have something to count, and inputs must end unchanged.
    tasks = [
        t
        for t in gymhub.make("terminal-v0").all_tasks
        if t.metadata["kind"] in ("count-errors", "unique-values")
    ]
    assert all(t.hidden["checks"][0].get("content", "").strip() != "0" for t in tasks)
    groups = gymhub.rollout("terminal-v0", "reference:rewrite-inputs", tasks=tasks, concurrency=2)
    assert {g.trajectories[0].verdict.outcome for g in groups} == {0.0}
