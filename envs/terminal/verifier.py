"""The terminal verifier: hidden checks on the canonical snapshot of the final file system.

The snapshot (:mod:`.snapshot`) holds contents only: file modes and bytes, archives read in
full, git repositories read from their objects. File, archive and git checks are pure
functions of it. Command checks (running the agent's script) run after the episode in a fresh
sandbox seeded with the snapshot's files. Outcome 1 only if every check passes; ``details``
holds passed/total of the sub-goals for the progress rule. Invariants (what must stay as it
was) decide the outcome too but are no sub-goal: doing nothing keeps them.
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
    if entry is None or "data" not in entry:
        return False
    if "mode" in check and entry["mode"] != check["mode"]:
        return False
    if "content" in check:
        if check.get("strip"):
            return bool(entry["data"].decode("utf-8", errors="replace").strip() == check["content"].strip())
        return bool(entry["data"] == check["content"].encode())
    return True


def _archive_check(check: dict[str, Any], files: dict[str, Any]) -> bool:
    """Readable in full, in the asked format, its files exactly the wanted ones byte for byte;
    besides them only the folders that hold them."""
    view = (files.get(check["path"]) or {}).get("archive")
    if view is None or view["error"] is not None or view["format"] != check["format"]:
        return False
    wanted: dict[str, str] = check["members"]
    folders = {p.rsplit("/", 1)[0] for p in wanted if "/" in p}
    names = [m["name"] for m in view["members"]]
    if len(names) != len(set(names)):
        return False
    stored = {m["name"]: m.get("data") for m in view["members"] if m["type"] == "file"}
    others = [m["name"].rstrip("/") for m in view["members"] if m["type"] != "file"]
    if any(m["type"] != "dir" for m in view["members"] if m["type"] != "file"):
        return False
    return set(others) <= folders and stored == {p: c.encode() for p, c in wanted.items()}


def _git_check(check: dict[str, Any], repos: dict[str, Any]) -> bool:
    """``commit``: a repository of its own in the asked folder whose HEAD commit has the asked
    message and a tree of exactly the wanted files, byte for byte (the message keeps another
    task's script, replayed blind, from this credit). ``one-commit`` and ``clean`` build on it:
    no other commit; index and work tree as committed, nothing untracked whatever the rules."""
    repo = repos.get(check["repo"])
    if repo is None or repo["error"] is not None or not repo["history"]:
        return False
    wanted: dict[str, str] = check["files"]
    tree = repo["head_tree"]
    committed = {p: e.get("data") for p, e in tree.items() if e["mode"] in ("100644", "100755")}
    if len(committed) != len(tree) or committed != {p: c.encode() for p, c in wanted.items()}:
        return False
    [head, *older] = repo["history"]
    if head["message"] != check["message"]:
        return False
    if check["goal"] == "one-commit":
        return bool(not older and head["parents"] == 0)
    if check["goal"] == "clean":  # HEAD holds the wanted files, so the work tree does too
        return not repo["status"]
    return True


def _only_archive(check: dict[str, Any], files: dict[str, Any]) -> bool:
    """No archive in the work dir but the asked one (a guess per name is no answer)."""
    return all(p == check["path"] for p, entry in files.items() if "archive" in entry)


def _passes(check: dict[str, Any], files: dict[str, Any], repos: dict[str, Any]) -> bool:
    """Every check kind but ``command`` (which needs a sandbox)."""
    if check["kind"] == "archive":
        return _archive_check(check, files)
    if check["kind"] == "only-archive":
        return _only_archive(check, files)
    if check["kind"] == "git":
        return _git_check(check, repos)
    return _file_check(check, files)


class TerminalVerifier(BaseVerifier):
    id = "terminal-fs-checks"
    version = "2.0.0"

    def __init__(self, rules: dict[str, Any] | None = None, *, backend: str = "local") -> None:
        super().__init__(rules)
        self.backend = backend

    def check(self, task: Task, final_state: Any) -> tuple[float, dict[str, Any]]:
        files, repos = final_state["files"], final_state.get("git", {})
        checks = task.hidden["checks"]
        goals = [c for c in checks if not c.get("invariant")]
        invariants_kept = all(_passes(c, files, repos) for c in checks if c.get("invariant"))
        results = [_passes(c, files, repos) for c in goals if c["kind"] != "command"]
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
                if "data" in entry:
                    box.write_file(path, entry["data"], entry["mode"])
            out = []
            for check in commands:
                result = box.run(["/bin/bash", "-c", check["cmd"]], timeout=20)
                out.append(
                    result.exit_code == 0 and result.stdout.decode(errors="replace") == check["stdout"]
                )
            return out
