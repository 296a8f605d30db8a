"""The host side of the job server: one protocol, whatever the backend.

A backend only says how to start the server (:meth:`JobServerSandbox._launch`); everything
else — exec, files, snapshots, reset, liveness — is this client speaking length-prefixed JSON
over the server's Unix socket. Sync methods do the work; ``a``-prefixed twins run them in a
thread so an event loop can drive many sandboxes at once.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import queue
import shutil
import socket
import struct
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from gymhub.errors import SandboxError, SandboxTimeout
from gymhub.sandboxes.base import ExecResult, FileEntry, Limits
from gymhub.sandboxes.job_cgroup import JobCgroup
from gymhub.sandboxes.uid_lease import UidLease

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
WORKDIR = "/work"  # the job's work dir, on every backend


class JobServerSandbox:
    """Base of the backends: a job server started by :meth:`_launch`, spoken to over a socket.

    :attr:`isolation` says exactly what the backend hides and bounds (filesystem, network,
    processes, memory, ipc, syscalls, uid).
    """

    backend = "abstract"
    uses_cgroup = True  # False where the backend's own engine bounds the whole job (docker)

    def __init__(self, limits: Limits | None = None) -> None:
        self.limits = limits or Limits()
        self._lock = threading.Lock()
        self._conn: socket.socket | None = None
        self._proc: Any = None
        self._closed = False
        self._dead = False
        self._lease: UidLease | None = None
        self.cgroup: JobCgroup | None = None
        self.isolation: dict[str, str] = {}
        self.ipc_dir = Path(tempfile.mkdtemp(prefix=f"gymhub-{self.backend}-"))
        os.chmod(self.ipc_dir, 0o700)
        try:
            self._launch()
            self._connect()
        except BaseException:
            self.close()
            raise

    def _lease_uid(self) -> int:
        """A uid no other live sandbox on this host has (see :mod:`uid_lease`)."""
        self._lease = UidLease()
        self.job_uid = self._lease.uid
        return self.job_uid

    def _job_cgroup(self) -> list[int]:
        """Create this sandbox's cgroup; the descriptors its server's zygote joins it through."""
        if not self.uses_cgroup:
            return []
        self.cgroup = JobCgroup(f"gymhub-{self.job_uid}", self.limits.memory_mb, self.limits.processes + 8)
        self.isolation["memory"] = self.cgroup.mode
        return self.cgroup.fds() if self.cgroup.active else []

    # ------------------------------------------------------------ to implement
    def _launch(self) -> None:
        """Start the job server so that it listens on ``self.ipc_dir / "sock"``."""
        raise NotImplementedError

    def _stop(self) -> None:
        """Make sure the server and everything under it is gone."""

    def _start_server(self, command: list[str], pass_fds: list[int], what: str) -> None:
        """Spawn the job server (handing it ``pass_fds``, then closing ours) and wait for it."""
        try:
            self._proc = spawn(
                command,
                env=SERVER_ENV,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                pass_fds=pass_fds,
            )
        finally:
            for fd in pass_fds:
                os.close(fd)
        self._wait_ready(self._proc, what)

    def _stop_server(self) -> None:
        """Wait briefly for a server process that was asked to shut down; kill it otherwise."""
        if self._proc is not None:
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
            if self._proc.stdout is not None:
                self._proc.stdout.close()

    # ------------------------------------------------------------ transport
    def _wait_ready(self, proc: subprocess.Popen[bytes], what: str) -> None:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if line.strip() != b"ready":
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5)
            rest = proc.stdout.read(4000) if proc.poll() is not None else b""
            raise SandboxError(f"{what} did not start: {(line + rest).decode(errors='replace')[-1500:]}")

    def _connect(self) -> None:
        # the server publishes its socket only once it listens; retry anyway, briefly
        for attempt in range(50):
            conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                conn.connect(str(self.ipc_dir / "sock"))
                self._conn = conn
                return
            except (ConnectionRefusedError, FileNotFoundError):
                conn.close()
                if attempt == 49:
                    raise
                time.sleep(0.02)

    def _call(self, request: dict[str, Any]) -> dict[str, Any]:
        if self._closed or self._conn is None:
            raise SandboxError(f"{self.backend} sandbox is closed")
        if self._dead:
            raise SandboxError(f"{self.backend} sandbox is dead (a reset failed); replace it")
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
                self._dead = True
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
        if self.cgroup is not None:
            self.cgroup.set_memory(limits.memory_mb)
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
        """Back to the pristine state the sandbox was created with: kills leftover processes,
        empties every writable place, removes IPC objects. A reset that fails marks the
        sandbox dead (:meth:`alive` is then False) so pools and envs replace it."""
        try:
            self._call({"op": "reset"})
        except SandboxError:
            self._dead = True
            raise

    def alive(self) -> bool:
        if self._dead:
            return False
        try:
            self._call({"op": "ping"})
            return True
        except SandboxError:
            self._dead = True
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
        if self.cgroup is not None:
            self.cgroup.remove()  # kills anything left inside first
        shutil.rmtree(self.ipc_dir, ignore_errors=True)
        if self._lease is not None:
            self._lease.release(clean=self._nothing_left())

    def _nothing_left(self) -> bool:
        """No process of the job uid is left, so its uid may go to another sandbox."""
        from gymhub.sandboxes.uid_lease import _uid_in_use

        return not _uid_in_use(self.job_uid)

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
        return result  # type: ignore[no-any-return,unused-ignore]


_SPAWNER: list[_Spawner] = []
_SPAWNER_LOCK = threading.Lock()


def spawn(argv: list[str], **kwargs: Any) -> subprocess.Popen[bytes]:
    with _SPAWNER_LOCK:
        if not _SPAWNER:
            _SPAWNER.append(_Spawner())
    return _SPAWNER[0].popen(argv, **kwargs)


# The server's environment: PYTHONHASHSEED=0 so forked script jobs hash deterministically (``-I``
# would ignore it, so the server runs with ``-s -S`` and this clean environment instead).
SERVER_ENV = {"PATH": BASE_ENV["PATH"], "LANG": "C.UTF-8", "PYTHONHASHSEED": "0"}


def server_command(python: str, server: str, socket_path: str, job_uid: int, *extra: str) -> list[str]:
    """The job server's command line (``server``: the path of job_server.py where it runs)."""
    return [python, "-s", "-S", server, "--socket", socket_path, "--workdir", WORKDIR,
            "--job-uid", str(job_uid), *extra]  # fmt: skip
