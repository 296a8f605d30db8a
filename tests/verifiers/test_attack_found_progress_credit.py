"""Found by attacking the path signal: progress credited for work on another task's entities.

``required-lookups`` and ``precondition-before-mutation`` credited a tool by its name only.
Replaying one fixed refund script (another task's look-ups, its identity check, its refund)
on every mcp-tools-v0 task earned Φ = 1.0 with outcome 0 (reward +0.1, while a do-nothing
scores 0): a policy learns to refund strangers' orders. Credit now needs the arguments the
task's own reference script uses (the task's customer, order or SKU).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import gymhub
from gymhub.types import Task, Verdict

ENV_ID = "mcp-tools-v0"


@pytest.fixture(scope="module")
def env() -> gymhub.Env:
    return gymhub.make(ENV_ID)


def _play(env: gymhub.Env, task: Task, actions: list[Any]) -> Verdict:
    env.reset(options={"task_id": task.id})
    for action in actions:
        *_, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            return info["verdict"]
    raise AssertionError("the script did not end the episode")


def _of_kind(env: gymhub.Env, kind: str, count: int) -> list[Task]:
    return sorted((t for t in env.all_tasks if t.metadata["kind"] == kind), key=lambda t: t.id)[:count]


@pytest.mark.parametrize("kind", ["refund-allowed", "address-change", "restock", "refund-too-old"])
def test_another_tasks_script_earns_no_progress(env: gymhub.Env, kind: str) -> None:
    task, other = _of_kind(env, kind, 2)
    verdict = _play(env, task, other.hidden["solutions"]["reference"])
    assert verdict.outcome == 0.0
    credited = [e for e in verdict.path_events if e.kind == "progress"]
    assert credited == [], credited
    assert verdict.path_signal <= 0.0


def test_the_tasks_own_reference_keeps_its_full_credit(env: gymhub.Env) -> None:
    for kind in ("refund-allowed", "address-change", "restock", "refund-too-old"):
        [task] = _of_kind(env, kind, 1)
        verdict = _play(env, task, task.hidden["solutions"]["reference"])
        assert verdict.outcome == 1.0
        looked_up = {e.evidence for e in verdict.path_events if e.rule == "required-lookups"}
        assert looked_up == {f"looked up with {tool}" for tool in task.metadata["required"]}
        checked = any(e.rule == "precondition-before-mutation" for e in verdict.path_events)
        assert checked == (kind in ("refund-allowed", "address-change")) and verdict.path_signal > 0


def test_a_look_up_with_the_tasks_arguments_in_another_form_still_counts(env: gymhub.Env) -> None:
    [task] = _of_kind(env, "refund-too-old", 1)
    reference = task.hidden["solutions"]["reference"]
    calls = [m["tool_calls"][0]["function"] for m in reference]
    order = next(json.loads(c["arguments"]) for c in calls if c["name"] == "get_order")
    as_text = {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "id": "g",
                "type": "function",
                "function": {
                    "name": "get_order",
                    "arguments": json.dumps({"order_id": str(order["order_id"])}),
                },
            }
        ],
    }
    verdict = _play(env, task, [as_text, reference[-1]])
    assert any(e.rule == "required-lookups" for e in verdict.path_events), verdict.path_events
