"""How to wrap any MCP server as a gymhub environment — a second, small example.

A notes app (add, list, delete) served by ``fastmcp``, a JSON-able task list, and a verifier
that reads the final notes. That is all a new MCP environment needs::

    gymhub.register("mcp-notes-v0", "gymhub.envs.mcp_tools.notes_example:NotesEnv")
    env = gymhub.make("mcp-notes-v0")
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

from gymhub.envs.mcp_tools.mcp_env import McpToolEnv
from gymhub.types import Task
from gymhub.verifiers.base import BaseVerifier

TASKS = [  # what the user wants, and the notes that must exist at the end
    ("Add a note that says 'buy milk'.", ["buy milk"], []),
    ("Add the notes 'call Ana' and 'pay rent'.", ["call Ana", "pay rent"], []),
    ("Delete the note 'old idea'.", [], ["old idea"]),
    ("Replace the note 'draft' with 'final'.", ["final"], ["draft"]),
]


def build_notes_server(store: list[str]) -> Any:
    from fastmcp import FastMCP

    mcp = FastMCP("notes")

    @mcp.tool
    def add_note(text: str) -> str:
        """Add a note."""
        store.append(text)
        return f"added note {len(store)}"

    @mcp.tool
    def list_notes() -> list[str]:
        """All notes, oldest first."""
        return list(store)

    @mcp.tool
    def delete_note(text: str) -> str:
        """Delete the note with exactly this text."""
        if text not in store:
            raise ValueError(f"no note {text!r}")
        store.remove(text)
        return "deleted"

    @mcp.tool
    async def slow_tool(seconds: float) -> str:
        """Sleeps (to show that a hanging tool becomes an error observation)."""
        import asyncio

        await asyncio.sleep(seconds)
        return "done"

    return mcp


class NotesVerifier(BaseVerifier):
    id = "notes-state"
    version = "1"

    def check(self, task: Task, final_state: Any) -> tuple[float, dict[str, Any]]:
        notes = final_state["notes"]
        ok = all(n in notes for n in task.hidden["present"]) and not any(
            n in notes for n in task.hidden["absent"]
        )
        return float(ok), {"notes": notes}


class NotesEnv(McpToolEnv):
    """Keep a list of notes through an MCP notes app."""

    version: ClassVar[str] = "0.1.0"
    default_max_turns: ClassVar[int] = 8
    registry_spec: ClassVar[dict[str, Any]] = {"family": "mcp", "rules": {"invalid-action": 1.0}}

    def __init__(self, **kwargs: Any) -> None:
        self.notes: list[str] = []
        super().__init__(**kwargs)

    def make_server(self) -> Any:
        return build_notes_server(self.notes)

    def load_tasks(self) -> list[Task]:
        tasks = []
        for i, (prompt, present, absent) in enumerate(TASKS):
            calls = [("delete_note", {"text": t}) for t in absent] + [
                ("add_note", {"text": t}) for t in present
            ]
            script = [
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [{"id": f"c{j}", "function": {"name": n, "arguments": json.dumps(a)}}],
                }
                for j, (n, a) in enumerate([*calls, ("finish", {})])
            ]
            hidden = {"present": present, "absent": absent, "solutions": {"reference": script}}
            task = Task.create(self.env_id, "eval" if i == 3 else "train", prompt, hidden)
            tasks.append(task.model_copy(update={"split": "eval" if i == 3 else "train"}))
        return tasks

    def make_verifier(self) -> NotesVerifier:
        return NotesVerifier(self.rules)

    async def reset_state(self, task: Any) -> None:
        self.notes[:] = list(task.hidden["absent"])  # the notes the task starts with

    async def final_state(self) -> dict[str, Any]:
        return {"notes": sorted(self.notes)}
