"""The canonical snapshot of a terminal sandbox's work dir: what the verifier reads.

Contents, never clocks: a plain file is its mode and bytes; an archive is its members, read
in full (:mod:`.archives`), not its bytes (which hold mtimes); a git repository is the summary
:mod:`.git_repo` reads from its objects, index and refs, not the bytes of ``.git`` (which hold
timestamps, commit hashes and stat data). The same actions give the same snapshot, byte for
byte, so the verdict digest is the same too.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from gymhub.envs.terminal.archives import looks_like_archive, read_archive
from gymhub.envs.terminal.git_repo import read_repo
from gymhub.envs.terminal.unpack_budget import UnpackBudget

SNAPSHOT_LIMIT = 16 * 1024 * 1024  # bytes read out of the sandbox, all files together
_GIT_SKIPPED = ("hooks/", "logs/")  # never read: samples and reflogs (timestamps)


def _repo_of(path: str) -> tuple[str, str] | None:
    """(repo dir, path inside .git) when ``path`` lies inside a ``.git`` dir."""
    parts = path.split("/")
    if ".git" not in parts:
        return None
    at = parts.index(".git")
    return "/".join(parts[:at]), "/".join(parts[at + 1 :])


def canonical_snapshot(entries: Iterable[Any], read: Callable[[str], bytes]) -> dict[str, Any]:
    """``{"files": {path: entry}, "git": {repo dir: summary}}`` from a sandbox's ``list_files``
    entries (``path``, ``kind``, ``size``, ``mode``) and its ``read_file``.

    A file entry is ``{"mode", "data"}``, ``{"mode", "archive"}`` for a file that parses as an
    archive (or fails to, with the error), ``{"mode", "dir": True}``, ``{"mode", "symlink": True}``
    or ``{"mode", "unread": reason}``. ``git`` has one summary per dir holding a ``.git``."""
    files: dict[str, Any] = {}
    raw: dict[str, bytes | None] = {}
    git_files: dict[str, dict[str, bytes]] = {}
    git_markers: dict[str, str] = {}  # repo dir -> kind of its ``.git`` entry
    total = 0
    budget = UnpackBudget()  # what the archives and repositories below may inflate, together
    for entry in sorted(entries, key=lambda e: e.path):
        inside = _repo_of(entry.path)
        if inside is not None and inside[1] == "":
            git_markers[inside[0]] = entry.kind
            continue
        if entry.kind == "file" and (inside is None or not inside[1].startswith(_GIT_SKIPPED)):
            data = read(entry.path) if total + entry.size <= SNAPSHOT_LIMIT else None
            total += len(data or b"")
            if inside is not None:
                if data is not None:
                    git_files.setdefault(inside[0], {})[inside[1]] = data
                continue
            raw[entry.path] = data
            if data is None:
                files[entry.path] = {"mode": entry.mode, "unread": "over the snapshot limit"}
            elif looks_like_archive(data):
                files[entry.path] = {"mode": entry.mode, "archive": read_archive(data, budget)}
            else:
                files[entry.path] = {"mode": entry.mode, "data": data}
        elif inside is None:
            kind = {"dir": "dir", "symlink": "symlink"}.get(entry.kind, "other")
            files[entry.path] = {"mode": entry.mode, kind: True}
    repos = {}
    for repo, kind in sorted(git_markers.items()):
        if kind != "dir":
            repos[repo] = {
                "error": f".git is a {kind}, not a directory",
                "head_tree": {},
                "history": [],
                "status": [],
            }
            continue
        prefix = f"{repo}/" if repo else ""
        worktree = {
            path[len(prefix) :]: (entry["mode"], raw.get(path))
            for path, entry in files.items()
            if path.startswith(prefix) and not entry.get("dir")
        }
        repos[repo] = read_repo(git_files.get(repo, {}), worktree, budget)
    return {"files": files, "git": repos}
