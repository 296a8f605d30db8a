"""A cgroup per sandbox, so memory and process limits bind a whole job, not one process.

The host creates it below its own cgroup (v1: one folder per controller, memory and pids; v2:
one folder with both controllers), sets the limits, and hands the job server descriptors of
its ``cgroup.procs`` files: the zygote writes itself there once at start, and every job —
all the processes it forks, the tmpfs pages it fills — is charged to it from then on. Where no
cgroup is writable (a container without a delegated cgroup, no root) nothing is created and
:attr:`JobCgroup.mode` says that only per-process rlimits apply.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

ROOT = Path("/sys/fs/cgroup")
CONTROLLERS = ("memory", "pids")


def _own_path(controller: str) -> str:
    """This process's cgroup path for ``controller`` ('' for the v2 hierarchy)."""
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, names, path = line.split(":", 2)
        if controller in names.split(","):
            return path
    raise LookupError(controller)


class JobCgroup:
    """Memory and pids limits for one sandbox; ``fds()`` to pass to its job server."""

    def __init__(self, name: str, memory_mb: int, pids: int) -> None:
        self.folders: list[Path] = []
        self.owned = True
        self.headroom_mb = 0
        self.mode = "none: per-process rlimits only (no writable cgroup here)"
        self._memory_files: list[Path] = []
        self._memory_bytes = 1 << 62  # unlimited until set
        if os.geteuid() != 0:
            return
        try:
            if all((ROOT / c / "cgroup.procs").exists() for c in CONTROLLERS):
                self._create_v1(name)
            elif (ROOT / "cgroup.controllers").exists():
                self._create_v2(name)
        except OSError:
            self.remove()
            self.folders = []
        if self.folders:
            self.set_memory(memory_mb)
            self._write("pids.max", str(pids))

    @classmethod
    def of_process(cls, pid: int, headroom_mb: int) -> JobCgroup:
        """The existing cgroup of process ``pid`` (a container's), to retune its memory limit
        per job; ``headroom_mb`` is added for the processes that are not the job's."""
        self = cls.__new__(cls)
        self.folders, self._memory_files, self._memory_bytes = [], [], 1 << 62
        self.owned = False  # docker's: never killed into or removed by us
        self.headroom_mb = headroom_mb
        self.mode = "none: per-process rlimits only (the container's cgroup is not writable here)"
        try:
            paths = {}
            for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
                _, names, path = line.split(":", 2)
                for controller in names.split(","):
                    paths[controller] = path
            memory = ROOT / "memory" / paths["memory"].lstrip("/")
            if (memory / "memory.limit_in_bytes").exists() and os.access(
                memory / "memory.limit_in_bytes", os.W_OK
            ):
                self.folders = [memory]
                self._memory_files = [memory / "memory.limit_in_bytes"]
                if (memory / "memory.memsw.limit_in_bytes").exists():
                    self._memory_files.append(memory / "memory.memsw.limit_in_bytes")
                self._memory_bytes = int(self._memory_files[0].read_text())
                self.mode = (
                    f"the container's cgroup: each job's memory limit + {headroom_mb} MB for the server"
                )
        except (OSError, KeyError, ValueError):
            pass
        return self

    def _create_v1(self, name: str) -> None:
        for controller in CONTROLLERS:
            folder = ROOT / controller / _own_path(controller).lstrip("/") / name
            folder.mkdir()
            self.folders.append(folder)
        memory = self.folders[0]
        self._memory_files = [memory / "memory.limit_in_bytes"]
        if (memory / "memory.memsw.limit_in_bytes").exists():  # swap too, where it is accounted
            self._memory_files.append(memory / "memory.memsw.limit_in_bytes")
        self.mode = "cgroup v1 (memory, pids): limits bind the whole job"

    def _create_v2(self, name: str) -> None:
        folder = ROOT / _own_path("").lstrip("/") / name
        folder.mkdir()
        self.folders.append(folder)
        if not (folder / "memory.max").exists() or not (folder / "pids.max").exists():
            raise OSError("memory and pids are not delegated to this cgroup")
        self._memory_files = [folder / "memory.max"]
        if (folder / "memory.swap.max").exists():
            (folder / "memory.swap.max").write_text("0")
        self.mode = "cgroup v2 (memory, pids): limits bind the whole job"

    def _write(self, filename: str, value: str) -> None:
        for folder in self.folders:
            if (folder / filename).exists():
                (folder / filename).write_text(value)

    @property
    def active(self) -> bool:
        return bool(self.folders)

    def set_memory(self, memory_mb: int) -> None:
        """Limit the job's memory (processes, tmpfs pages, kernel objects) to ``memory_mb``."""
        value = (memory_mb + self.headroom_mb) * 1024 * 1024
        if not self.folders or value == self._memory_bytes:
            return
        # v1 refuses memory.limit above memsw.limit: raise memsw first, lower it last
        files = list(reversed(self._memory_files)) if value > self._memory_bytes else self._memory_files
        for path in files:
            path.write_text(str(value))
        self._memory_bytes = value

    def fds(self) -> list[int]:
        """Descriptors of each ``cgroup.procs`` (write-only; the caller closes them)."""
        return [os.open(folder / "cgroup.procs", os.O_WRONLY | os.O_CLOEXEC) for folder in self.folders]

    def pids(self) -> set[int]:
        out: set[int] = set()
        for folder in self.folders:
            with contextlib.suppress(OSError):
                out |= {int(p) for p in (folder / "cgroup.procs").read_text().split()}
        return out

    def remove(self) -> None:
        """Kill whatever is still inside, then delete the folders (only ours)."""
        if not self.owned:
            self.folders = []
            return
        deadline = time.monotonic() + 5
        while (left := self.pids()) and time.monotonic() < deadline:
            for pid in left:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.01)
        for folder in self.folders:
            for _ in range(100):
                try:
                    folder.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:  # EBUSY while the last processes exit
                    time.sleep(0.01)
        self.folders = []


def prune_cgroups() -> list[str]:
    """Remove the cgroups of sandboxes whose owner died without closing them (its uid lease is
    no longer held): kill what is inside, delete the folder. Returns the folders removed."""
    from gymhub.sandboxes.uid_lease import lease_held

    if os.geteuid() != 0:
        return []
    bases = []
    if all((ROOT / c / "cgroup.procs").exists() for c in CONTROLLERS):
        bases = [ROOT / c / _own_path(c).lstrip("/") for c in CONTROLLERS]
    elif (ROOT / "cgroup.controllers").exists():
        bases = [ROOT / _own_path("").lstrip("/")]
    removed = []
    for base in bases:
        for folder in sorted(base.glob("gymhub-*")):
            uid = folder.name.removeprefix("gymhub-")
            if not uid.isdigit() or lease_held(int(uid)):
                continue
            stale = JobCgroup.__new__(JobCgroup)
            stale.folders, stale.owned = [folder], True
            stale.remove()
            if not folder.exists():
                removed.append(str(folder))
    return removed
