"""Sandbox backends (installed as ``gymhub.sandboxes``).

Each backend runs jobs behind one protocol (:class:`~gymhub.sandboxes.base.Sandbox`).
Backends are looked up by name in :data:`BACKENDS`, never through if-chains.
"""

from __future__ import annotations

import importlib
from typing import Any

from gymhub.sandboxes.base import ExecResult, FileEntry, Limits, Sandbox
from gymhub.sandboxes.bwrap import BwrapSandbox
from gymhub.sandboxes.local import LocalSandbox, UnsafeLocalSandbox

# name -> class; "docker" loads lazily (the docker SDK is an extra)
BACKENDS: dict[str, Any] = {
    "local": LocalSandbox,
    "local-unsafe": UnsafeLocalSandbox,
    "bwrap": BwrapSandbox,
    "docker": "gymhub.sandboxes.docker_backend:DockerSandbox",
}


def create_sandbox(backend: str = "local", **options: Any) -> Sandbox:
    """Build a sandbox of the named backend."""
    from gymhub.errors import SandboxError

    try:
        cls = BACKENDS[backend]
    except KeyError:
        raise SandboxError(f"unknown sandbox backend {backend!r}; known: {sorted(BACKENDS)}") from None
    if isinstance(cls, str):
        module_name, _, attr = cls.partition(":")
        cls = getattr(importlib.import_module(module_name), attr)
    return cls(**options)  # type: ignore[no-any-return,unused-ignore]


__all__ = [
    "BACKENDS",
    "BwrapSandbox",
    "ExecResult",
    "FileEntry",
    "Limits",
    "LocalSandbox",
    "Sandbox",
    "UnsafeLocalSandbox",
    "create_sandbox",
]
