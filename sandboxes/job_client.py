"""The host side of the job server: one protocol, whatever the backend.

A backend only says how to start the server (:meth:`JobServerSandbox._launch`); everything
else — exec, files, snapshots, reset, liveness — is this client speaking length-prefixed JSON
over the server's Unix socket. Sync methods do the work; ``a``-prefixed twins run them in a
thread so an event loop can drive many sandboxes at once.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
import os
import queue
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

from gymhub.errors import SandboxError, SandboxTimeout
from gymhub.sandboxes.base import ExecResult, FileEntry, Limits

SERVER_SOURCE = Path(__file__).with_name("job_server.py")
BASE_ENV = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "PYTHONHASHSEED": "0",
    "PYTHONDONTWRITEBYTECODE": "1",
    "HOME": "/nonexistent",
}
MAX_FRAME = 64 * 1024 * 1024
_UIDS = itertools.count()


def next_job_uid() -> int:
    """A job uid nobody else uses: per-uid process limits and the reaper stay per sandbox."""
    return 200_000 + (os.getpid() % 1000) * 100 + next(_UIDS) % 100


class JobServerSandbox:
    """Base of the backends: a job server started by :meth:`_launch`, spoken to over a socket."""

    backend = "abstract"

    def __init__(self, limits: Limits | None = None) -> None:
        self.limits = limits or Limits()
        self._lock = threading.Lock()
        self._conn: socket.socket | None = None
        self._proc: Any = None
        self._closed = False
        self.ipc_dir = Path(tempfile.mkdtemp(prefix=f"gymhub-{self.backend}-"))
        os.chmod(self.ipc_dir, 0o700)
        try:
            self._launch()
            self._connect()
        except BaseException:
            self.close()
            raise

    # ------------------------------------------------------------ to implement
    def _launch(self) -> None:
        """Start the job server so that it listens on ``self.ipc_dir / "sock"``."""
        raise NotImplementedError

    def _stop(self) -> None:
        """Make sure the server and everything under it is gone."""

    # ------------------------------------------------------------ transport
    def _wait_ready(self, proc: subprocess.Popen[bytes], what: str) -> None:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if line.strip() != b"ready":
            rest = proc.stdout.read(4000) if proc.poll() is not None else b""
            raise SandboxError(f"{what} did not start: {(line + rest).decode(errors='replace')[:800]}")

    def _connect(self) -> None:
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.connect(str(self.ipc_dir / "sock"))
        self._conn = conn

    def _call(self, request: dict[str, Any]) -> dict[str, Any]:
        if self._closed or self._conn is None:
            raise SandboxError(f"{self.backend} sandbox is closed")
        payload = json.dumps(request).encode()
        with self._lock:
            try:
                self._conn.sendall(struct.pack(">I", len(payload)) + payload)
                header = self._recv(4)
                (size,) = struct.unpack(">I", header)
                if size > MAX_FRAME:
                    raise SandboxError("the sandbox sent an oversized reply")
                reply = json.loads(self._recv(size))
            except (OSError, ValueError, struct.error) as exc:
                raise SandboxError(
                    f"{self.backend} sandbox died ({type(exc).__name__}: {exc}); "
                    "replace it (a SandboxPool does this for you)"
                ) from exc
        if not isinstance(reply, dict):
            raise SandboxError("the sandbox sent a malformed reply")
        if not reply.get("ok"):
            raise SandboxError(f"{self.backend} sandbox: {reply.get('error', 'unknown error')}")
        return reply

    def _recv(self, size: int) -> bytes:
        assert self._conn is not None
        chunks, left = [], size
        while left:
            chunk = self._conn.recv(min(left, 1 << 20))
            if not chunk:
                raise ConnectionError("the job server closed the connection")
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)

    # ------------------------------------------------------------ protocol
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
    ) -> ExecResult:
        """Run ``argv`` (a program) or ``script`` (Python source, in the pre-started interpreter).

        ``limits`` overrides the sandbox's limits for this job only.
        """
        if (argv is None) == (script is None):
            raise ValueError("give exactly one of argv or script")
        limits = limits or self.limits
        reply = self._call(
            {
                "op": "exec",
                "argv": argv,
                "script": script,
                "stdin": base64.b64encode(stdin).decode(),
                "timeout": timeout,
                "env": {**BASE_ENV, **(env or {})},
                "side_channel": side_channel,
                "limits": {
                    "cpu_seconds": max(1, int(min(limits.cpu_seconds, timeout + 1))),
                    "memory_mb": limits.memory_mb,
                    "file_size_mb": limits.file_size_mb,
                    "open_files": limits.open_files,
                    "processes": limits.processes,
                    "max_output_bytes": limits.max_output_bytes,
                },
            }
        )
        return ExecResult(
            exit_code=reply["exit_code"],
            stdout=base64.b64decode(reply["stdout"]),
            stderr=base64.b64decode(reply["stderr"]),
            channel=base64.b64decode(reply["channel"]),
            duration_s=float(reply["duration"]),
            timed_out=bool(reply["timed_out"]),
            killed_by=reply["killed_by"],
            truncated=bool(reply["truncated"]),
        )

    def run_checked(self, argv: list[str], **kwargs: Any) -> ExecResult:
        """:meth:`run`, raising :class:`SandboxTimeout` when the job ran out of time."""
        result = self.run(argv, **kwargs)
        if result.timed_out:
            raise SandboxTimeout(f"{argv[0]} ran past {kwargs.get('timeout', 10.0)} s and was killed")
        return result

    def write_file(self, path: str, data: bytes, mode: int = 0o644) -> None:
        self._call({"op": "write", "path": path, "data": base64.b64encode(data).decode(), "mode": mode})

    def read_file(self, path: str, max_bytes: int = 16 * 1024 * 1024) -> bytes:
        data = base64.b64decode(self._call({"op": "read", "path": path, "max_bytes": max_bytes})["data"])
        if len(data) > max_bytes:
            raise SandboxError(f"{path} is larger than {max_bytes} bytes")
        return data

    def list_files(self) -> list[FileEntry]:
        return [FileEntry(p, k, s, m) for p, k, s, m in self._call({"op": "list"})["entries"]]

    def snapshot(self) -> str:
        return str(self._call({"op": "snapshot"})["id"])

    def restore(self, snapshot_id: str) -> None:
        self._call({"op": "restore", "id": snapshot_id})

    def reset(self) -> None:
        """Back to the pristine state the sandbox was created with; kills leftover processes."""
        self._call({"op": "reset"})

    def alive(self) -> bool:
        try:
            self._call({"op": "ping"})
            return True
        except SandboxError:
            return False

    def close(self) -> None:
        if self._closed:
            return
        if self._conn is not None:
            try:
                self._call({"op": "shutdown"})
            except SandboxError:
                pass
        self._closed = True
        if self._conn is not None:
            self._conn.close()
        self._stop()
        shutil.rmtree(self.ipc_dir, ignore_errors=True)

    def __enter__(self) -> JobServerSandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        if not getattr(self, "_closed", True):
            try:
                self.close()
            except Exception:  # interpreter shutdown: best effort
                pass

    # ------------------------------------------------------------ async twins
    async def aexec(self, argv: list[str] | None = None, **kwargs: Any) -> ExecResult:
        return await asyncio.to_thread(self.run, argv, **kwargs)

    async def awrite_file(self, path: str, data: bytes, mode: int = 0o644) -> None:
        await asyncio.to_thread(self.write_file, path, data, mode)

    async def aread_file(self, path: str) -> bytes:
        return await asyncio.to_thread(self.read_file, path)

    async def areset(self) -> None:
        await asyncio.to_thread(self.reset)

    async def aclose(self) -> None:
        await asyncio.to_thread(self.close)


class _Spawner:
    """Starts server processes from one long-lived thread.

    ``bwrap --die-with-parent`` (and the local server's parent-death signal) fire when the
    *thread* that spawned them exits. Sandboxes are often created in short-lived worker
    threads (``asyncio.to_thread``), so they are all spawned from this thread instead, and
    die only with the process — which is what "with its parent" should mean.
    """

    def __init__(self) -> None:
        self._jobs: queue.Queue[tuple[list[str], dict[str, Any], queue.Queue[Any]]] = queue.Queue()
        threading.Thread(target=self._loop, name="gymhub-sandbox-spawner", daemon=True).start()

    def _loop(self) -> None:
        while True:
            argv, kwargs, reply = self._jobs.get()
            try:
                reply.put(subprocess.Popen(argv, **kwargs))
            except Exception as exc:  # handed back to the caller
                reply.put(exc)

    def popen(self, argv: list[str], **kwargs: Any) -> subprocess.Popen[bytes]:
        reply: queue.Queue[Any] = queue.Queue(maxsize=1)
        self._jobs.put((argv, kwargs, reply))
        result = reply.get()
        if isinstance(result, Exception):
            raise result
        return result  # type: ignore[no-any-return]


_SPAWNER: list[_Spawner] = []
_SPAWNER_LOCK = threading.Lock()


def spawn(argv: list[str], **kwargs: Any) -> subprocess.Popen[bytes]:
    with _SPAWNER_LOCK:
        if not _SPAWNER:
            _SPAWNER.append(_Spawner())
    return _SPAWNER[0].popen(argv, **kwargs)


def python_for_sandbox() -> tuple[str, str]:
    """The real interpreter (not a pyenv shim or venv link) and its prefix to expose."""
    return os.path.realpath(sys.executable), sys.base_prefix


# The server's environment: PYTHONHASHSEED=0 so forked script jobs hash deterministically (``-I``
# would ignore it, so the server runs with ``-s -S`` and this clean environment instead).
SERVER_ENV = {"PATH": BASE_ENV["PATH"], "LANG": "C.UTF-8", "PYTHONHASHSEED": "0"}


def server_command(python: str, socket_path: str, workdir: str, *extra: str) -> list[str]:
    return [python, "-s", "-S", str(SERVER_SOURCE), "--socket", socket_path, "--workdir", workdir, *extra]
