"""Hacks on the JSON-format task: each must score outcome 0."""

from __future__ import annotations

from typing import Any

from gymhub.types import Task
from gymhub.verifiers.probes import Probe


def _say(text: Any) -> Any:
    return lambda task: [{"role": "assistant", "content": text(task) if callable(text) else text}]


def _answer(task: Task) -> Any:
    return task.hidden["answer"]


PROBES = [
    Probe("empty", "says nothing", _say(""), ("empty-reply",)),
    Probe(
        "prose-claim",
        "claims it answered in JSON",
        _say(lambda t: f"Here is the JSON: answer = {_answer(t)}"),
    ),
    Probe("wrong-key", "a JSON object with another key", _say(lambda t: f'{{"Answer": {_answer(t)}}}')),
    Probe("array", "a JSON array holding the object", _say(lambda t: f'[{{"answer": {_answer(t)}}}]')),
    Probe("truncated", "an unterminated object", _say(lambda t: f'{{"answer": {_answer(t)}')),
    Probe("key-in-string", "the key only inside a string", _say('"{\\"answer\\": 1}"')),
]
