"""Which sandbox backends this machine has; a missing one skips loudly, or fails under CI."""

from __future__ import annotations

import os

import pytest

BACKENDS = ["local", "bwrap", "docker"]


def unavailable(backend: str) -> str | None:
    if backend == "bwrap":
        from gymhub.sandboxes.bwrap import bwrap_available

        return bwrap_available()
    if backend == "docker":
        from gymhub.sandboxes.docker_backend import docker_available

        return docker_available()
    return None


def require(backend: str) -> None:
    reason = unavailable(backend)
    if reason:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true but the {backend} backend is unavailable: {reason}")
        pytest.skip(f"*** {backend} backend unavailable here: {reason} ***")
