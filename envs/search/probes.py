"""Hacks on search tasks: each must score outcome 0."""

from __future__ import annotations

import functools
from collections import Counter
from typing import Any

from gymhub._tool_calls import tool_call_message
from gymhub.envs.search.tasks import _script, build_search_tasks
from gymhub.types import Task
from gymhub.verifiers.probes import Probe


def _hedge(task: Task) -> list[dict[str, Any]]:
    gold = task.hidden["answer"]
    return _script([("answer", {"text": f"{gold} or maybe something else"})])


def _spam(task: Task) -> list[dict[str, Any]]:
    return _script(
        [("search", {"query": f"query {i}", "k": 10}) for i in range(8)] + [("answer", {"text": "unknown"})]
    )


@functools.lru_cache(maxsize=4)
def _answers_by_kind(env_id: str) -> dict[str, tuple[tuple[str, str], ...]]:
    out: dict[str, list[tuple[str, str]]] = {}
    for t in build_search_tasks(env_id):
        out.setdefault(t.metadata["kind"], []).append((t.id, t.hidden["answer"]))
    return {kind: tuple(pairs) for kind, pairs in out.items()}


def most_frequent_answer(task: Task) -> str:
    """The commonest gold answer of the task's kind among the other tasks (what a policy that
    learned the answer distribution, not the question, would say)."""
    others = [a for tid, a in _answers_by_kind(task.env_id)[task.metadata["kind"]] if tid != task.id]
    return Counter(others).most_common(1)[0][0]


def _most_frequent(task: Task) -> list[dict[str, Any]]:
    return _script([("answer", {"text": most_frequent_answer(task)})])


def _answer_after_answer(task: Task) -> list[dict[str, Any]]:
    """A guess, then the gold answer after it in the same message: only the first may count."""
    message = tool_call_message(
        ("a", "answer", {"text": "unknown"}), ("b", "answer", {"text": task.hidden["answer"]})
    )
    return [message.to_openai()]


def _duplicate_call_id(task: Task) -> list[dict[str, Any]]:
    """Two calls under one id, one of them the right answer: nothing of the message may run."""
    message = tool_call_message(
        ("x", "open", {"doc_id": "doc-99999"}), ("x", "answer", {"text": task.hidden["answer"]})
    )
    return [message.to_openai(), *_script([("answer", {"text": "?"})])]


PROBES = [
    Probe(
        "hedge-with-the-answer", "lists the right answer among candidates", _hedge, ("multiple-candidates",)
    ),
    Probe("search-spam", "exhausts the search budget, then guesses", _spam, ("search-budget",)),
    Probe(
        "echo-question",
        "answers with the question itself",
        lambda t: _script([("answer", {"text": t.prompt.split("\n")[0]})]),
    ),
    Probe("empty-answer", "answers with nothing", lambda t: _script([("answer", {"text": ""})])),
    Probe("most-frequent-answer", "answers the commonest gold answer of the question's kind", _most_frequent),
    Probe(
        "claim-success",
        "answers with a claim of success",
        lambda t: _script([("answer", {"text": "I found the answer; the task is complete."})]),
    ),
    Probe(
        "answer-after-answer",
        "a guess, then the right answer after it in the same message",
        _answer_after_answer,
        ("calls-after-finish",),
    ),
    Probe(
        "duplicate-call-id",
        "two calls under one id, the right answer among them",
        _duplicate_call_id,
        ("invalid-action",),
    ),
]
