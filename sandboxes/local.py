"""The ``local`` backend: the fast default.

A job server runs on the host, started once per sandbox. As root (CI, a container, a training
node) it first builds its own jail (``job_server.build_jail``): private mount, network
(loopback only) and IPC namespaces, and a minimal root (:mod:`minimal_root`) — the system
folders and the interpreter read-only with every site-packages folder masked; private /proc
(``hidepid``), /dev, /tmp, /var/tmp, /dev/shm and /dev/mqueue; a size-limited tmpfs work dir
at ``/work``; then ``pivot_root``, so nothing else of the host exists for a job. Jobs fork from
a pristine zygote, run as the sandbox's own leased uid with rlimits, no-new-privileges and a
seccomp filter, inside the sandbox's cgroup.

Without root none of that is possible: jobs would run as you, seeing everything you see. That
backend is ``local-unsafe``, chosen only by name; ``local`` refuses to start without root.
"""

from __future__ import annotations

import json
import os

from gymhub.errors import SandboxError
from gymhub.sandboxes.base import Limits
from gymhub.sandboxes.job_client import SERVER_SOURCE, JobServerSandbox, server_command
from gymhub.sandboxes.minimal_root import interpreter, minimal_root

NOT_ROOT = (
    "the local sandbox isolates jobs only when gymhub runs as root; here it would isolate "
    "nothing (jobs could read your files, including gymhub's task generators). Use the bwrap "
    "or docker backend, or ask for no isolation explicitly with sandbox 'local-unsafe'"
)


def local_available() -> str | None:
    """None when the (isolating) local backend can run here, else the reason it cannot."""
    return None if os.geteuid() == 0 else NOT_ROOT


class LocalSandbox(JobServerSandbox):
    backend = "local"

    def __init__(self, limits: Limits | None = None, *, tmpfs_mb: int = 256, unsafe: bool = False) -> None:
        self.tmpfs_mb = tmpfs_mb
        self.unsafe = unsafe or os.geteuid() != 0
        if self.unsafe and not unsafe:
            raise SandboxError(NOT_ROOT)
        super().__init__(limits)

    def _launch(self) -> None:
        python, _ = interpreter()
        if self.unsafe:
            self.job_uid = os.getuid()
            self.isolation = {"everything": "none: jobs run as you and see what you see (local-unsafe)"}
            workdir = self.ipc_dir / "work"
            command = server_command(python, str(SERVER_SOURCE), str(self.ipc_dir / "sock"), self.job_uid)
            command[command.index("--workdir") + 1] = str(workdir)
            command.remove("--job-uid")
            command.remove(str(self.job_uid))
            pass_fds: list[int] = []
        else:
            root = minimal_root()
            jail = {**root.__dict__, "root": str(self.ipc_dir / "root"), "work_mb": self.tmpfs_mb}
            self._lease_uid()
            self.isolation = {
                "filesystem": root.describe(),
                "network": "private network namespace: loopback only, no host socket reachable",
                "processes": "own uid (host-wide lease), /proc shows only the job's processes",
                "ipc": "private IPC namespace and /dev/mqueue, emptied on reset",
                "syscalls": "seccomp: no namespaces, mount, keyctl, bpf, perf, ptrace, io_uring",
            }
            pass_fds = self._job_cgroup()
            command = server_command(python, str(SERVER_SOURCE), str(self.ipc_dir / "sock"), self.job_uid,
                                     "--jail", json.dumps(jail), "--scratch", "/tmp,/var/tmp,/dev/shm",
                                     "--cgroup-fds", ",".join(map(str, pass_fds)))  # fmt: skip
        self._start_server(command, pass_fds, "the local job server")

    def _stop(self) -> None:
        self._stop_server()


class UnsafeLocalSandbox(LocalSandbox):
    """``local-unsafe``: the local job server without any isolation (no root needed)."""

    backend = "local-unsafe"

    def __init__(self, limits: Limits | None = None, *, tmpfs_mb: int = 256) -> None:
        super().__init__(limits, tmpfs_mb=tmpfs_mb, unsafe=True)
