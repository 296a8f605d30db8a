"""File-system state assertions on a sandbox: existence, contents, substrings, modes, hashes."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from gymhub.errors import SandboxError


@dataclass(frozen=True)
class FileAssertion:
    path: str
    exists: bool = True
    content: str | None = None  # exact text
    contains: str | None = None
    sha256: str | None = None
    mode: int | None = None  # permission bits, e.g. 0o755


@dataclass(frozen=True)
class FsReport:
    passed: int
    total: int
    failures: list[str]


def _check_one(sandbox: Any, a: FileAssertion, modes: dict[str, int]) -> str | None:
    present = a.path in modes
    if not a.exists:
        return f"{a.path}: should not exist" if present else None
    if not present:
        return f"{a.path}: missing"
    if a.mode is not None and modes[a.path] != a.mode:
        return f"{a.path}: mode {oct(modes[a.path])}, expected {oct(a.mode)}"
    if a.content is None and a.contains is None and a.sha256 is None:
        return None
    try:
        data = sandbox.read_file(a.path)
    except (OSError, SandboxError) as exc:
        return f"{a.path}: unreadable ({type(exc).__name__})"
    if a.sha256 is not None and hashlib.sha256(data).hexdigest() != a.sha256:
        return f"{a.path}: sha256 differs"
    text = data.decode("utf-8", errors="replace")
    if a.content is not None and text != a.content:
        return f"{a.path}: content differs"
    if a.contains is not None and a.contains not in text:
        return f"{a.path}: does not contain {a.contains[:60]!r}"
    return None


def check_files(sandbox: Any, assertions: list[FileAssertion]) -> FsReport:
    """Check ``assertions`` against a sandbox's work dir (its ``list_files`` and ``read_file``)."""
    modes = {entry.path: entry.mode for entry in sandbox.list_files()}
    failures = [f for a in assertions if (f := _check_one(sandbox, a, modes)) is not None]
    return FsReport(len(assertions) - len(failures), len(assertions), failures)
