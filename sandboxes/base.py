"""The sandbox protocol shared by every backend."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol


@dataclass(frozen=True)
class Limits:
    """Resource limits applied inside the sandbox to every job."""

    cpu_seconds: int = 10
    memory_mb: int = 1024
    file_size_mb: int = 16
    open_files: int = 64
    processes: int = 64  # per job uid (RLIMIT_NPROC): a fork bomb stops here
    max_output_bytes: int = 1_000_000


@dataclass(frozen=True)
class FileEntry:
    """One entry of a sandbox's work dir, relative to it."""

    path: str
    kind: Literal["file", "dir", "symlink"]
    size: int
    mode: int  # permission bits only


@dataclass(frozen=True)
class ExecResult:
    """The result of one job. Output beyond the cap is dropped and flagged."""

    exit_code: int | None
    stdout: bytes
    stderr: bytes
    duration_s: float
    timed_out: bool = False
    killed_by: Literal["timeout", "memory", "output"] | None = None
    truncated: bool = False
    channel: bytes = b""  # the side channel (fd 3): for a trusted harness's reports

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out


class Sandbox(Protocol):
    """A place to run untrusted jobs. Every backend implements this (sync; ``a``-twins async)."""

    backend: str

    def run(
        self,
        argv: list[str] | None = None,
        *,
        script: str | None = None,
        stdin: bytes = b"",
        timeout: float = 10.0,
        env: dict[str, str] | None = None,
        side_channel: bool = False,
        limits: Limits | None = None,
    ) -> ExecResult: ...

    def write_file(self, path: str, data: bytes, mode: int = 0o644) -> None: ...

    def read_file(self, path: str, max_bytes: int = ...) -> bytes: ...

    def list_files(self) -> list[FileEntry]: ...

    def snapshot(self) -> str: ...

    def restore(self, snapshot_id: str) -> None: ...

    def reset(self) -> None: ...

    def alive(self) -> bool: ...

    def close(self) -> None: ...
