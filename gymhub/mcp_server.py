"""Serve one gymhub env over MCP (``gymhub mcp ENV``): any MCP client can act in it.

The server holds one episode at a time (an MCP session is one agent). Its tools are:

* ``list_tasks(split, limit)`` — task ids and prompts (never the hidden part);
* ``reset(task_id=None, seed=None)`` — start an episode; returns the prompt, the chat so far
  and the env's tool schemas;
* every tool of the env, with the env's own JSON schema — each call is one step of the episode;
* ``submit(answer)`` — end the episode with a final message, when the env has no ``submit``
  tool of its own (a code env's ``submit`` ends the episode itself).

A call that ends the episode returns the :class:`~gymhub.types.Verdict` with the observation.
Tool errors the env reports (unknown arguments, a failed command) are observations, as in
every gymhub env; calling a tool with no episode started is an MCP tool error.
"""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Any

from gymhub.env import Env
from gymhub.errors import EpisodeOver, GymhubError
from gymhub.registry import make

if TYPE_CHECKING:
    from fastmcp import FastMCP

CONTROL_TOOLS = ("list_tasks", "reset", "submit")


class McpEpisode:
    """The env behind the server and its current episode; one action at a time."""

    def __init__(self, env: Env) -> None:
        self.env = env
        self.lock = asyncio.Lock()
        self.active = False
        self.calls = 0

    async def reset(self, task_id: str | None, seed: int | None) -> dict[str, Any]:
        async with self.lock:
            options = {"task_id": task_id} if task_id else None
            prompt, info = await self.env.areset(seed=seed, options=options)
            self.active = True
            return {"task_id": info["task_id"], "prompt": prompt, "messages": info["messages"]}

    async def act(self, message: dict[str, Any], *, final: bool = False) -> dict[str, Any]:
        async with self.lock:
            if not self.active:
                raise EpisodeOver("no episode is running: call reset first")
            step = self.env.afinish if final else self.env.astep
            observation, reward, terminated, truncated, info = await step(message)
            result: dict[str, Any] = {"observation": observation, "done": terminated or truncated}
            if terminated or truncated:
                self.active = False
                result["reward"] = reward
                result["verdict"] = info["verdict"].model_dump(mode="json")
            return result

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        self.calls += 1
        call = {"id": f"mcp_{self.calls}", "type": "function"}
        call["function"] = {"name": name, "arguments": json.dumps(arguments)}  # type: ignore[assignment]
        return await self.act({"role": "assistant", "content": "", "tool_calls": [call]})


def build_mcp_server(env_id: str, *, token: str | None = None, **env_kwargs: Any) -> FastMCP:
    """A ``fastmcp.FastMCP`` app serving ``env_id``'s tools plus list_tasks / reset / submit.

    ``token``: over HTTP, every request must carry ``Authorization: Bearer TOKEN``.
    """
    from fastmcp import FastMCP
    from fastmcp.exceptions import ToolError
    from fastmcp.tools.base import Tool, ToolResult

    env = make(env_id, **env_kwargs)
    episode = McpEpisode(env)
    env_tools = env.tools()
    names = [t["function"]["name"] for t in env_tools]
    clash = sorted(set(names) & {"list_tasks", "reset"})
    if clash:
        raise GymhubError(f"{env_id}'s tools {clash} clash with the MCP server's control tools")

    auth = None
    if token:
        from fastmcp.server.auth.providers.jwt import StaticTokenVerifier

        auth = StaticTokenVerifier(tokens={token: {"client_id": "gymhub", "scopes": []}})
    mcp = FastMCP(
        f"gymhub-{env_id}",
        instructions=f"gymhub environment {env_id}: call reset first.",
        auth=auth,
        mask_error_details=False,
    )

    async def guarded(call: Any) -> dict[str, Any]:
        """A user's mistake (no episode, unknown task) is a tool error, not a logged traceback."""
        try:
            result: dict[str, Any] = await call
        except GymhubError as exc:
            raise ToolError(str(exc)) from None
        return result

    @mcp.tool
    def list_tasks(split: str = "train", limit: int = 20) -> list[dict[str, str]]:
        """List tasks of the env: their ids and prompts."""
        if split not in ("train", "eval"):
            raise ToolError(f"split must be train or eval, not {split!r}")
        tasks = [t for t in env.all_tasks if t.split == split][: max(0, limit)]
        return [{"task_id": t.id, "prompt": t.prompt} for t in tasks]

    @mcp.tool
    async def reset(task_id: str | None = None, seed: int | None = None) -> dict[str, Any]:
        """Start an episode (a given task, or one drawn with the seed); returns its prompt."""
        if seed is not None and seed < 0:
            raise ToolError(f"seed must be non-negative, not {seed}")
        return await guarded(episode.reset(task_id, seed))

    if "submit" not in names:

        @mcp.tool
        async def submit(answer: str = "") -> dict[str, Any]:
            """End the episode with a final answer and get the verifier's verdict."""
            return await guarded(episode.act({"role": "assistant", "content": answer}, final=True))

    class EnvTool(Tool):
        async def run(self, arguments: dict[str, Any]) -> ToolResult:
            result = await guarded(episode.call_tool(self.name, arguments))
            return ToolResult(content=result["observation"] or "(no output)", structured_content=result)

    for spec in env_tools:
        function = spec["function"]
        parameters = function.get("parameters") or {"type": "object", "properties": {}}
        mcp.add_tool(
            EnvTool(name=function["name"], description=function.get("description", ""), parameters=parameters)
        )
    return mcp
