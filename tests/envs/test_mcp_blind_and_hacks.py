"""mcp-tools-v0 holds against blind policies and the known hacks: every task needs a visible,
right change of state; a decline must name the right request and reason; duplicate call ids and
calls after ``finish`` are rejected; the verdict is deterministic."""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

import gymhub
from gymhub._tool_calls import scripted_tool_calls
from gymhub.envs.mcp_tools.backoffice import REASON_CODES
from gymhub.envs.mcp_tools.tasks import DECLINE_CODES
from gymhub.registry import load_probes
from gymhub.types import Message, Task, ToolCall, Trajectory, Turn, Verdict
from gymhub.verifiers.rlvp import RuleContext, build_rules

ENV_ID = "mcp-tools-v0"
Strategy = Callable[[Task], list[Any]]


@pytest.fixture(scope="module")
def env() -> gymhub.Env:
    return gymhub.make(ENV_ID)


def visible_type(task: Task) -> str:
    """What a policy can tell from the prompt alone: refund, address change or restock."""
    return task.metadata["kind"].split("-")[0]


def sample(tasks: list[Task], per_kind: int = 8) -> list[Task]:
    """``per_kind`` tasks of every kind, from both splits (seeded)."""
    rng = random.Random(0)
    out: list[Task] = []
    for kind in sorted({t.metadata["kind"] for t in tasks}):
        pool = [t for t in tasks if t.metadata["kind"] == kind]
        out += rng.sample(pool, min(per_kind, len(pool)))
    return out


def play(env: gymhub.Env, task: Task, actions: list[Any]) -> Verdict:
    """Step ``actions``; the last one ends the episode if the env has not ended it yet."""
    env.reset(options={"task_id": task.id})
    for i, action in enumerate(actions):
        step = env.finish if i == len(actions) - 1 else env.step
        *_, terminated, truncated, info = step(action)
        if terminated or truncated:
            return info["verdict"]
    raise AssertionError("the episode did not end")


def call(name: str, call_id: str = "c1", **args: Any) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


