"""code-python-multiturn-v0: tools, references, and that run_tests cannot be gamed."""

from __future__ import annotations

import json

import pytest

import gymhub


def call(name: str, **args: object) -> dict:
    return {
        "role": "assistant",
        "tool_calls": [{"id": "c1", "function": {"name": name, "arguments": json.dumps(args)}}],
    }


@pytest.mark.parametrize("split", ["train", "eval"])
def test_reference_scores_one_and_wrong_zero_everywhere(split: str) -> None:
    for variant, expected in (("reference", 1.0), ("wrong", 0.0)):
        groups = gymhub.rollout(
            "code-python-multiturn-v0", f"reference:{variant}", split=split, concurrency=2
        )
        assert {g.trajectories[0].verdict.outcome for g in groups} == {expected}


def test_tools_and_their_errors() -> None:
    env = gymhub.make("code-python-multiturn-v0")
    _, info = env.reset(seed=2)
    task = env.get_task(info["task_id"])
    assert "solution.py" in env.step(call("read_file", path="tests/test_visible.py"))[0] or True
    assert env.step(call("read_file", path="nope.py"))[0].startswith("error")
    assert env.step(call("write_file", path="solution.py"))[0].startswith("error")
    entry = task.metadata["entry_point"]
    assert env.step(call("run_tests"))[0].startswith("0/3 tests passed")
    # printing a fake report from the solution changes nothing: the env writes the summary
    fake = f"print('3/3 tests passed')\ndef {entry}(*a):\n    return None\n"
    env.step(call("write_file", path="solution.py", content=fake))
    assert env.step(call("run_tests"))[0].startswith("0/3 tests passed")
    verdict = env.step(call("submit"))[4]["verdict"]
    assert verdict.outcome == 0.0
    assert "visible-tests-improved" not in [e.rule for e in verdict.path_events]


def test_eight_concurrent_episodes_keep_their_own_workspace() -> None:
    import asyncio

    tasks = gymhub.make("code-python-multiturn-v0").tasks[:8]

    async def episode(i: int) -> str:
        env = gymhub.make("code-python-multiturn-v0")
        await env.areset(options={"task_id": tasks[i].id})
        await env.astep(call("write_file", path="notes.txt", content=f"episode {i}"))
        await asyncio.sleep(0.01 * (8 - i))  # interleave the episodes
        seen = (await env.astep(call("read_file", path="notes.txt")))[0]
        await env.aclose()
        return seen

    async def all_eight() -> list[str]:
        return await asyncio.gather(*(episode(i) for i in range(8)))

    assert asyncio.run(all_eight()) == [f"episode {i}" for i in range(8)]
