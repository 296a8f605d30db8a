"""The ``local`` backend: the fast default.

A job server runs on the host, started once per sandbox. When gymhub runs as root (CI, a
container, a training node) it first moves itself into a private network namespace (loopback
only: nothing else is reachable) and a private mount namespace with a size-limited tmpfs as
work dir, so the host's disk cannot be filled and the work dir is invisible from outside, and
its own /proc with ``hidepid``: jobs see only their own processes. Each job runs as the
sandbox's own unprivileged uid with rlimits and no-new-privileges.

What it does not isolate: the host file system stays readable to jobs (with that uid's
rights) — use ``bwrap`` or ``docker`` when the code must not see the host. Without root it
cannot switch uid or namespaces, and says so in :attr:`isolation`.
"""

from __future__ import annotations

import contextlib
import os
import subprocess

from gymhub.sandboxes.base import Limits
from gymhub.sandboxes.job_client import (
    SERVER_ENV,
    JobServerSandbox,
    next_job_uid,
    python_for_sandbox,
    server_command,
    spawn,
)


class LocalSandbox(JobServerSandbox):
    backend = "local"

    def __init__(self, limits: Limits | None = None, *, tmpfs_mb: int = 256) -> None:
        self.tmpfs_mb = tmpfs_mb
        self.isolation = "namespaces+uid" if os.geteuid() == 0 else "none (not root)"
        super().__init__(limits)

    def _launch(self) -> None:
        python, _ = python_for_sandbox()
        workdir = self.ipc_dir.with_name(self.ipc_dir.name + "-work")  # 0755: jobs must traverse it
        workdir.mkdir(mode=0o755)
        self.workdir_mountpoint = workdir
        extra: list[str] = []
        if os.geteuid() == 0:
            self.job_uid = next_job_uid()
            extra = ["--isolate", "1", "--tmpfs-mb", str(self.tmpfs_mb), "--job-uid", str(self.job_uid)]
        self._proc = spawn(
            server_command(python, str(self.ipc_dir / "sock"), str(workdir), *extra),
            env=SERVER_ENV,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        self._wait_ready(self._proc, "the local job server")

    def _stop(self) -> None:
        mountpoint = getattr(self, "workdir_mountpoint", None)
        if mountpoint is not None:
            with contextlib.suppress(OSError):
                mountpoint.rmdir()  # the tmpfs lived in the server's namespace: this is empty
        if self._proc is not None:
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
            if self._proc.stdout is not None:
                self._proc.stdout.close()
