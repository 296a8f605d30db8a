from __future__ import annotations

import pytest

from gymhub._tool_calls import parse_tool_calls

NAMES = ["search", "submit"]


@pytest.mark.parametrize(
    "text",
    [
        '<tool_call>{"name": "search", "arguments": {"q": "x"}}</tool_call>',
        'Let me look.\n<tool_call>\n{"name": "search", "arguments": {"q": "x"}}\n</tool_call>',
        '<tool_call>{"name": "search", "arguments": {"q": "x"}}',  # unterminated tag
        '```json\n{"name": "search", "arguments": {"q": "x"}}\n```',
        '{"name": "search", "arguments": {"q": "x"}}',
        '{"function": {"name": "search", "parameters": {"q": "x"}}}',
        '{"name": "search", "arguments": "{\\"q\\": \\"x\\"}"}',
    ],
)
def test_lenient_formats(text: str) -> None:
    calls = parse_tool_calls(text, NAMES)
    assert len(calls) == 1 and calls[0].name == "search"
    assert calls[0].parsed_arguments() == {"q": "x"}


def test_several_tagged_calls_keep_their_order() -> None:
    text = (
        '<tool_call>{"name": "search", "arguments": {}}</tool_call>'
        '<tool_call>{"name": "submit", "arguments": {"code": "1"}}</tool_call>'
    )
    assert [c.name for c in parse_tool_calls(text, NAMES)] == ["search", "submit"]


@pytest.mark.parametrize(
    "text",
    [
        "just an answer",
        "",
        "```python\nprint(1)\n```",
        '{"answer": 42}',
        "{not json}",
        "<tool_call>[1, 2]</tool_call>",
        '{"name": "other_tool", "arguments": {}}',
        "{" * 5000,
    ],
)
def test_anything_else_is_a_plain_message(text: str) -> None:
    assert parse_tool_calls(text, NAMES) == []


def test_tagged_unknown_tool_is_returned_for_the_env_to_reject() -> None:
    calls = parse_tool_calls('<tool_call>{"name": "rm", "arguments": {}}</tool_call>', NAMES)
    assert [c.name for c in calls] == ["rm"]
