"""Lenient tool-call parsing from what small models actually emit.

Native tool-call fields are used when the backend returns them. Otherwise a message's text is
searched, in this order, for ``<tool_call>{json}</tool_call>`` blocks (Qwen / Hermes style),
fenced ```json blocks, and a bare JSON object that is the whole message. A candidate counts
only if it is a JSON object naming a tool (``name``, or ``function.name``) with
``arguments`` / ``parameters`` / ``args``. Anything else is a plain message — never an
exception — and the env answers it as text.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

from gymhub.errors import BadAction
from gymhub.types import Message, ToolCall

_TAGGED = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.DOTALL)
_FENCED = re.compile(r"```(?:json|tool_call|tool)?\s*\n(.*?)```", re.DOTALL)
_MAX_SCAN = 200_000  # chars: a huge message is not searched for tool calls


def parse_tool_calls(text: str, tool_names: list[str] | None = None) -> list[ToolCall]:
    """Tool calls found in ``text``; an empty list when there are none.

    With ``tool_names``, a candidate naming any other tool is still returned (so the env can
    answer "unknown tool"), but only if it is tagged or fenced: a bare JSON object counts only
    when it names a known tool, since a bare object is often just an answer.
    """
    if not text or len(text) > _MAX_SCAN:
        return []
    for pattern, strict in ((_TAGGED, False), (_FENCED, True)):
        found = [_to_call(block, i) for i, block in enumerate(pattern.findall(text))]
        calls = [c for c in found if c is not None]
        if strict and tool_names is not None:
            calls = [c for c in calls if c.name in tool_names] or calls
        if calls:
            return calls
    stripped = text.strip()
    if stripped.startswith("{") and stripped.endswith("}"):
        call = _to_call(stripped, 0)
        if call is not None and (tool_names is None or call.name in tool_names):
            return [call]
    return []


def _to_call(block: str, index: int) -> ToolCall | None:
    try:
        data: Any = json.loads(block)
    except (json.JSONDecodeError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    fn: dict[str, Any] = data["function"] if isinstance(data.get("function"), dict) else data
    name = fn.get("name")
    if not isinstance(name, str) or not name:
        return None
    args: Any = next((fn[k] for k in ("arguments", "parameters", "args") if k in fn), {})
    if isinstance(args, str):
        arguments = args  # already JSON text (validated later, by the env)
    else:
        arguments = json.dumps(args, ensure_ascii=False)
    return ToolCall(id=str(data.get("id") or f"call_{index}"), name=name, arguments=arguments)


def duplicate_tool_call_ids(calls: Sequence[ToolCall]) -> list[str]:
    """The ids that more than one call of a message uses, sorted (empty when all are unique)."""
    return sorted(i for i, n in Counter(c.id for c in calls).items() if n > 1)


def reject_duplicate_tool_call_ids(calls: Sequence[ToolCall]) -> None:
    """Raise :class:`BadAction` (nothing of the message runs) when two calls share an id: the
    results could not be told apart, and a forged pairing could pass a failed check as met."""
    duplicates = duplicate_tool_call_ids(calls)
    if duplicates:
        raise BadAction(
            f"tool_call_id {duplicates[0]!r} is used by more than one call in this message; "
            "give each call its own id. Nothing in this message was run."
        )


def tool_call_message(*calls: tuple[str, str, dict[str, Any] | str]) -> Message:
    """An assistant message asking for ``calls``, each ``(call id, tool name, arguments)``: the
    arguments a dict (sent as JSON) or JSON text as it stands (malformed on purpose, in probes).
    The one way a tool-call message is built; ``.to_openai()`` gives the chat-format dict that
    scripted solutions and probes store."""
    return Message(
        role="assistant",
        tool_calls=tuple(
            ToolCall(id=call_id, name=name, arguments=args if isinstance(args, str) else json.dumps(args))
            for call_id, name, args in calls
        ),
    )


def scripted_tool_calls(calls: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """One assistant message per ``(tool, arguments)``: how scripted solutions and probes are written."""
    return [tool_call_message((f"call_{i}", name, args)).to_openai() for i, (name, args) in enumerate(calls)]


def tool_schema(
    name: str, description: str, properties: dict[str, Any] | None = None, required: list[str] | None = None
) -> dict[str, Any]:
    """One tool in the OpenAI tools JSON schema (what every env's ``tools()`` returns)."""
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties or {}, "required": required or []},
        },
    }
