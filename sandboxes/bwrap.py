"""The ``bwrap`` backend: a long-lived bubblewrap jail running the job server.

The jail has its own pid, network (loopback only), IPC, UTS and mount namespaces, and the same
minimal root as ``local`` (:mod:`minimal_root`): the system folders and the interpreter bound
read-only with every site-packages folder masked; private /proc, /dev, /tmp, /var/tmp,
/dev/shm, /dev/mqueue; a size-limited tmpfs work dir at ``/work``; nothing else of the host.
bwrap is started by root without a user namespace, keeping only the capabilities the server
needs to drop each job to the sandbox's leased uid — as root inside the jail the process limit
would not apply and a fork bomb would win. Jobs fork from a pristine zygote, with rlimits,
no-new-privileges and a seccomp filter, inside the sandbox's cgroup. Starting the jail costs
~20 ms once.
"""

from __future__ import annotations

import os
import shutil

from gymhub.errors import SandboxError
from gymhub.sandboxes.base import Limits
from gymhub.sandboxes.job_client import (
    SERVER_SOURCE,
    WORKDIR,
    JobServerSandbox,
    server_command,
)
from gymhub.sandboxes.minimal_root import interpreter, minimal_root

SERVER_CAPS = ("CAP_SETUID", "CAP_SETGID", "CAP_KILL", "CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FOWNER")
IPC_DIR = "/run/gymhub"  # root-only (0700): jobs cannot reach the server's socket
SERVER_IN_JAIL = "/run/gymhub-job-server.py"
SCRATCH_MB = 64


def bwrap_available() -> str | None:
    """None when the backend can run here, else the reason it cannot."""
    if shutil.which("bwrap") is None:
        return "bubblewrap is not installed (apt-get install bubblewrap)"
    if os.geteuid() != 0:
        return "the bwrap backend starts jails as root (to drop each job to its own uid)"
    return None


def _parents(paths: list[str]) -> list[str]:
    """The folders above ``paths`` that are not themselves bound, shallowest first."""
    out: set[str] = set()
    for path in paths:
        folder = os.path.dirname(path)
        while folder not in ("/", "") and folder not in paths:
            out.add(folder)
            folder = os.path.dirname(folder)
    return sorted(out, key=lambda f: (f.count("/"), f))


class BwrapSandbox(JobServerSandbox):
    backend = "bwrap"

    def __init__(self, limits: Limits | None = None, *, tmpfs_mb: int = 256) -> None:
        reason = bwrap_available()
        if reason:
            raise SandboxError(f"bwrap backend unavailable: {reason}")
        self.tmpfs_mb = tmpfs_mb
        super().__init__(limits)

    def _jail_args(self) -> list[str]:
        root = minimal_root()
        self.isolation = {
            "filesystem": root.describe(),
            "network": "private network namespace: loopback only, no host socket reachable",
            "processes": "own pid namespace and uid (host-wide lease)",
            "ipc": "private IPC namespace and /dev/mqueue, emptied on reset",
            "syscalls": "seccomp: no namespaces, mount, keyctl, bpf, perf, ptrace, io_uring",
        }
        args = ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try",
                "--die-with-parent", "--new-session"]  # fmt: skip
        for folder in _parents(root.binds):  # bwrap would make them 0700: jobs must cross them
            args += ["--perms", "0755", "--dir", folder]
        for path in root.binds:
            args += ["--ro-bind", path, path]
        for path in root.masks:
            args += ["--perms", "0755", "--tmpfs", path, "--remount-ro", path]
        for path, target in root.links.items():
            args += ["--symlink", target, path]
        args += ["--proc", "/proc", "--dev", "/dev", "--mqueue", "/dev/mqueue"]
        for path in ("/tmp", "/var/tmp", "/dev/shm"):
            args += ["--perms", "1777", "--size", str(SCRATCH_MB << 20), "--tmpfs", path]
        args += ["--perms", "0755", "--size", str(self.tmpfs_mb << 20), "--tmpfs", WORKDIR,
                 "--bind", str(self.ipc_dir), IPC_DIR, "--ro-bind", str(SERVER_SOURCE), SERVER_IN_JAIL,
                 "--remount-ro", "/"]  # fmt: skip
        for cap in SERVER_CAPS:
            args += ["--cap-add", cap]
        return [*args, "--chdir", WORKDIR]

    def _launch(self) -> None:
        python, _ = interpreter()
        self._lease_uid()
        pass_fds = self._job_cgroup()
        argv = ["bwrap", *self._jail_args(),
                *server_command(python, SERVER_IN_JAIL, f"{IPC_DIR}/sock", self.job_uid,
                                "--scratch", "/tmp,/var/tmp,/dev/shm",
                                "--cgroup-fds", ",".join(map(str, pass_fds)))]  # fmt: skip
        self._start_server(argv, pass_fds, "the bwrap jail")

    def _stop(self) -> None:
        self._stop_server()  # --die-with-parent takes the jail down with bwrap
