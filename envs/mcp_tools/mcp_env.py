"""``McpToolEnv``: any MCP server, plus a task set and a verifier, as a gymhub environment.

The env is an MCP client: the agent's tool calls go through the MCP protocol to a real
``fastmcp`` server (in-process transport), and the tools offered to the model are the server's
own, converted to the OpenAI tools schema. A subclass supplies :meth:`make_server` (the
``FastMCP`` app), :meth:`reset_state` (back to the task's seeded state) and the usual
:meth:`load_tasks`, :meth:`make_verifier` and :meth:`final_state`.

Each tool call opens a short client session: sessions must end in the task that opened them,
and an env may be driven from many tasks. A failing or crashing tool comes back as an error
observation; output is capped.
"""

from __future__ import annotations

import logging
from typing import Any, ClassVar

import fastmcp

from gymhub.env import Env, EnvReply
from gymhub.types import Message, ToolCall

MAX_TOOL_OUTPUT = 8_000
# fastmcp sets its logger to INFO on import; tool errors are observations here, not log noise.
logging.getLogger("fastmcp").setLevel(logging.CRITICAL)


class McpToolEnv(Env):
    family: ClassVar[str] = "mcp"
    finish_tool: ClassVar[str] = "finish"
    tool_timeout_s: ClassVar[float] = 30.0  # a tool that hangs longer becomes an error observation

    def __init__(self, **kwargs: Any) -> None:
        self._server: Any = None
        self._tools: list[dict[str, Any]] | None = None
        super().__init__(**kwargs)

    # ------------------------------------------------------------ subclass hooks
    def make_server(self) -> Any:
        """The ``fastmcp.FastMCP`` app this env talks to."""
        raise NotImplementedError

    async def reset_state(self, task: Any) -> None:
        """Bring the application's state to the task's seeded starting point."""

    # ------------------------------------------------------------ MCP plumbing
    @property
    def server(self) -> Any:
        if self._server is None:
            self._server = self.make_server()
        return self._server

    def _client(self) -> Any:
        return fastmcp.Client(self.server)

    async def _list_tools(self) -> list[dict[str, Any]]:
        async with self._client() as client:
            listed = await client.list_tools()
        tools = [
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description or "",
                    "parameters": t.input_schema,
                },
            }
            for t in listed
        ]
        tools.append(
            {
                "type": "function",
                "function": {
                    "name": self.finish_tool,
                    "description": "End the conversation when the request is handled.",
                    "parameters": {
                        "type": "object",
                        "properties": {"summary": {"type": "string"}},
                        "required": [],
                    },
                },
            }
        )
        return tools

    def tools(self) -> list[dict[str, Any]]:
        if self._tools is None:
            import asyncio
            import threading

            box: list[Any] = []
            thread = threading.Thread(target=lambda: box.append(asyncio.run(self._list_tools())))
            thread.start()  # a fresh loop in a thread: works whether or not a loop is running here
            thread.join()
            self._tools = box[0]
        return self._tools

    async def start_episode(self, task: Any) -> None:
        await self.reset_state(task)

    async def on_action(self, message: Message) -> EnvReply:
        if not message.tool_calls:
            return EnvReply(
                [Message(role="user", content="Use the tools; call finish when the request is handled.")]
            )
        replies, done = [], False
        for call in message.tool_calls:
            if done:  # nothing after finish runs (and the calls-after-finish rule penalises it)
                content = f"error: not run, it came after {self.finish_tool}"
            elif call.name == self.finish_tool:
                content, done = "finished", True
            else:
                content = await self._call_tool(call)
            replies.append(Message(role="tool", tool_call_id=call.id, name=call.name, content=content))
        return EnvReply(replies, done=done)

    async def _call_tool(self, call: ToolCall) -> str:
        try:
            async with self._client() as client:
                result = await client.call_tool(
                    call.name, call.parsed_arguments(), raise_on_error=False, timeout=self.tool_timeout_s
                )
        except Exception as exc:  # the server failed: the episode goes on with an error observation
            return f"error: the tool server failed ({type(exc).__name__}: {exc})"[:MAX_TOOL_OUTPUT]
        text = "\n".join(getattr(part, "text", "") for part in result.content)
        if result.is_error:
            return f"error: {text}"[:MAX_TOOL_OUTPUT]
        return text[:MAX_TOOL_OUTPUT]
