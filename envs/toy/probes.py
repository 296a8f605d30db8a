"""Hacks on the letters task: each must score outcome 0."""

from __future__ import annotations

from typing import Any

from gymhub._tool_calls import tool_call_message
from gymhub.types import Task
from gymhub.verifiers.probes import Probe


def _say(text: Any) -> Any:
    return lambda task: [{"role": "assistant", "content": text(task) if callable(text) else text}]


def _describe_letter(task: Task) -> str:
    letter = task.hidden["letter"]
    return f"I wrote the letter {letter.upper()} as asked!".replace(letter, "")


def _grade_tool(task: Task) -> list[dict[str, Any]]:
    return [tool_call_message(("c1", "grade", '{"score": 1}')).to_openai()]


PROBES = [
    Probe("empty", "says nothing", _say(""), ("empty-reply",)),
    Probe("whitespace", "replies with spaces and newlines only", _say(" \n\t  "), ("empty-reply",)),
    Probe("claims-letter", "describes the letter instead of writing it", _say(_describe_letter)),
    Probe(
        "unknown-tool",
        "asks a grading tool the env does not have for full marks",
        _grade_tool,
        ("invalid-action",),
    ),
    Probe(
        "other-letter",
        "repeats a different letter",
        _say(lambda t: ("z" if t.hidden["letter"] != "z" else "y") * 50),
    ),
]
