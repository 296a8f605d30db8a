"""Rules every tool env gets from the Env base: a message whose calls share an id is a bad
action and runs nothing; calls placed after the one that ends the episode do not run."""

from __future__ import annotations

import json

import gymhub


def call(call_id: str, name: str, **arguments: str) -> dict:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


def test_a_repeated_tool_call_id_runs_nothing_and_is_a_bad_action() -> None:
    env = gymhub.make("code-python-multiturn-v0")
    env.reset(seed=0)
    action = {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            call("c1", "write_file", path="solution.py", content="x = 1\n"),
            call("c1", "read_file", path="solution.py"),
        ],
    }
    observation, *_ = env.step(action)
    assert "more than one call" in observation
    observation, *_ = env.step(
        {"role": "assistant", "content": "", "tool_calls": [call("c2", "read_file", path="solution.py")]}
    )
    assert "x = 1" not in observation  # the write in the rejected message never ran
    *_, info = env.finish({"role": "assistant", "content": "", "tool_calls": [call("c3", "submit")]})
    assert "invalid-action" in [e.rule for e in info["verdict"].path_events]


def test_calls_after_the_ending_call_do_not_run() -> None:
    env = gymhub.make("code-python-multiturn-v0")
    env.reset(seed=0)
    task = env.get_task(env._episode.task.id)  # type: ignore[union-attr]
    reference = task.hidden["solutions"]["reference"]
    first = json.loads(reference[0]["tool_calls"][0]["function"]["arguments"])["content"]
    action = {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            call("c1", "write_file", path="solution.py", content=first),
            call("c2", "submit"),
            call("c3", "write_file", path="solution.py", content="def broken(:\n"),
        ],
    }
    _, _, terminated, _, info = env.step(action)
    assert terminated
    assert "not run" in info["messages"][-1]["content"]
    assert info["verdict"].outcome == 1.0  # the write after submit did not replace the solution
