"""Sandbox backends (installed as ``gymhub.sandboxes``).

Each backend runs jobs behind one protocol (:class:`~gymhub.sandboxes.base.Sandbox`).
Backends are looked up by name in :data:`BACKENDS`, never through if-chains.
"""

from __future__ import annotations

from typing import Any

from gymhub.sandboxes.base import ExecResult, FileEntry, Limits, Sandbox
from gymhub.sandboxes.local import LocalSandbox

BACKENDS: dict[str, type[Sandbox]] = {"local": LocalSandbox}


def create_sandbox(backend: str = "local", **options: Any) -> Sandbox:
    """Build a sandbox of the named backend."""
    from gymhub.errors import SandboxError

    try:
        cls = BACKENDS[backend]
    except KeyError:
        raise SandboxError(f"unknown sandbox backend {backend!r}; known: {sorted(BACKENDS)}") from None
    return cls(**options)


__all__ = ["BACKENDS", "ExecResult", "FileEntry", "Limits", "LocalSandbox", "Sandbox", "create_sandbox"]
