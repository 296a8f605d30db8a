"""Splits follow the task's content: no content is in train and eval, in one env or across envs."""

from __future__ import annotations

from collections import defaultdict

import pytest

import gymhub
from gymhub.types import content_split, task_content_key

ALL_ENVS = [s.id for s in gymhub.list_envs()]


@pytest.fixture(scope="module")
def tasks_by_env() -> dict[str, list[gymhub.Task]]:
    found = {}
    for env_id in ALL_ENVS:
        env = gymhub.make(env_id)
        found[env_id] = env.all_tasks
        env.close()
    return found


def test_no_content_is_in_train_and_eval_across_all_registered_envs(
    tasks_by_env: dict[str, list[gymhub.Task]],
) -> None:
    where: dict[str, set[tuple[str, str]]] = defaultdict(set)
    for env_id, tasks in tasks_by_env.items():
        for task in tasks:
            where[task_content_key(task.hidden)].add((env_id, task.split))
    overlap = {key: sorted(places) for key, places in where.items() if len({s for _, s in places}) > 1}
    assert overlap == {}, f"{len(overlap)} task contents are in train somewhere and eval elsewhere"


def test_every_split_is_the_function_of_the_content(tasks_by_env: dict[str, list[gymhub.Task]]) -> None:
    for env_id, tasks in tasks_by_env.items():
        wrong = [t.id for t in tasks if t.split != content_split(t.hidden)]
        assert wrong == [], f"{env_id}: {len(wrong)} tasks are not split by content"


def test_the_code_envs_share_their_tasks_and_their_splits(tasks_by_env: dict[str, list[gymhub.Task]]) -> None:
    def by_split(env_id: str) -> dict[str, set[str]]:
        out: dict[str, set[str]] = {"train": set(), "eval": set()}
        for task in tasks_by_env[env_id]:
            out[task.split].add(task_content_key(task.hidden))
        return out

    single, multi = by_split("code-python-v0"), by_split("code-python-multiturn-v0")
    assert single["eval"] and single == multi  # the same hidden tests, the same split in both


def test_eval_is_about_one_in_five(tasks_by_env: dict[str, list[gymhub.Task]]) -> None:
    for env_id, tasks in tasks_by_env.items():
        contents = {task_content_key(t.hidden): t.split for t in tasks}
        held_out = sum(split == "eval" for split in contents.values()) / len(contents)
        assert 0 < held_out < 1, f"{env_id}: both splits must have tasks"
        if len(contents) >= 100:  # enough distinct contents for the share to settle near 1/5
            assert 0.12 <= held_out <= 0.28, f"{env_id}: {held_out:.2f} of the contents are eval"


def test_the_split_ignores_the_solution_scripts_and_is_pinned() -> None:
    tests = {"tests": [{"args": [1], "expected": 2}]}
    as_text = {**tests, "solutions": {"reference": [{"role": "assistant", "content": "x"}]}}
    as_tools = {**tests, "solutions": {"reference": [{"role": "assistant", "content": "", "tool_calls": []}]}}
    assert task_content_key(as_text) == task_content_key(as_tools) == task_content_key(tests)
    # the same on every machine and in every release: changing it reshuffles every task set
    assert task_content_key(tests) == "697af841dc832b8d9826943d73cb4561a4566273cfe37c848e79d8b2708ff4c3"
    splits = [content_split({"tests": [{"args": [i], "expected": 2}]}) for i in range(12)]
    assert [i for i, s in enumerate(splits) if s == "eval"] == [6, 10]
