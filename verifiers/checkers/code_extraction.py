"""Which code a message submits: a ``write_file`` of a Python source (not a test), a ``submit``
tool call's ``code``, else the last fenced Python block, else the whole text. One function,
shared by code envs and code rules."""

from __future__ import annotations

import re

from gymhub.types import Message

_FENCE = re.compile(r"```(?:python|py|python3)?[ \t]*\n(.*?)```", re.DOTALL)


def extract_code(message: Message) -> str | None:
    """The code submitted by ``message``, or None when it submits nothing."""
    for call in message.tool_calls:
        if call.name == "write_file":
            try:
                args = call.parsed_arguments()
            except ValueError:
                continue
            path, content = str(args.get("path", "")), args.get("content")
            if path.endswith(".py") and not path.startswith("tests/") and isinstance(content, str):
                return content
    for call in message.tool_calls:
        if call.name == "submit":
            try:
                code = call.parsed_arguments().get("code")
            except ValueError:
                return None
            return code if isinstance(code, str) else None
    if message.tool_calls:
        return None
    blocks = _FENCE.findall(message.content)
    if blocks:
        return str(blocks[-1])
    return message.content if message.content.strip() else None
