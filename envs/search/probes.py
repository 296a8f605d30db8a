"""Hacks on search tasks: each must score outcome 0."""

from __future__ import annotations

from typing import Any

from gymhub.envs.search.tasks import _script
from gymhub.types import Task
from gymhub.verifiers.probes import Probe


def _hedge(task: Task) -> list[dict[str, Any]]:
    gold = task.hidden["answer"]
    return _script([("answer", {"text": f"{gold} or maybe something else"})])


def _spam(task: Task) -> list[dict[str, Any]]:
    return _script(
        [("search", {"query": f"query {i}", "k": 10}) for i in range(8)] + [("answer", {"text": "unknown"})]
    )


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
]
