"""Sandbox backends (installed as ``gymhub.sandboxes``).

Each backend runs jobs behind one protocol (:class:`~gymhub.sandboxes.base.Sandbox`).
Backends are looked up by name in :data:`BACKENDS`, never through if-chains.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gymhub.errors import SandboxError
from gymhub.registry import load_part
from gymhub.sandboxes.base import ExecResult, FileEntry, Limits, Sandbox
from gymhub.sandboxes.bwrap import BwrapSandbox
from gymhub.sandboxes.local import LocalSandbox, UnsafeLocalSandbox

# name -> factory taking the backend's options; "docker" loads lazily (the docker SDK is an extra)
BACKENDS: dict[str, Callable[..., Sandbox]] = {
    "local": LocalSandbox,
    "local-unsafe": UnsafeLocalSandbox,
    "bwrap": BwrapSandbox,
    "docker": lambda **options: load_part("gymhub.sandboxes.docker_backend:DockerSandbox")(**options),
}


def create_sandbox(backend: str = "local", **options: Any) -> Sandbox:
    """Build a sandbox of the named backend."""
    if backend not in BACKENDS:
        raise SandboxError(f"unknown sandbox backend {backend!r}; known: {sorted(BACKENDS)}")
    return BACKENDS[backend](**options)


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
