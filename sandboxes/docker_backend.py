"""The ``docker`` backend: a warm container per sandbox, running the job server.

The container has no network (``--network none``), an init process (``--init``: orphans are
reaped, zombies cannot exhaust the pids limit), memory / pids / CPU limits that bind the whole
container (its cgroup), a read-only root, docker's default seccomp profile, and tmpfs for the
work dir, /tmp and /dev/shm, emptied on every reset. Its uid is leased host-wide like the other
backends', and jobs fork from the job server's pristine zygote with its seccomp filter on top.
All capabilities are dropped but those the server needs to drop each job to its own uid, and
no-new-privileges is set. The host talks to the server over a Unix socket in a bind-mounted
root-only folder — one ``docker run`` per sandbox, then no ``docker exec`` per step (each costs
~100 ms of CPU here), and timeouts are enforced by the server inside the container (killing a
``docker exec`` client would leave the job running). Files go through the server too:
``put_archive`` does not see a tmpfs.
"""

from __future__ import annotations

import os
import time
from typing import Any

from gymhub.errors import SandboxError
from gymhub.sandboxes.base import Limits
from gymhub.sandboxes.job_cgroup import JobCgroup
from gymhub.sandboxes.job_client import SERVER_ENV, SERVER_SOURCE, WORKDIR, JobServerSandbox, server_command

DEFAULT_IMAGE = "gymhub-sandbox:bookworm"
SERVER_CAPS = ["SETUID", "SETGID", "KILL", "CHOWN", "DAC_OVERRIDE", "FOWNER"]
LABEL = "gymhub.sandbox"
SERVER_HEADROOM_MB = 48  # the job server and docker-init, besides the job
OWNER_LABEL = "gymhub.owner-pid"


def prune_containers() -> list[str]:
    """Remove sandbox containers whose owning process is gone (it was killed before closing
    them); returns their ids. Containers of live processes are left alone."""
    client = docker_client()
    removed = []
    for container in client.containers.list(all=True, filters={"label": LABEL}):
        owner = int(container.labels.get(OWNER_LABEL, "0") or 0)
        if owner and _alive(owner):
            continue
        container.remove(force=True)
        removed.append(container.short_id)
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def docker_client() -> Any:
    try:
        import docker
    except ImportError as exc:
        raise SandboxError("the docker backend needs the docker SDK: pip install 'gymhub[docker]'") from exc
    try:
        client = docker.from_env()
        client.ping()
    except Exception as exc:  # no engine, no permission, no socket
        raise SandboxError(
            f"no Docker engine reachable ({type(exc).__name__}: {exc}); start dockerd"
        ) from exc
    return client


def docker_available(image: str = DEFAULT_IMAGE) -> str | None:
    """None when the backend can run here, else the reason it cannot."""
    try:
        client = docker_client()
    except SandboxError as exc:
        return str(exc)
    try:
        client.images.get(image)
    except Exception:
        return f"image {image} not found: build it with `gymhub sandbox build-image`"
    return None


class DockerSandbox(JobServerSandbox):
    backend = "docker"
    uses_cgroup = False  # the container's own cgroup bounds the whole sandbox

    def __init__(
        self,
        limits: Limits | None = None,
        *,
        image: str = DEFAULT_IMAGE,
        memory_mb: int = 1024,
        pids: int = 256,
        cpus: float = 1.0,
        tmpfs_mb: int = 256,
    ) -> None:
        self.image, self.memory_mb, self.pids, self.cpus, self.tmpfs_mb = (
            image,
            memory_mb,
            pids,
            cpus,
            tmpfs_mb,
        )
        self.container: Any = None
        super().__init__(limits)

    def _launch(self) -> None:
        client = docker_client()
        self._lease_uid()
        self.isolation = {
            "filesystem": f"the image {self.image} only (read-only root); private /tmp, /dev/shm, work dir",
            "network": "none (--network none)",
            "processes": "own pid namespace and uid (host-wide lease)",
            "ipc": "the container's private IPC namespace, emptied on reset",
            "syscalls": "docker's default seccomp profile, plus gymhub's job filter",
            "memory": f"the container's cgroup: {self.memory_mb} MB, {self.pids} pids for the whole sandbox",
        }
        try:
            self.container = client.containers.run(
                self.image,
                server_command(
                    "python3",
                    "/opt/gymhub/job_server.py",
                    "/run/gymhub/sock",
                    self.job_uid,
                    "--scratch",
                    "/tmp,/dev/shm",
                ),
                detach=True,
                environment=SERVER_ENV,
                network_mode="none",
                init=True,
                read_only=True,
                mem_limit=f"{self.memory_mb}m",
                memswap_limit=f"{self.memory_mb}m",
                pids_limit=self.pids,
                nano_cpus=int(self.cpus * 1e9),
                cap_drop=["ALL"],
                cap_add=SERVER_CAPS,
                security_opt=["no-new-privileges"],
                labels={LABEL: "1", OWNER_LABEL: str(os.getpid())},
                shm_size="64m",
                tmpfs={WORKDIR: f"size={self.tmpfs_mb}m,mode=0755,exec", "/tmp": "size=64m,mode=1777"},
                volumes={
                    str(self.ipc_dir): {"bind": "/run/gymhub", "mode": "rw"},
                    str(SERVER_SOURCE): {"bind": "/opt/gymhub/job_server.py", "mode": "ro"},
                },
            )
        except Exception as exc:
            raise SandboxError(f"could not start a container from {self.image}: {exc}") from exc
        self.container.reload()
        self.cgroup = JobCgroup.of_process(int(self.container.attrs["State"]["Pid"] or 0), SERVER_HEADROOM_MB)
        if self.cgroup.active:
            self.isolation["memory"] = self.cgroup.mode
        deadline = time.monotonic() + 30
        while not (self.ipc_dir / "sock").exists():
            self.container.reload()
            if self.container.status not in ("created", "running") or time.monotonic() > deadline:
                logs = self.container.logs(tail=20).decode(errors="replace")
                raise SandboxError(f"the container's job server did not start: {logs[-800:]}")
            time.sleep(0.02)

    def _stop(self) -> None:
        if self.container is not None:
            try:
                self.container.remove(force=True)
            except Exception:  # already gone
                pass
