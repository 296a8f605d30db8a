"""The ``local`` backend, first cut: one process per job, limits set inside the job.

What it does: a private temporary work dir per sandbox, a minimal environment
(``PYTHONHASHSEED=0`` for determinism), rlimits (CPU, address space, file size, open files)
set in the child before exec, a new session so a timeout kills the whole process group, and
output capped while it streams. What it does not isolate (yet): the host file system is
readable and writable with the caller's rights, and the network is reachable. The pre-forked
worker, unprivileged uid and network namespace come with the full sandbox backends.
"""

from __future__ import annotations

import os
import resource
import selectors
import shutil
import signal
import stat
import subprocess
import tempfile
import time
from pathlib import Path

from gymhub.errors import SandboxError
from gymhub.sandboxes.base import ExecResult, FileEntry, Limits

_BASE_ENV = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "PYTHONHASHSEED": "0",
    "PYTHONDONTWRITEBYTECODE": "1",
    "HOME": "/nonexistent",
}
CHANNEL_FD = 3


class LocalSandbox:
    """Runs jobs as local processes under rlimits, in a private work dir."""

    backend = "local"

    def __init__(self, limits: Limits | None = None) -> None:
        self.limits = limits or Limits()
        self.workdir = Path(tempfile.mkdtemp(prefix="gymhub-sbx-"))
        self._closed = False

    # --------------------------------------------------------------- files
    def _resolve(self, path: str) -> Path:
        target = (self.workdir / path).resolve()
        if not target.is_relative_to(self.workdir.resolve()):
            raise SandboxError(f"path {path!r} leaves the sandbox work dir")
        return target

    def write_file(self, path: str, data: bytes) -> None:
        target = self._resolve(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)

    def read_file(self, path: str) -> bytes:
        return self._resolve(path).read_bytes()

    def list_files(self) -> list[FileEntry]:
        """Every entry below the work dir, sorted by path; symlinks are not followed."""
        entries = []
        for path in sorted(self.workdir.rglob("*")):
            info = path.lstat()
            kind = "symlink" if path.is_symlink() else "dir" if path.is_dir() else "file"
            entries.append(
                FileEntry(str(path.relative_to(self.workdir)), kind, info.st_size, stat.S_IMODE(info.st_mode))
            )
        return entries

    def reset(self) -> None:
        """Back to the pristine (empty) work dir."""
        for child in self.workdir.iterdir():
            if child.is_dir() and not child.is_symlink():
                shutil.rmtree(child, ignore_errors=True)
            else:
                child.unlink(missing_ok=True)

    def close(self) -> None:
        if not self._closed:
            shutil.rmtree(self.workdir, ignore_errors=True)
            self._closed = True

    def __enter__(self) -> LocalSandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --------------------------------------------------------------- jobs
    def run(
        self,
        argv: list[str],
        *,
        stdin: bytes = b"",
        timeout: float = 10.0,
        env: dict[str, str] | None = None,
        side_channel: bool = False,
    ) -> ExecResult:
        """Run ``argv`` in the work dir; never raises for what the job does."""
        if self._closed:
            raise SandboxError("sandbox is closed")
        limits = self.limits
        read_fd, write_fd = os.pipe() if side_channel else (-1, -1)
        start = time.perf_counter()
        try:
            proc = subprocess.Popen(
                argv,
                cwd=self.workdir,
                env={**_BASE_ENV, **(env or {})},
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                close_fds=True,
                pass_fds=(CHANNEL_FD,) if side_channel else (),
                preexec_fn=_child_setup(limits, write_fd),
            )
        except OSError as exc:
            raise SandboxError(f"could not start {argv[0]!r}: {exc}") from exc
        finally:
            if side_channel:
                os.close(write_fd)
        try:
            streams = _Collector(proc, read_fd if side_channel else None, limits.max_output_bytes)
            killed_by = streams.collect(stdin, start + timeout)
        finally:
            if side_channel:
                os.close(read_fd)
        exit_code = proc.wait()
        if killed_by is None and exit_code in (-signal.SIGKILL, -signal.SIGXCPU):
            killed_by = "timeout" if exit_code == -signal.SIGXCPU else None
        return ExecResult(
            exit_code=exit_code,
            stdout=streams.data["stdout"],
            stderr=streams.data["stderr"],
            channel=streams.data["channel"],
            duration_s=time.perf_counter() - start,
            timed_out=killed_by == "timeout",
            killed_by=killed_by,
            truncated=streams.truncated,
        )


def _child_setup(limits: Limits, channel_fd: int):  # type: ignore[no-untyped-def]
    def setup() -> None:
        mb = 1024 * 1024
        resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_seconds, limits.cpu_seconds + 1))
        resource.setrlimit(resource.RLIMIT_AS, (limits.memory_mb * mb, limits.memory_mb * mb))
        resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_size_mb * mb, limits.file_size_mb * mb))
        resource.setrlimit(resource.RLIMIT_NOFILE, (limits.open_files, limits.open_files))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if channel_fd >= 0 and channel_fd != CHANNEL_FD:
            os.dup2(channel_fd, CHANNEL_FD)

    return setup


class _Collector:
    """Feeds stdin and drains stdout, stderr and the side channel until exit or deadline."""

    def __init__(self, proc: subprocess.Popen[bytes], channel_fd: int | None, cap: int) -> None:
        self.proc = proc
        self.cap = cap
        self.data = {"stdout": b"", "stderr": b"", "channel": b""}
        self.truncated = False
        self.sel = selectors.DefaultSelector()
        assert proc.stdout is not None and proc.stderr is not None
        self.sel.register(proc.stdout, selectors.EVENT_READ, "stdout")
        self.sel.register(proc.stderr, selectors.EVENT_READ, "stderr")
        if channel_fd is not None:
            self.sel.register(channel_fd, selectors.EVENT_READ, "channel")

    def collect(self, stdin: bytes, deadline: float) -> str | None:
        proc = self.proc
        assert proc.stdin is not None
        if stdin:
            self.sel.register(proc.stdin, selectors.EVENT_WRITE, "stdin")
        else:
            proc.stdin.close()
        view, killed_by = memoryview(stdin), None
        try:
            while self.sel.get_map():
                left = deadline - time.perf_counter()
                if left <= 0:
                    killed_by = "timeout"
                    break
                for key, _ in self.sel.select(timeout=min(left, 1.0)):
                    if key.data == "stdin":
                        view = self._feed(key, view)
                        continue
                    chunk = os.read(key.fd, 65536)
                    if not chunk:
                        self.sel.unregister(key.fileobj)
                        continue
                    if not self._keep(key.data, chunk):
                        killed_by = "output"
                if killed_by:
                    break
        finally:
            if killed_by:
                _kill_group(proc)
            self.sel.close()
            for stream in (proc.stdin, proc.stdout, proc.stderr):
                if stream is not None and not stream.closed:
                    stream.close()
        return killed_by

    def _feed(self, key: selectors.SelectorKey, view: memoryview) -> memoryview:
        try:
            sent = os.write(key.fd, view[:65536])
        except (BrokenPipeError, OSError):
            sent = len(view)
        view = view[sent:]
        if not view:
            self.sel.unregister(key.fileobj)
            self.proc.stdin.close()  # type: ignore[union-attr]
        return view

    def _keep(self, name: str, chunk: bytes) -> bool:
        room = self.cap - len(self.data[name])
        if len(chunk) > room:
            self.data[name] += chunk[: max(room, 0)]
            self.truncated = True
            # The side channel overflowing is tampering; stdout overflowing is a huge print.
            return len(self.data[name]) < self.cap
        self.data[name] += chunk
        return True


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
