"""Job uids leased host-wide: no two live sandboxes ever share one.

Each job runs as its sandbox's own unprivileged uid: the process limit, the reaper (``kill -1``
as that uid) and file ownership are all per sandbox only if the uid is. A lease is an
exclusive ``flock`` on ``/run/gymhub/uids/<uid>``, held for the sandbox's life, so every
process on the host — any interpreter, any user of gymhub — sees the same allocation. The
kernel drops the lock when its holder dies, however it dies; a uid whose last holder did not
close cleanly (its lease file is still there) is only reused once no process of that uid is
left on the host. A clean release removes the file, so nothing of the sandbox stays behind.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import random
from pathlib import Path

FIRST_UID = 200_000
COUNT = 60_000
LEASES = Path("/run/gymhub/uids")


def _uid_in_use(uid: int) -> bool:
    """Any process of ``uid`` (real, effective or saved) anywhere on the host?"""
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/status", "rb") as fh:
                for line in fh:
                    if line.startswith(b"Uid:"):
                        if uid in {int(x) for x in line.split()[1:4]}:
                            return True
                        break
        except OSError:  # gone meanwhile
            continue
    return False


def lease_held(uid: int) -> bool:
    """Does a live process hold ``uid``'s lease?"""
    try:
        fd = os.open(LEASES / str(uid), os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)


class UidLease:
    """An exclusive uid for one sandbox; :meth:`release` after everything of it is gone."""

    def __init__(self) -> None:
        LEASES.mkdir(parents=True, exist_ok=True, mode=0o700)
        start = random.randrange(COUNT)
        for offset in range(COUNT):
            uid = FIRST_UID + (start + offset) % COUNT
            fd = self._lock(LEASES / str(uid))
            if fd is None:
                continue
            if os.pread(fd, 64, 0) and _uid_in_use(uid):  # a holder died: anything of it left?
                os.close(fd)
                continue
            os.ftruncate(fd, 0)
            os.pwrite(fd, b"leased\n", 0)  # removed on a clean release; left if we die
            self.uid, self._fd, self._path = uid, fd, LEASES / str(uid)
            return
        raise RuntimeError("no free job uid on this host")

    @staticmethod
    def _lock(path: Path) -> int | None:
        """The lease file, locked by us; None if another process holds it."""
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            # a releaser unlinks the file before unlocking: a lock on an unlinked file is no lease
            if os.fstat(fd).st_ino == os.stat(path).st_ino:
                return fd
        except (BlockingIOError, FileNotFoundError):
            pass
        os.close(fd)
        return None

    def release(self, clean: bool) -> None:
        """Give the uid back; ``clean`` says no process or file of it can remain (the lease file
        goes too, so the host is as before); otherwise the file stays, marked in use."""
        if self._fd < 0:
            return
        if clean:
            with contextlib.suppress(OSError):
                os.unlink(self._path)
        os.close(self._fd)
        self._fd = -1
