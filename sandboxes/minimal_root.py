"""What of the host a job may see: the system folders and the interpreter, read-only, and
nothing else — no checkout, no site-packages or virtual env (gymhub's task generators and
reference solutions live there: an answer key), no databases, no /tmp, /run or homes.

One description, used by both backends that run on the host's file system: ``local`` builds
it itself (``job_server.build_jail``), ``bwrap`` turns it into bubblewrap arguments.
"""

from __future__ import annotations

import glob
import os
import sys
import sysconfig
from dataclasses import dataclass, field

SYSTEM = ("/usr", "/etc")
TOP_LINKS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")  # merged-/usr symlinks


@dataclass(frozen=True)
class MinimalRoot:
    binds: list[str] = field(default_factory=list)  # host folders, bound read-only at the same path
    masks: list[str] = field(default_factory=list)  # folders inside them hidden by an empty tmpfs
    links: dict[str, str] = field(default_factory=dict)  # symlinks to recreate (/bin -> usr/bin)

    def describe(self) -> str:
        return (
            f"minimal root: {', '.join(self.binds)} read-only; {len(self.masks)} site-packages "
            "folders masked; private /tmp, /var/tmp, /dev/shm, /dev/mqueue, /proc and work dir; "
            "nothing else of the host (no checkout, venv, databases, /run, /home, /root)"
        )


def _under(path: str, folders: list[str]) -> bool:
    return any(path == f or path.startswith(f.rstrip("/") + "/") for f in folders)


def interpreter() -> tuple[str, str]:
    """The real interpreter (not a pyenv shim or venv link) and its prefix to expose."""
    return os.path.realpath(sys.executable), os.path.realpath(sys.base_prefix)


def package_folders() -> set[str]:
    """Every folder that holds installed packages: the interpreter's site-packages, Debian's
    dist-packages, and whatever on this process's import path is not the standard library."""
    _, prefix = interpreter()
    stdlib = {os.path.realpath(sysconfig.get_paths()[k]) for k in ("stdlib", "platstdlib")}
    dynload = {os.path.join(p, "lib-dynload") for p in stdlib}
    found = set()
    for base in {prefix, "/usr", "/usr/local"}:
        for pattern in (
            "lib*/python3*/site-packages",
            "lib*/python3*/dist-packages",
            "lib/python3/dist-packages",
        ):
            found.update(glob.glob(os.path.join(base, pattern)))
    for entry in sys.path:
        real = os.path.realpath(entry) if entry else ""
        if real and os.path.isdir(real) and real not in stdlib | dynload:
            found.add(real)
    return {os.path.realpath(p) for p in found}


def minimal_root() -> MinimalRoot:
    binds = [p for p in SYSTEM if os.path.isdir(p) and not os.path.islink(p)]
    links: dict[str, str] = {}
    for path in TOP_LINKS:
        if os.path.islink(path):
            links[path] = os.readlink(path)
        elif os.path.isdir(path):
            binds.append(path)
    _, prefix = interpreter()
    if not _under(prefix, binds):
        binds.append(prefix)
    masks = sorted(p for p in package_folders() if _under(p, binds) and p not in binds)
    return MinimalRoot(binds=binds, masks=masks, links=links)
