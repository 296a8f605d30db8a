from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from gymhub.sandboxes import create_sandbox
from gymhub.sandboxes.bwrap import bwrap_available
from gymhub.sandboxes.job_client import JobServerSandbox

BACKENDS = ["local", "bwrap", "docker"]


def unavailable(backend: str) -> str | None:
    if backend == "bwrap":
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


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    require(request.param)
    return str(request.param)


@pytest.fixture
def box(backend: str) -> Iterator[JobServerSandbox]:
    sandbox = create_sandbox(backend)
    yield sandbox  # type: ignore[misc]
    sandbox.close()
