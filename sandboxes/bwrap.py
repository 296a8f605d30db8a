"""The ``bwrap`` backend: a long-lived bubblewrap jail running the job server.

The jail has its own pid, network (loopback only), IPC, UTS and mount namespaces; the system is
bound read-only; /tmp, /root, /home and /run are empty tmpfs (so neither the host's home nor
the Docker socket is visible); the work dir is a size-limited tmpfs. The interpreter is bound
back read-only at its own path, so a pyenv or virtualenv Python works (it lives under /root
here). bwrap is started by root without a user namespace, keeping only the capabilities the
server needs to drop each job to an unprivileged uid — as root inside the jail the process
limit would not apply and a fork bomb would win. bwrap sets no-new-privileges for the jail.
Starting the jail costs ~20 ms once; jobs are forks of the server inside it.
"""

from __future__ import annotations

import os
import shutil
import subprocess

from gymhub.errors import SandboxError
from gymhub.sandboxes.base import Limits
from gymhub.sandboxes.job_client import (
    SERVER_ENV,
    SERVER_SOURCE,
    JobServerSandbox,
    next_job_uid,
    python_for_sandbox,
    spawn,
)

SERVER_CAPS = ("CAP_SETUID", "CAP_SETGID", "CAP_KILL", "CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FOWNER")
WORKDIR = "/tmp/work"
IPC_DIR = "/tmp/.gymhub-ipc"  # root-only (0700): jobs cannot reach the server


def bwrap_available() -> str | None:
    """None when the backend can run here, else the reason it cannot."""
    if shutil.which("bwrap") is None:
        return "bubblewrap is not installed (apt-get install bubblewrap)"
    if os.geteuid() != 0:
        return "the bwrap backend starts jails as root (to drop each job to its own uid)"
    return None


HIDDEN = ("/tmp", "/root", "/home", "/run")


def _traversable_parents(prefix: str) -> list[str]:
    """bwrap makes missing parents of a bind target mode 0700, which the job uid cannot cross
    (a pyenv Python under /root): create them 0755 first."""
    parents = []
    folder = os.path.dirname(prefix)
    while folder not in ("/", "", *HIDDEN):
        parents.append(folder)
        folder = os.path.dirname(folder)
    if folder not in HIDDEN:
        return []  # not under a hidden folder: its parents are the host's own
    args: list[str] = []
    for parent in reversed(parents):
        args += ["--perms", "0755", "--dir", parent]
    return args


class BwrapSandbox(JobServerSandbox):
    backend = "bwrap"

    def __init__(self, limits: Limits | None = None, *, tmpfs_mb: int = 256) -> None:
        reason = bwrap_available()
        if reason:
            raise SandboxError(f"bwrap backend unavailable: {reason}")
        self.tmpfs_mb = tmpfs_mb
        super().__init__(limits)

    def _launch(self) -> None:
        python, prefix = python_for_sandbox()
        self.job_uid = next_job_uid()
        argv = ["bwrap", "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts",
                "--unshare-cgroup-try", "--die-with-parent", "--new-session",
                "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev",
                *[arg for hidden in HIDDEN for arg in ("--tmpfs", hidden)],
                *_traversable_parents(prefix), "--ro-bind", prefix, prefix,
                "--size", str(self.tmpfs_mb * 1024 * 1024), "--tmpfs", WORKDIR,
                "--bind", str(self.ipc_dir), IPC_DIR,
                "--ro-bind", str(SERVER_SOURCE), "/tmp/.gymhub-job-server.py"]  # fmt: skip
        for cap in SERVER_CAPS:
            argv += ["--cap-add", cap]
        argv += [
            "--chdir",
            WORKDIR,
            python,
            "-s",
            "-S",
            "/tmp/.gymhub-job-server.py",
            "--socket",
            f"{IPC_DIR}/sock",
            "--workdir",
            WORKDIR,
            "--job-uid",
            str(self.job_uid),
        ]
        self._proc = spawn(
            argv, env=SERVER_ENV, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        )
        self._wait_ready(self._proc, "the bwrap jail")

    def _stop(self) -> None:
        if self._proc is not None:
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._proc.kill()  # --die-with-parent takes the jail down with bwrap
                self._proc.wait()
            if self._proc.stdout is not None:
                self._proc.stdout.close()
