from __future__ import annotations

from collections.abc import Iterator

import pytest
from backends import BACKENDS, require

from gymhub.sandboxes import create_sandbox
from gymhub.sandboxes.job_client import JobServerSandbox


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    require(request.param)
    return str(request.param)


@pytest.fixture
def box(backend: str) -> Iterator[JobServerSandbox]:
    sandbox = create_sandbox(backend)
    yield sandbox  # type: ignore[misc]
    sandbox.close()
