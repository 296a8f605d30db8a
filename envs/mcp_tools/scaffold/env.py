"""scaffolded-env-v0: a gymhub mcp environment (scaffolded by `gymhub new-env`).

Add tasks to tasks.json; change the rules in ``registry_spec``; see gymhub's docs/new-env.md.
"""

import json
from pathlib import Path
from typing import Any, ClassVar

from gymhub.types import Task, content_split

TASKS = json.loads((Path(__file__).parent / "tasks.json").read_text())


def _calls(calls: list) -> list:
    return [{"role": "assistant", "content": "", "tool_calls": [
        {"id": f"c{i}", "function": {"name": n, "arguments": json.dumps(a)}}]} for i, (n, a) in enumerate(calls)]

from gymhub.envs.mcp_tools import McpToolEnv
from gymhub.verifiers.base import BaseVerifier


def build_server(counters: dict[str, int]) -> Any:
    """The MCP server: replace it with yours (any fastmcp app works)."""
    from fastmcp import FastMCP

    mcp = FastMCP("scaffolded-env-v0")

    @mcp.tool
    def increment(name: str, by: int = 1) -> int:
        """Increase a named counter."""
        counters[name] = counters.get(name, 0) + by
        return counters[name]

    @mcp.tool
    def read(name: str) -> int:
        """Read a named counter."""
        return counters.get(name, 0)

    return mcp


class CounterVerifier(BaseVerifier):
    id, version = "scaffolded-env-v0-state", "1"

    def check(self, task: Task, final_state: Any) -> tuple[float, dict[str, Any]]:
        return float(final_state["counters"] == task.hidden["expected"]), {}


class Env(McpToolEnv):
    """scaffolded-env: a mcp environment. Describe the tasks here."""

    registry_spec: ClassVar[dict[str, Any]] = {"family": "mcp", "rules": {"invalid-action": 1.0}}

    def __init__(self, **kwargs: Any) -> None:
        self.counters: dict[str, int] = {}
        super().__init__(**kwargs)

    def make_server(self) -> Any:
        return build_server(self.counters)

    def make_verifier(self) -> CounterVerifier:
        return CounterVerifier(self.rules)

    def load_tasks(self) -> list[Task]:
        tasks = []
        for t in TASKS:
            reference = _calls([*[("increment", c) for c in t["calls"]], ("finish", {})])
            hidden = {"expected": t["expected"], "solutions": {"reference": reference, "wrong": _calls([("finish", {})])}}
            tasks.append(Task.create(self.env_id, content_split(hidden), t["prompt"], hidden))
        return tasks

    async def reset_state(self, task: Any) -> None:
        self.counters.clear()

    async def final_state(self) -> dict[str, Any]:
        return {"counters": dict(self.counters)}
