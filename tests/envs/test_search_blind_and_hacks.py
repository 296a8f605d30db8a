"""search-v0 holds against blind policies and the known hacks: no answer is right on more than
3% of a question kind; only the first answer of a message counts; a repeated tool_call_id runs
nothing; the verdict is deterministic."""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

import gymhub
from gymhub._tool_calls import scripted_tool_calls
from gymhub.envs.search.probes import most_frequent_answer
from gymhub.registry import load_probes
from gymhub.types import Task, Verdict
from gymhub.verifiers.checkers.text_match import normalize_answer

ENV_ID = "search-v0"


@pytest.fixture(scope="module")
def env() -> gymhub.Env:
    return gymhub.make(ENV_ID)


def tool_call(call_id: str, name: str, **args: Any) -> dict[str, Any]:
    return {"id": call_id, "function": {"name": name, "arguments": json.dumps(args)}}


def answer(text: str) -> dict[str, Any]:
    return tool_message(tool_call("a", "answer", text=text))


def tool_message(*calls: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": "", "tool_calls": list(calls)}


def play(env: gymhub.Env, task: Task, actions: list[Any]) -> Verdict:
    env.reset(options={"task_id": task.id})
    for i, action in enumerate(actions):
        step = env.finish if i == len(actions) - 1 else env.step
        *_, terminated, truncated, info = step(action)
        if terminated or truncated:
            return info["verdict"]
    raise AssertionError("the episode did not end")


def test_no_answer_is_right_on_more_than_3_percent_of_a_kind(env: gymhub.Env) -> None:
    by_kind: dict[str, Counter[str]] = {}
    for t in env.all_tasks:
        by_kind.setdefault(t.metadata["kind"], Counter())[normalize_answer(t.hidden["answer"])] += 1
    assert len(by_kind) == 8
    for kind, counts in by_kind.items():
        assert max(counts.values()) / sum(counts.values()) <= 0.03, (kind, counts.most_common(2))


def _look_up_then_answer_top_title(env: gymhub.Env, task: Task) -> Verdict:
    """Searches the question, opens the top hit and answers with its title."""
    env.reset(options={"task_id": task.id})
    question = task.prompt.split("\n")[0]
    hits = env.step(scripted_tool_calls([("search", {"query": question, "k": 5})])[0])[0]
    top_id, top_title = hits.split("\n")[0].split(" | ")[:2]
    env.step(scripted_tool_calls([("open", {"doc_id": top_id})])[0])
    return env.step(answer(top_title))[4]["verdict"]


def _random_calls(env: gymhub.Env, task: Task) -> Verdict:
    """Random searches and opens, then a random document's title as the answer."""
    rng = random.Random(task.id)
    docs = env.corpus()
    calls = [
        ("search", {"query": rng.choice(docs)["title"], "k": rng.randint(1, 10)})
        if rng.random() < 0.5
        else ("open", {"doc_id": rng.choice(docs)["id"]})
        for _ in range(4)
    ]
    calls.append(("answer", {"text": rng.choice(docs)["title"]}))
    return play(env, task, scripted_tool_calls(calls))


def _all_of_kind_constant(env: gymhub.Env) -> dict[str, str]:
    counts: dict[str, Counter[str]] = {}
    for t in env.all_tasks:
        counts.setdefault(t.metadata["kind"], Counter())[t.hidden["answer"]] += 1
    return {kind: c.most_common(1)[0][0] for kind, c in counts.items()}


BLIND: dict[str, Callable[[gymhub.Env, Task], Verdict]] = {
    "empty-reply": lambda env, t: play(env, t, [""]),
    "immediate-empty-answer": lambda env, t: play(env, t, [answer("")]),
    "echo-prompt": lambda env, t: play(env, t, [t.prompt]),
    "echo-prompt-as-answer": lambda env, t: play(env, t, [answer(t.prompt)]),
    "claim-success": lambda env, t: play(env, t, ["I found the answer; the task is complete."]),
    "most-frequent-answer-of-the-kind": lambda env, t: play(
        env, t, [answer(_all_of_kind_constant(env)[t.metadata["kind"]])]
    ),
    "random-valid-calls": _random_calls,
    "look-up-then-answer-top-title": _look_up_then_answer_top_title,
}


@pytest.mark.parametrize("name", sorted(BLIND))
def test_blind_policies_score_about_zero(env: gymhub.Env, name: str) -> None:
    tasks = env.all_tasks  # both splits, every kind
    outcomes = [BLIND[name](env, t).outcome for t in tasks]
    assert sum(outcomes) / len(outcomes) <= 0.05, (name, sum(outcomes), len(outcomes))


def test_the_leave_one_out_most_frequent_answer_is_never_right(env: gymhub.Env) -> None:
    assert not any(
        normalize_answer(most_frequent_answer(t)) == normalize_answer(t.hidden["answer"])
        for t in env.all_tasks
    )


def test_only_the_first_answer_of_a_message_counts(env: gymhub.Env) -> None:
    task = env.tasks[0]
    gold = task.hidden["answer"]
    env.reset(options={"task_id": task.id})
    both = tool_message(tool_call("a", "answer", text="unknown"), tool_call("b", "answer", text=gold))
    *_, terminated, _, info = env.step(both)
    assert terminated and info["messages"][1]["content"].startswith("error: not run")
    assert info["verdict"].outcome == 0.0
    assert "calls-after-finish" in {e.rule for e in info["verdict"].path_events}
    # the right answer alone, first, still counts
    assert play(env, task, [answer(gold)]).outcome == 1.0


def test_a_repeated_tool_call_id_runs_nothing(env: gymhub.Env) -> None:
    task = env.tasks[0]
    gold_doc = task.hidden["gold_docs"][0]
    env.reset(options={"task_id": task.id})
    opened, right = (
        tool_call("x", "open", doc_id=gold_doc),
        tool_call("x", "answer", text=task.hidden["answer"]),
    )
    obs, _, terminated, _, _ = env.step(tool_message(opened, right))
    assert not terminated and obs.startswith("error") and "tool_call_id" in obs
    verdict = env.finish(answer("unknown"))[4]["verdict"]
    assert verdict.outcome == 0.0
    rules = {e.rule for e in verdict.path_events}
    assert "invalid-action" in rules and "evidence-retrieved" not in rules  # the open never ran


def test_the_probe_suite_covers_these_hacks() -> None:
    names = {p.name for p in load_probes(ENV_ID)}
    assert {
        "most-frequent-answer",
        "echo-question",
        "claim-success",
        "empty-answer",
        "answer-after-answer",
        "duplicate-call-id",
    } <= names


def test_twenty_replays_give_one_verdict_digest(env: gymhub.Env) -> None:
    for task in env.all_tasks[::90]:
        for actions in (task.hidden["solutions"]["reference"], [answer("unknown")]):
            digests = {play(env, task, actions).digest for _ in range(20)}
            assert len(digests) == 1
