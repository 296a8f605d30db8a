"""``terminal-v0``: shell tasks in a sandbox; the verifier reads the final file system.

Each env instance holds one sandbox (any backend) for its lifetime and resets it per episode:
the task's file tree is written, then the agent acts with ``bash`` (stdout, stderr and exit
code, capped and time-limited) until it calls ``submit``. The final state is a snapshot of the
work dir in canonical form (:mod:`.snapshot`: modes and bytes, archives read in full, git
repositories read from their objects; no clock anywhere). Hidden checks never enter the
sandbox while the agent acts.
"""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar

from gymhub.env import Env, EnvReply
from gymhub.envs.terminal.snapshot import canonical_snapshot
from gymhub.envs.terminal.tasks import build_terminal_tasks
from gymhub.envs.terminal.verifier import TerminalVerifier
from gymhub.errors import SandboxError
from gymhub.sandboxes import Limits, create_sandbox
from gymhub.types import Message, Task, ToolCall

MAX_TOOL_OUTPUT = 8_000

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "bash",
            "description": "Run a shell command in the task directory (time limit 20 s).",
            "parameters": {
                "type": "object",
                "properties": {"command": {"type": "string"}},
                "required": ["command"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "submit",
            "description": "Finish: the files as they are now are your answer.",
            "parameters": {"type": "object", "properties": {}, "required": []},
        },
    },
]


class TerminalEnv(Env):
    family: ClassVar[str] = "terminal"
    version: ClassVar[str] = "0.1.0"
    default_max_turns: ClassVar[int] = 20
    system_prompt: ClassVar[str | None] = (
        "You operate a Linux shell through the bash tool. Be careful and precise."
    )

    def __init__(self, *, sandbox: str = "local", command_timeout: float = 20.0, **kwargs: Any) -> None:
        self.sandbox_backend = sandbox
        self.command_timeout = command_timeout
        self._box: Any = None
        super().__init__(**kwargs)

    def load_tasks(self) -> list[Task]:
        return build_terminal_tasks(self.env_id, self.task_seed)

    def tools(self) -> list[dict[str, Any]]:
        return TOOLS

    def make_verifier(self) -> TerminalVerifier:
        return TerminalVerifier(self.rules, backend=self.sandbox_backend)

    async def start_episode(self, task: Task) -> None:
        if self._box is not None:
            try:
                await asyncio.to_thread(self._box.reset)
            except SandboxError:  # a reset that fails leaves the sandbox dead: replace it
                await asyncio.to_thread(self._box.close)
                self._box = None
        if self._box is None:  # a new sandbox is pristine
            self._box = await asyncio.to_thread(
                create_sandbox, self.sandbox_backend, limits=Limits(cpu_seconds=30, processes=128)
            )
        modes = task.metadata.get("modes", {})
        for path, content in task.metadata["files"].items():
            await asyncio.to_thread(self._box.write_file, path, content.encode(), modes.get(path, 0o644))

    async def on_action(self, message: Message) -> EnvReply:
        return await self.answer_tool_calls(message, self._call, "Use the bash tool, then submit.")

    async def _call(self, call: ToolCall) -> tuple[str, bool]:
        if call.name == "submit":
            return "submitted", True
        command = call.parsed_arguments().get("command")
        if not isinstance(command, str) or not command.strip():
            return "error: bash needs a non-empty string 'command'", False
        result = await asyncio.to_thread(
            self._box.run, ["/bin/bash", "-c", command], timeout=self.command_timeout
        )
        out = result.stdout.decode(errors="replace")[-MAX_TOOL_OUTPUT:]
        err = result.stderr.decode(errors="replace")[-MAX_TOOL_OUTPUT:]
        note = " (timed out)" if result.timed_out else " (output truncated)" if result.truncated else ""
        return f"exit code: {result.exit_code}{note}\nstdout:\n{out}\nstderr:\n{err}", False

    async def final_state(self) -> dict[str, Any]:
        box = self._box
        snapshot = await asyncio.to_thread(lambda: canonical_snapshot(box.list_files(), box.read_file))
        task = self._episode.task if self._episode else None
        original = task.metadata["files"] if task else {}
        protected = task.hidden.get("protected", []) if task else []
        files = snapshot["files"]
        changed = [p for p in protected if files.get(p, {}).get("data") != original[p].encode()]
        return {**snapshot, "protected_changed": changed, "bad_action_steps": self.bad_action_steps}

    async def aclose(self) -> None:
        await super().aclose()
        if self._box is not None:
            await asyncio.to_thread(self._box.close)
            self._box = None
