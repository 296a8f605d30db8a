from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).parent))


def pytest_configure(config: pytest.Config) -> None:
    try:
        import torch

        torch.set_num_threads(1)  # two threads on two shared cores can be 10x slower
    except ImportError:
        pass


@pytest.fixture(scope="session")
def tiny_model_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tiny_model import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("models") / "tiny")


@pytest.fixture(scope="session")
def postgres_url() -> str:
    url = os.environ.get("GYMHUB_TEST_POSTGRES_URL")
    if not url:
        if os.environ.get("CI") == "true":
            pytest.fail(
                "CI=true but GYMHUB_TEST_POSTGRES_URL is unset: `make test` starts "
                "PostgreSQL (scripts/start_postgres.sh); run the tests through it"
            )
        pytest.skip(
            "PostgreSQL not available: set GYMHUB_TEST_POSTGRES_URL "
            "(`make test` starts one with scripts/start_postgres.sh)"
        )
    return url


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'store.db'}"
    base: str = request.getfixturevalue("postgres_url")
    from databases import fresh_pg_database

    return fresh_pg_database(base, tmp_path.name)
