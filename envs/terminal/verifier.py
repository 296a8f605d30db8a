"""The terminal verifier: hidden checks on the final file system.

File checks (exact content, stripped content, mode, existence) read the snapshot — a pure
function of the final state. Command checks (``tar tzf``, ``git log``, running the agent's
script) run after the episode in a fresh sandbox seeded with the snapshot. Outcome 1 only if
every check passes; ``details`` holds passed/total for the progress rule.
"""

from __future__ import annotations

from typing import Any

from gymhub.sandboxes.warm_pool import shared_pool
from gymhub.types import Task
from gymhub.verifiers.base import BaseVerifier


def _file_check(check: dict[str, Any], files: dict[str, Any]) -> bool:
    entry = files.get(check["path"])
    if not check.get("exists", True):
        return entry is None
    if entry is None or entry.get("dir"):
        return False
    if "mode" in check and entry["mode"] != check["mode"]:
        return False
    if "content" in check:
        text = entry["data"].decode("utf-8", errors="replace")
        want = check["content"]
        if check.get("strip"):
            text, want = text.strip(), want.strip()
        return bool(text == want)
    return True


class TerminalVerifier(BaseVerifier):
    id = "terminal-fs-checks"
    version = "1.0.0"

    def __init__(self, rules: dict[str, Any] | None = None, *, backend: str = "local") -> None:
        super().__init__(rules)
        self.backend = backend

    def check(self, task: Task, final_state: Any) -> tuple[float, dict[str, Any]]:
        files = final_state["files"]
        checks = task.hidden["checks"]
        # Invariants (inputs left unchanged) decide the outcome too, but are no sub-goal: doing
        # nothing keeps them, so they earn no progress credit.
        goals = [c for c in checks if not c.get("invariant")]
        invariants_kept = all(_file_check(c, files) for c in checks if c.get("invariant"))
        results = [_file_check(c, files) for c in goals if c["kind"] == "file"]
        commands = [c for c in goals if c["kind"] == "command"]
        if commands:
            results += self._run_commands(commands, files)
        passed = sum(results)
        details = {
            "passed": passed,
            "total": len(results),
            "inputs_unchanged": invariants_kept,
            "bad_action_steps": list(final_state.get("bad_action_steps", [])),
        }
        return (1.0 if results and passed == len(results) and invariants_kept else 0.0), details

    def _run_commands(self, commands: list[dict[str, Any]], files: dict[str, Any]) -> list[bool]:
        with shared_pool(self.backend).sandbox() as box:  # pristine; the agent never touched it
            for path, entry in sorted(files.items()):
                if not entry.get("dir"):
                    box.write_file(path, entry["data"], entry["mode"])
            out = []
            for check in commands:
                result = box.run(["/bin/bash", "-c", check["cmd"]], timeout=20)
                out.append(
                    result.exit_code == 0 and result.stdout.decode(errors="replace") == check["stdout"]
                )
            return out
