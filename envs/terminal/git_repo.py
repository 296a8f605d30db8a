"""Read a git repository on the host from its files' bytes: no git binary, no repo config.

``git status`` and ``git log`` run inside a repository obey it: ``status.showUntrackedFiles=no``,
``.git/info/exclude``, ``.gitignore``, ``skip-worktree`` bits, hooks and fsmonitor all change what
they report, and commit hashes hold timestamps. :func:`read_repo` instead reads the objects
(loose and packed, each checked against its hash), the refs and the index itself, and computes
the status with no ignore rule at all: every work-tree file that is not in the index is
untracked. The summary it returns holds contents and content hashes only (tree, blobs, commit
messages), so the same commit made twice reads the same.
"""

from __future__ import annotations

import hashlib
import struct
import zlib
from typing import Any

from gymhub.envs.terminal.unpack_budget import UnpackBudget, UnpackBudgetExceeded

MAX_OBJECT = 16 * 1024 * 1024
MAX_HISTORY = 20  # commits followed along first parents
MAX_TREE_ENTRIES = 10_000
_TYPES = {1: "commit", 2: "tree", 3: "blob", 4: "tag"}


class RepoError(ValueError):
    """The repository cannot be read as a valid git repository."""


def blob_sha(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\x00" % len(data) + data).hexdigest()


def _inflate(data: bytes) -> tuple[bytes, bytes]:
    """(inflated bytes, what followed the zlib stream)."""
    stream = zlib.decompressobj()
    out = stream.decompress(data, MAX_OBJECT + 1)
    if len(out) > MAX_OBJECT or not stream.eof:
        raise RepoError("an object is truncated or too large")
    return out, stream.unused_data


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, pos


def _apply_delta(base: bytes, delta: bytes) -> bytes:
    source_size, pos = _varint(delta, 0)
    target_size, pos = _varint(delta, pos)
    if source_size != len(base) or target_size > MAX_OBJECT:
        raise RepoError("a pack delta does not fit its base")
    out = bytearray()
    while pos < len(delta):
        op = delta[pos]
        pos += 1
        if op & 0x80:  # copy from the base
            offset = size = 0
            for i in range(4):
                if op & (1 << i):
                    offset |= delta[pos] << (8 * i)
                    pos += 1
            for i in range(3):
                if op & (0x10 << i):
                    size |= delta[pos] << (8 * i)
                    pos += 1
            size = size or 0x10000
            out += base[offset : offset + size]
        elif op:  # insert literal bytes
            out += delta[pos : pos + op]
            pos += op
        else:
            raise RepoError("a pack delta has a reserved opcode")
    if len(out) != target_size:
        raise RepoError("a pack delta has the wrong size")
    return bytes(out)


class _Pack:
    def __init__(self, index: bytes, pack: bytes, budget: UnpackBudget) -> None:
        self.budget = budget
        if index[:8] != b"\xfftOc\x00\x00\x00\x02" or pack[:4] != b"PACK":
            raise RepoError("unsupported pack or pack index format")
        count = struct.unpack(">I", index[8 + 255 * 4 : 8 + 256 * 4])[0]
        shas = 8 + 256 * 4
        offsets = shas + count * 20 + count * 4
        large = offsets + count * 4
        self.pack = pack
        self.offsets: dict[str, int] = {}
        for i in range(count):
            sha = index[shas + i * 20 : shas + i * 20 + 20].hex()
            (offset,) = struct.unpack(">I", index[offsets + i * 4 : offsets + i * 4 + 4])
            if offset & 0x80000000:
                start = large + (offset & 0x7FFFFFFF) * 8
                (offset,) = struct.unpack(">Q", index[start : start + 8])
            self.offsets[sha] = offset

    def read(self, offset: int, lookup: Any, depth: int = 0) -> tuple[str, bytes]:
        kind, body = self._read(offset, lookup, depth)
        self.budget.take(len(body))
        return kind, body

    def _read(self, offset: int, lookup: Any, depth: int) -> tuple[str, bytes]:
        if depth > 50 or offset >= len(self.pack):
            raise RepoError("a pack object is out of range or its delta chain too deep")
        byte = self.pack[offset]
        kind, pos = (byte >> 4) & 7, offset + 1
        while byte & 0x80:  # the size, which inflating tells us anyway
            byte = self.pack[pos]
            pos += 1
        if kind == 6:  # delta against an object earlier in this pack
            byte = self.pack[pos]
            pos += 1
            distance = byte & 0x7F
            while byte & 0x80:
                byte = self.pack[pos]
                pos += 1
                distance = ((distance + 1) << 7) | (byte & 0x7F)
            base_kind, base = self.read(offset - distance, lookup, depth + 1)
            return base_kind, _apply_delta(base, _inflate(self.pack[pos:])[0])
        if kind == 7:  # delta against an object named by its hash
            base_kind, base = lookup(self.pack[pos : pos + 20].hex(), depth + 1)
            return base_kind, _apply_delta(base, _inflate(self.pack[pos + 20 :])[0])
        if kind not in _TYPES:
            raise RepoError(f"a pack object has unknown type {kind}")
        return _TYPES[kind], _inflate(self.pack[pos:])[0]


class _Objects:
    def __init__(self, git: dict[str, bytes], budget: UnpackBudget) -> None:
        self.git = git
        self.budget = budget
        self.packs = [
            _Pack(data, git[path[: -len(".idx")] + ".pack"], budget)
            for path, data in sorted(git.items())
            if path.startswith("objects/pack/") and path.endswith(".idx") and path[:-4] + ".pack" in git
        ]

    def get(self, sha: str, depth: int = 0) -> tuple[str, bytes]:
        loose = self.git.get(f"objects/{sha[:2]}/{sha[2:]}")
        if loose is not None:
            raw = _inflate(loose)[0]
            self.budget.take(len(raw))
            header, _, body = raw.partition(b"\x00")
            kind, _, size = header.decode("ascii", errors="replace").partition(" ")
            if not size.isdigit() or int(size) != len(body):
                raise RepoError("an object has a bad header")
        else:
            pack = next((p for p in self.packs if sha in p.offsets), None)
            if pack is None:
                raise RepoError("an object is missing")
            kind, body = pack.read(pack.offsets[sha], self.get, depth)
        if hashlib.sha1(f"{kind} {len(body)}".encode() + b"\x00" + body).hexdigest() != sha:
            raise RepoError("an object does not match its hash")
        return kind, body

    def typed(self, sha: str, kind: str) -> bytes:
        found, body = self.get(sha)
        if found != kind:
            raise RepoError(f"an object is a {found}, not a {kind}")
        return body


def _parse_commit(body: bytes) -> dict[str, Any]:
    head, _, message = body.partition(b"\n\n")
    fields = [line.split(b" ", 1) for line in head.split(b"\n") if line and not line.startswith(b" ")]
    return {
        "tree": next(v.decode() for k, v in fields if k == b"tree"),
        "parents": [v.decode() for k, v in fields if k == b"parent"],
        "message": message.decode("utf-8", errors="replace"),
    }


def _flatten_tree(objects: _Objects, sha: str, prefix: str, out: dict[str, dict[str, Any]]) -> None:
    body = objects.typed(sha, "tree")
    pos = 0
    while pos < len(body):
        space, nul = body.index(b" ", pos), body.index(b"\x00", pos)
        mode, name = body[pos:space].decode(), body[space + 1 : nul].decode("utf-8", errors="replace")
        child = body[nul + 1 : nul + 21].hex()
        pos = nul + 21
        if len(out) > MAX_TREE_ENTRIES:
            raise RepoError("the tree is too large")
        if mode == "40000":
            _flatten_tree(objects, child, f"{prefix}{name}/", out)
        elif mode == "160000":  # a submodule: a commit of another repository
            out[prefix + name] = {"mode": mode, "sha": child}
        else:
            out[prefix + name] = {"mode": mode, "sha": child, "data": objects.typed(child, "blob")}


def _resolve(git: dict[str, bytes], ref: str) -> str | None:
    for _ in range(5):
        loose = git.get(ref)
        if loose is None:
            packed = git.get("packed-refs", b"").decode(errors="replace").splitlines()
            found = [line.split(" ", 1)[0] for line in packed if line.endswith(" " + ref)]
            return found[0] if found else None
        text = loose.decode(errors="replace").strip()
        if not text.startswith("ref: "):
            return text
        ref = text[5:].strip()
    raise RepoError("HEAD is a loop of symbolic refs")


def _read_index(data: bytes) -> dict[str, dict[str, Any]]:
    if data[:4] != b"DIRC" or hashlib.sha1(data[:-20]).digest() != data[-20:]:
        raise RepoError("the index is not a valid index file")
    version, count = struct.unpack(">II", data[4:12])
    if version not in (2, 3, 4):
        raise RepoError(f"index version {version} is not supported")
    entries: dict[str, dict[str, Any]] = {}
    pos, previous = 12, b""
    for _ in range(count):
        start = pos
        (mode,) = struct.unpack(">I", data[pos + 24 : pos + 28])
        sha = data[pos + 40 : pos + 60].hex()
        (flags,) = struct.unpack(">H", data[pos + 60 : pos + 62])
        pos += 62 + (2 if version >= 3 and flags & 0x4000 else 0)
        if version == 4:
            strip, pos = _varint_index(data, pos)
            end = data.index(b"\x00", pos)
            name = previous[: len(previous) - strip] + data[pos:end]
            pos = end + 1
        else:
            end = data.index(b"\x00", pos)
            name = data[pos:end]
            pos = start + ((end - start) // 8 + 1) * 8  # NUL padding to a multiple of 8
        previous = name
        stage = (flags >> 12) & 3
        entries[name.decode("utf-8", errors="replace") + (f"#stage{stage}" if stage else "")] = {
            "mode": f"{mode:o}",
            "sha": sha,
        }
    return entries


def _varint_index(data: bytes, pos: int) -> tuple[int, int]:
    """The offset encoding of index v4 (the same as a pack's OFS_DELTA distance)."""
    byte = data[pos]
    pos += 1
    value = byte & 0x7F
    while byte & 0x80:
        byte = data[pos]
        pos += 1
        value = ((value + 1) << 7) | (byte & 0x7F)
    return value, pos


def _config_redirects(config: bytes) -> list[str]:
    """Settings that move the work tree or pull in more config: a repo with them is not one
    whose files are where it stands."""
    found, section = [], ""
    for raw in config.decode(errors="replace").splitlines():
        line = raw.strip()
        if line.startswith("["):
            section = line.strip("[]").split()[0].lower() if line.strip("[]").split() else ""
            if section.startswith("include"):
                found.append(section)
            continue
        key, _, value = line.partition("=")
        key, value = key.strip().lower(), value.strip().lower()
        if section == "core" and (key == "worktree" or (key == "bare" and value in ("true", "yes", "1"))):
            found.append(f"core.{key}")
        if section == "extensions" and key == "objectformat" and value != "sha1":
            found.append("extensions.objectformat")
    return found


def _status(
    head_tree: dict[str, dict[str, Any]],
    index: dict[str, dict[str, Any]],
    worktree: dict[str, tuple[int, bytes | None]],
) -> list[str]:
    """Porcelain-style lines, with no ignore rule: staged (X), unstaged (Y), untracked (??)."""
    lines = []
    for path in sorted(set(head_tree) | set(index)):
        if "#stage" in path:
            lines.append(f"UU {path.split('#stage')[0]}")
            continue
        head, staged = head_tree.get(path), index.get(path)
        if head is None or staged is None or (head["mode"], head["sha"]) != (staged["mode"], staged["sha"]):
            lines.append(f"{'A' if head is None else 'D' if staged is None else 'M'}  {path}")
    for path in sorted(set(index) | set(worktree)):
        if "#stage" in path:
            continue
        staged, present = index.get(path), worktree.get(path)
        if staged is None:
            lines.append(f"?? {path}")
        elif present is None:
            lines.append(f" D {path}")
        else:
            mode, data = present
            here = ("100755" if mode & 0o100 else "100644", blob_sha(data) if data is not None else "")
            if here != (staged["mode"], staged["sha"]):
                lines.append(f" M {path}")
    return sorted(set(lines))


def _describe(exc: Exception) -> str:
    """The error as the verdict shows it: our own messages name no hash or offset (the same
    damage reads the same), others only by type (their messages may carry such numbers)."""
    return f"RepoError: {exc}" if isinstance(exc, RepoError) else type(exc).__name__


def read_repo(
    git: dict[str, bytes], worktree: dict[str, tuple[int, bytes | None]], budget: UnpackBudget | None = None
) -> dict[str, Any]:
    """Summarise one repository from the files of its ``.git`` dir (paths relative to it) and
    its work tree (path -> (mode, bytes or None for unreadable), relative to the repo).

    ``head_tree`` maps paths to ``{"mode", "sha", "data"}``; ``history`` lists the first-parent
    chain from HEAD as ``{"tree", "parents", "message"}``; ``status`` is empty when the index
    matches HEAD and the work tree matches the index with nothing untracked."""
    summary: dict[str, Any] = {"error": None, "head_tree": {}, "history": [], "status": []}
    try:
        redirects = _config_redirects(git.get("config", b""))
        if redirects:
            raise RepoError(f"the repository config sets {', '.join(redirects)}")
        if "HEAD" not in git:
            raise RepoError("no HEAD: not a repository")
        objects = _Objects(git, budget or UnpackBudget())
        commit_sha = _resolve(git, "HEAD")
        index = _read_index(git["index"]) if "index" in git else {}
        head_tree: dict[str, dict[str, Any]] = {}
        sha = commit_sha
        while sha and len(summary["history"]) < MAX_HISTORY:
            commit = _parse_commit(objects.typed(sha, "commit"))
            if not summary["history"]:
                _flatten_tree(objects, commit["tree"], "", head_tree)
            summary["history"].append(
                {"tree": commit["tree"], "parents": len(commit["parents"]), "message": commit["message"]}
            )
            sha = commit["parents"][0] if commit["parents"] else None
        summary["head_tree"] = head_tree
        summary["status"] = _status(head_tree, index, worktree)
    except (
        RepoError,
        UnpackBudgetExceeded,
        ValueError,
        IndexError,
        KeyError,
        StopIteration,
        struct.error,
        zlib.error,
    ) as exc:
        summary = {
            "error": _describe(exc),
            "head_tree": {},
            "history": [],
            "status": [],
        }
    return summary
