"""Serve one gymhub env over MCP (``gymhub mcp ENV``): any MCP client can act in it.

Each MCP session has its own episode and its own env instance: one client's ``reset`` never
touches another's episode. ``reset`` returns an ``episode_id``; every tool takes it as an
optional argument. On a connection that is a session (stdio, in-memory, handshake-era HTTP
with ``Mcp-Session-Id``) it may be left out: the session's latest episode is used. Stateless
HTTP (MCP 2026-07-28, where every request is its own connection) must pass it. At most
``MAX_EPISODES`` episodes are kept; the least recently used one is closed first. Tools:

* ``list_tasks(split, limit)`` — task ids and prompts (never the hidden part);
* ``reset(task_id=None, seed=None)`` — start an episode; returns its ``episode_id``, the
  prompt and the chat so far;
* every tool of the env, with the env's own JSON schema plus ``episode_id`` — each call is
  one step of the episode;
* ``submit(answer)`` — end the episode with a final message, when the env has no ``submit``
  tool of its own (a code env's ``submit`` ends the episode itself).

A call that ends the episode returns the :class:`~gymhub.types.Verdict` with the observation.
Tool errors the env reports (unknown arguments, a failed command) are observations, as in
every gymhub env; calling a tool with no episode started is an MCP tool error.
"""

from __future__ import annotations

import asyncio
import uuid
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

from gymhub._tool_calls import tool_call_message
from gymhub.env import Env
from gymhub.errors import EpisodeOver, GymhubError
from gymhub.registry import make
from gymhub.types import Message

if TYPE_CHECKING:
    from fastmcp import FastMCP

CONTROL_TOOLS = ("list_tasks", "reset", "submit")
MAX_EPISODES = 64
EPISODE_ID = "episode_id"
EPISODE_ID_SCHEMA = {
    "type": "string",
    "description": "The episode_id that reset returned (optional on a stateful MCP session).",
}


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

    async def act(self, message: Message, *, final: bool = False) -> dict[str, Any]:
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
        return await self.act(tool_call_message((f"mcp_{self.calls}", name, arguments)))


class McpEpisodes:
    """Episodes by id, each with its own env; the latest episode of each stateful session."""

    def __init__(self, env_id: str, env_kwargs: dict[str, Any], limit: int = MAX_EPISODES) -> None:
        self.env_id, self.env_kwargs, self.limit = env_id, env_kwargs, limit
        self.episodes: OrderedDict[str, McpEpisode] = OrderedDict()
        self.latest: dict[str, str] = {}  # session key -> its latest episode id

    async def start(self, session: str | None, task_id: str | None, seed: int | None) -> dict[str, Any]:
        env = await asyncio.to_thread(make, self.env_id, **self.env_kwargs)
        episode = McpEpisode(env)
        try:
            result = await episode.reset(task_id, seed)
        except BaseException:
            await env.aclose()
            raise
        episode_id = uuid.uuid4().hex
        self.episodes[episode_id] = episode
        if session is not None:
            previous = self.latest.pop(session, None)
            if previous is not None:  # a session plays one episode at a time
                await self._close(previous)
            self.latest[session] = episode_id
        while len(self.episodes) > self.limit:
            await self._close(next(iter(self.episodes)))
        return {EPISODE_ID: episode_id, **result}

    def get(self, session: str | None, episode_id: str | None) -> McpEpisode:
        if episode_id is None:
            if session is None:
                raise EpisodeOver("this connection is stateless: pass the episode_id that reset returned")
            episode_id = self.latest.get(session)
            if episode_id is None:
                raise EpisodeOver("no episode is running: call reset first")
        found = self.episodes.get(episode_id)
        if found is None:
            raise EpisodeOver(f"no episode {episode_id!r} (never started, or closed): call reset")
        self.episodes.move_to_end(episode_id)
        return found

    async def _close(self, episode_id: str) -> None:
        episode = self.episodes.pop(episode_id, None)
        if episode is not None:
            await episode.env.aclose()


def _session_key() -> str | None:
    """The MCP session of the current request: ``local`` without HTTP (stdio, in-memory: one
    client per server), the ``Mcp-Session-Id`` of a handshake-era HTTP session, else None."""
    from fastmcp.server.dependencies import get_http_request

    try:
        request = get_http_request()
    except RuntimeError:
        return "local"
    session = request.headers.get("mcp-session-id")
    return f"http:{session}" if session else None


def build_mcp_server(env_id: str, *, token: str | None = None, **env_kwargs: Any) -> FastMCP:
    """A ``fastmcp.FastMCP`` app serving ``env_id``'s tools plus list_tasks / reset / submit.

    ``token``: over HTTP, every request must carry ``Authorization: Bearer TOKEN``.
    """
    from fastmcp import FastMCP
    from fastmcp.exceptions import ToolError
    from fastmcp.tools.base import Tool, ToolResult

    env = make(env_id, **env_kwargs)  # lists tasks and tools; each episode makes its own env
    episodes = McpEpisodes(env_id, env_kwargs)
    env_tools = env.tools()
    names = [t["function"]["name"] for t in env_tools]
    clash = sorted(set(names) & {"list_tasks", "reset"})
    if clash:
        raise GymhubError(f"{env_id}'s tools {clash} clash with the MCP server's control tools")
    for spec in env_tools:
        if EPISODE_ID in ((spec["function"].get("parameters") or {}).get("properties") or {}):
            raise GymhubError(f"{env_id}'s tool {spec['function']['name']} has its own {EPISODE_ID!r}")

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
        """Start an episode (a given task, or one drawn with the seed); returns its episode_id
        (pass it to every tool on a stateless connection) and its prompt."""
        if seed is not None and seed < 0:
            raise ToolError(f"seed must be non-negative, not {seed}")
        return await guarded(episodes.start(_session_key(), task_id, seed))

    async def current(episode_id: str | None) -> McpEpisode:
        try:
            return episodes.get(_session_key(), episode_id)
        except GymhubError as exc:
            raise ToolError(str(exc)) from None

    if "submit" not in names:

        @mcp.tool
        async def submit(answer: str = "", episode_id: str | None = None) -> dict[str, Any]:
            """End the episode with a final answer and get the verifier's verdict."""
            episode = await current(episode_id)
            return await guarded(episode.act(Message(role="assistant", content=answer), final=True))

    class EnvTool(Tool):
        async def run(self, arguments: dict[str, Any]) -> ToolResult:
            arguments = dict(arguments)
            given = arguments.pop(EPISODE_ID, None)
            episode = await current(given if isinstance(given, str) else None)
            result = await guarded(episode.call_tool(self.name, arguments))
            return ToolResult(content=result["observation"] or "(no output)", structured_content=result)

    for spec in env_tools:
        function = spec["function"]
        parameters = dict(function.get("parameters") or {"type": "object", "properties": {}})
        parameters["properties"] = {**(parameters.get("properties") or {}), EPISODE_ID: EPISODE_ID_SCHEMA}
        mcp.add_tool(
            EnvTool(name=function["name"], description=function.get("description", ""), parameters=parameters)
        )
    return mcp
