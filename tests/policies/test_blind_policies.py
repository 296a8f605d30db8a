"""Blind policies: selectable by name, deterministic, doing what their names say, and the floor
they hold every env to."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

import gymhub
from gymhub._episodes import run_episode
from gymhub.errors import PolicyError
from gymhub.policies import Policy, make_policy
from gymhub.policies.blind import (
    BLIND_KINDS,
    CLAIM,
    AnswerStatistics,
    BlindPolicy,
    blind_floor,
)
from gymhub.types import Message, Task


def _first_reply(policy: Any, env_id: str, seed: int | None = None) -> tuple[Task, Message, list[dict]]:
    env = gymhub.make(env_id)
    _, info = env.reset(seed=3)
    task = env.get_task(info["task_id"])
    messages = [Message(**m) for m in info["messages"]]
    reply = asyncio.run(policy.for_episode(task).act(messages, info["tools"], seed=seed))
    env.close()
    return task, reply.message, info["tools"]


@pytest.mark.parametrize("kind", sorted(BLIND_KINDS))
def test_every_kind_is_selectable_by_name(kind: str) -> None:
    policy = make_policy(f"blind:{kind}")
    assert isinstance(policy, BlindPolicy) and policy.id == f"blind:{kind}"
    assert isinstance(policy, Policy) and isinstance(policy.for_episode(_task("A", 0)), Policy)


def test_unknown_or_missing_kind_names_the_kinds() -> None:
    for spec in ("blind:psychic", "blind"):
        with pytest.raises(PolicyError, match="random-tools"):
            make_policy(spec)


def test_finish_calls_the_finishing_tool_at_once() -> None:
    _, message, _ = _first_reply(make_policy("blind:finish"), "search-v0")
    [call] = message.tool_calls
    assert call.name == "answer" and json.loads(call.arguments) == {"text": ""}
    _, message, _ = _first_reply(make_policy("blind:finish"), "toy-letters-v0")
    assert message.content == "done" and not message.tool_calls


def test_echo_and_claim_put_their_text_in_the_finishing_tool() -> None:
    task, message, _ = _first_reply(make_policy("blind:echo"), "code-python-v0")
    assert message.content == task.prompt
    assert json.loads(message.tool_calls[0].arguments) == {"code": task.prompt}
    _, message, _ = _first_reply(make_policy("blind:claim"), "search-v0")
    assert json.loads(message.tool_calls[0].arguments) == {"text": CLAIM}


def test_random_tools_are_valid_and_deterministic_given_a_seed() -> None:
    replies = {}
    for seed in (1, 1, 2):
        env = gymhub.make("mcp-tools-v0")
        task = env.tasks[0]
        policy = BlindPolicy("random-tools", seed=seed)
        episode = policy.for_episode(task)
        _, info = env.reset(options={"task_id": task.id})
        schemas = {t["function"]["name"]: t["function"]["parameters"] for t in info["tools"]}
        messages = [Message(**m) for m in info["messages"]]
        calls = []
        for step in range(6):
            message = asyncio.run(episode.act(messages, info["tools"], seed=step)).message
            [call] = message.tool_calls
            arguments = json.loads(call.arguments)
            assert set(schemas[call.name].get("required", [])) <= set(arguments)
            calls.append((call.name, call.arguments))
            messages.append(message)
        replies.setdefault(seed, []).append(calls)
        env.close()
    assert replies[1][0] == replies[1][1]  # same seed, same task: the same calls
    assert replies[2][0] != replies[1][0]  # another seed: other calls
    assert len({name for name, _ in replies[1][0] + replies[2][0]}) > 2


def test_lookups_take_their_arguments_from_the_prompt_then_finish() -> None:
    env = gymhub.make("mcp-tools-v0")
    task = next(t for t in env.tasks if "@" in t.prompt)
    played = env.run_sync(run_episode(env, BlindPolicy("lookups"), task, 0, 0, "test"))
    names = [c.name for m in played.actions() for c in m.tool_calls]
    assert names[0] == "get_policy" and names[-1] == "finish"
    assert "refund_order" not in names and "delete_customer" not in names
    find = next(
        json.loads(c.arguments) for m in played.actions() for c in m.tool_calls if c.name == "find_customer"
    )
    assert find["email"] in task.prompt
    assert played.verdict is not None and played.verdict.outcome == 0.0
    env.close()


def _task(answer: str, index: int, split: str = "train", kind: str = "k") -> Task:
    script = [{"role": "assistant", "content": answer}]
    hidden = {"answer": answer, "solutions": {"reference": script}}
    return Task.create("stats-v0", split, f"question {index}", hidden, {"kind": kind})  # type: ignore[arg-type]


def test_frequent_plays_the_commonest_answer_of_the_type_leaving_the_task_out() -> None:
    tasks = [_task("A", 0), _task("A", 1), _task("B", 2), _task("C", 3), _task("Z", 4, kind="other")]
    stats = AnswerStatistics([*tasks, _task("B", 5, split="eval")])  # eval answers are not counted
    assert [m.content for m in stats.most_frequent(tasks[2])] == ["A"]
    # "other" has one train task: without it nothing is left to play
    assert stats.most_frequent(tasks[4]) == []
    unique = [_task("X", 10), _task("Y", 11)]
    both = AnswerStatistics(unique)
    # each task gets the other's answer, never its own
    assert [both.most_frequent(t)[0].content for t in unique] == ["Y", "X"]


def test_frequent_beats_a_format_only_env_which_is_why_it_is_exempt() -> None:
    env = gymhub.make("toy-json-v0")
    report = blind_floor(env, tasks_per_split=10, kinds=["frequent", "empty"])
    means = {(s.policy, s.split): s.mean_outcome for s in report.scores}
    assert means[("blind:frequent", "eval")] == 1.0  # {"answer": n} is always well formed
    assert means[("blind:empty", "eval")] == 0.0
    assert gymhub.spec("toy-json-v0").outcome == "format-only"
    gymhub.check_env(env)  # exempt by its spec
    env.close()


def test_the_floor_is_deterministic() -> None:
    env = gymhub.make("code-python-v0", test_timeout=1.0)
    first = blind_floor(env, tasks_per_split=3, seed=7)
    second = blind_floor(env, tasks_per_split=3, seed=7)
    env.close()
    assert first.scores == second.scores
    assert {(s.policy, s.split) for s in first.scores} == {
        (f"blind:{k}", split) for k in BLIND_KINDS for split in ("train", "eval")
    }


def test_blind_policies_run_through_the_rollout_engine() -> None:
    groups = gymhub.rollout("search-v0", "blind:lookups", tasks=3)
    assert len(groups) == 3
    for group in groups:
        [trajectory] = group.trajectories
        assert trajectory.policy == "blind:lookups" and trajectory.verdict is not None
        assert trajectory.verdict.outcome == 0.0
        assert trajectory.actions()[0].tool_calls[0].name == "search"
    # without given train tasks, `frequent` counts the registered env's own
    groups = gymhub.rollout("toy-json-v0", "blind:frequent", tasks=3, split="eval")
    assert {g.trajectories[0].verdict.outcome for g in groups} == {1.0}


def test_a_blind_episode_ends_at_its_reply_limit_with_a_verdict() -> None:
    env = gymhub.make("search-v0")  # 12 turns: an empty reply never ends an episode by itself
    task = env.tasks[0]
    full = env.run_sync(run_episode(env, BlindPolicy("empty"), task, 0, 0, "test"))
    cut = env.run_sync(run_episode(env, BlindPolicy("empty"), task, 0, 0, "test", max_replies=3))
    env.close()
    assert len(full.actions()) == env.max_turns > 3
    assert len(cut.actions()) == 3 and cut.truncated and cut.status == "ok"
    assert cut.verdict is not None and cut.verdict.outcome == 0.0