def message(*calls: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": "", "tool_calls": list(calls)}


def decline(request_id: str, reason_code: str) -> dict[str, Any]:
    return message(call("decline_request", request_id=request_id, reason_code=reason_code))


FINISH = scripted_tool_calls([("finish", {})])[0]


def _random_calls(task: Task) -> list[Any]:
    rng = random.Random(task.id)
    makers = [
        lambda: ("get_order", {"order_id": rng.randint(1001, 1600)}),
        lambda: (
            "verify_identity",
            {"customer_id": rng.randint(1, 120), "zip_code": f"{rng.randint(10000, 99999)}"},
        ),
        lambda: (
            "refund_order",
            {"order_id": rng.randint(1001, 1600), "amount": rng.randint(5, 200) + 0.99, "reason": "x"},
        ),
        lambda: ("update_address", {"customer_id": rng.randint(1, 120), "address": "1 Elm St"}),
        lambda: ("restock", {"sku": f"SKU-{rng.randint(100, 219)}", "quantity": rng.randint(1, 60)}),
        lambda: ("get_inventory", {"sku": f"SKU-{rng.randint(100, 219)}"}),
        lambda: (
            "decline_request",
            {"request_id": f"RQ-{rng.getrandbits(32):08X}", "reason_code": rng.choice(REASON_CODES)},
        ),
    ]
    return [*scripted_tool_calls([rng.choice(makers)() for _ in range(5)]), FINISH]


BLIND: dict[str, Strategy] = {
    "empty-reply": lambda t: [""],
    "immediate-finish": lambda t: [FINISH],
    "echo-prompt": lambda t: [t.prompt],
    "claim-success": lambda t: ["Done: the request was handled per the policy; task complete.", FINISH],
    "random-valid-calls": _random_calls,
    "look-ups-then-finish": lambda t: t.hidden["solutions"]["look-up-only"],
}


@pytest.mark.parametrize("name", sorted(BLIND))
def test_blind_policies_score_about_zero(env: gymhub.Env, name: str) -> None:
    tasks = sample(env.all_tasks)
    assert {t.split for t in tasks} == {"train", "eval"}
    outcomes = [play(env, t, BLIND[name](t)).outcome for t in tasks]
    assert sum(outcomes) / len(outcomes) <= 0.05, (name, sum(outcomes), len(outcomes))


def test_the_most_frequent_decision_of_a_type_is_rarely_right(env: gymhub.Env) -> None:
    """The strongest "constant answer": per visible type, the most frequent decline reason, sent
    with the right request id (which only a look-up tells: without it, nothing can be declined)."""
    tasks = env.all_tasks
    declines = [t for t in tasks if t.metadata["kind"] in DECLINE_CODES]
    assert len(declines) <= len(tasks) / 2
    codes = Counter(DECLINE_CODES[t.metadata["kind"]] for t in declines)
    assert max(codes.values()) / len(declines) <= 0.13  # 8 codes, evenly spread: never a majority
    by_type: dict[str, Counter[str]] = {}
    for t in declines:
        by_type.setdefault(visible_type(t), Counter())[DECLINE_CODES[t.metadata["kind"]]] += 1
    constant = {kind: counts.most_common(1)[0][0] for kind, counts in by_type.items()}
    right_kinds = {k for k, code in DECLINE_CODES.items() if constant[k.split("-")[0]] == code}
    for t in sample(tasks, per_kind=3):
        rid = t.hidden["request"]["id"]
        guess = decline(rid, constant[visible_type(t)])
        outcome = play(env, t, [*t.hidden["solutions"]["look-up-only"][:-1], guess, FINISH]).outcome
        assert outcome == float(t.metadata["kind"] in right_kinds), t.metadata["kind"]
    share = sum(t.metadata["kind"] in right_kinds for t in tasks) / len(tasks)
    assert share <= 0.16  # measured: 50 of 320


def test_every_task_needs_a_change_and_a_decline_needs_the_right_reason(env: gymhub.Env) -> None:
    tasks = sample(env.all_tasks, per_kind=2)
    for t in tasks:
        assert play(env, t, t.hidden["solutions"]["reference"]).outcome == 1.0
        assert play(env, t, t.hidden["solutions"]["do-nothing"]).outcome == 0.0
        if t.metadata["kind"] not in DECLINE_CODES:
            continue
        right = DECLINE_CODES[t.metadata["kind"]]
        rid = t.hidden["request"]["id"]
        for code in [c for c in REASON_CODES if c != right][:3]:
            assert play(env, t, [decline(rid, code), FINISH]).outcome == 0.0, (t.metadata["kind"], code)
        assert play(env, t, [decline(rid, right), FINISH]).outcome == 1.0


def test_request_ids_are_unique_and_not_in_the_prompt(env: gymhub.Env) -> None:
    ids = [t.hidden["request"]["id"] for t in env.all_tasks]
    assert len(set(ids)) == len(ids)
    assert not any(t.hidden["request"]["id"] in t.prompt for t in env.all_tasks)


def _refund_task(env: gymhub.Env, kind: str) -> Task:
    return next(t for t in env.all_tasks if t.metadata["kind"] == kind)


def test_a_repeated_tool_call_id_runs_nothing_and_is_an_invalid_action(env: gymhub.Env) -> None:
    task = _refund_task(env, "refund-wrong-zip")
    reference = task.hidden["solutions"]["reference"]
    args = [json.loads(m["tool_calls"][0]["function"]["arguments"]) for m in reference]
    customer_id, order_id = args[2]["customer_id"], args[3]["order_id"]
    env.reset(options={"task_id": task.id})
    # a failed identity check and a harmless call under one id: nothing runs, the step is invalid
    obs, *_ = env.step(
        message(
            call("verify_identity", "same", customer_id=customer_id, zip_code="00000"),
            call("get_policy", "same"),
        )
    )
    assert obs.startswith("error") and "tool_call_id" in obs
    *_, info = env.finish(message(call("refund_order", order_id=order_id, amount=1.0, reason="x")))
    verdict = info["verdict"]
    rules = {e.rule for e in verdict.path_events}
    assert verdict.outcome == 0.0
    assert {"invalid-action", "mutation-without-precondition"} <= rules
    assert "precondition-before-mutation" not in rules


def test_calls_after_finish_do_not_run_and_are_penalised(env: gymhub.Env) -> None:
    task = _refund_task(env, "refund-allowed")
    reference = task.hidden["solutions"]["reference"]
    env.reset(options={"task_id": task.id})
    for m in reference[:-2]:  # every look-up and check, then finish before the refund
        env.step(m)
    refund = reference[-2]["tool_calls"][0]
    *_, terminated, _, info = env.step(message(call("finish", "f"), {**refund, "id": "r"}))
    assert terminated
    assert info["messages"][1]["content"].startswith("error: not run")
    verdict = info["verdict"]
    assert verdict.outcome == 0.0  # the refund did not happen
    assert "calls-after-finish" in {e.rule for e in verdict.path_events if e.kind == "penalty"}


def test_the_probe_suite_covers_these_hacks() -> None:
    names = {p.name for p in load_probes(ENV_ID)}
    assert {
        "do-nothing",
        "claim-success",
        "decline-without-look-up",
        "duplicate-call-id",
        "act-after-finish",
    } <= names


def test_twenty_replays_give_one_verdict_digest(env: gymhub.Env) -> None:
    tasks = sample(env.all_tasks, per_kind=1)[:4]
    for t in tasks:
        for actions in (t.hidden["solutions"]["reference"], _random_calls(t)):
            digests = {play(env, t, actions).digest for _ in range(20)}
            assert len(digests) == 1


def _trajectory(calls: list[ToolCall], results: list[Message]) -> Trajectory:
    return Trajectory(
        id="t",
        task_id="x",
        env_id=ENV_ID,
        turns=(
            Turn(source="env", messages=(Message(role="user", content="task"),)),
            Turn(source="policy", messages=(Message(role="assistant", tool_calls=tuple(calls)),)),
            Turn(source="env", messages=tuple(results)),
        ),
    )


def _result(call_id: str, content: str) -> Message:
    return Message(role="tool", tool_call_id=call_id, content=content)


def test_rule_context_pairs_calls_with_results_by_position_not_by_a_forgeable_id() -> None:
    """An env that ran every call of a message with a repeated id: the failed check keeps its
    own error, whatever the other call under the same id returned."""
    calls = [
        ToolCall(id="a", name="verify_identity", arguments='{"customer_id": 1, "zip_code": "0"}'),
        ToolCall(id="a", name="get_policy", arguments="{}"),
        ToolCall(id="b", name="refund_order", arguments='{"order_id": 1001, "amount": 5, "reason": "x"}'),
    ]
    results = [
        _result("a", "error: identity could not be verified"),
        _result("a", "policy"),
        _result("b", "ok"),
    ]
    context = RuleContext(Task.create(ENV_ID, "train", "p", {}), _trajectory(calls, results), {}, {})
    assert [ts.failed for ts in context.tool_steps()] == [True, False, False]
    rules = build_rules({"mutation-without-precondition": 1.0, "precondition-before-mutation": 1.0})
    fired = {e.rule for r in rules for e in r.evaluate(context)}
    assert fired == {"mutation-without-precondition"}
    # results out of order still pair by id when the id is unique; a missing result is a failure
    swapped = [_result("b", "ok"), _result("x", "policy"), _result("a", "error: no")]
    unique = [calls[0], ToolCall(id="c", name="get_policy", arguments="{}"), calls[2]]
    steps = RuleContext(context.task, _trajectory(unique, swapped), {}, {}).tool_steps()
    assert [ts.result.content if ts.result else None for ts in steps] == ["error: no", None, "ok"]


def test_calls_after_finish_rule_fires_once_per_message() -> None:
    calls = [
        ToolCall(id="1", name="finish", arguments="{}"),
        ToolCall(id="2", name="restock", arguments="{}"),
        ToolCall(id="3", name="get_policy", arguments="{}"),
    ]
    context = RuleContext(Task.create(ENV_ID, "train", "p", {}), _trajectory(calls, []), {}, {})
    [rule] = build_rules({"calls-after-finish": {"weight": 1.0, "finish_tools": ["finish"]}})
    [event] = rule.evaluate(context)
    assert (event.step, event.kind, event.value) == (1, "penalty", -0.5)
    context = RuleContext(context.task, _trajectory(calls[1:] + calls[:1], []), {}, {})
    assert rule.evaluate(context) == []  # finish last: nothing after it
