"""The report tests' stored runs (see report_runs.py), made once per session."""

from __future__ import annotations

import pytest
from report_runs import Runs, make_runs


@pytest.fixture(scope="session")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    return make_runs(tmp_path_factory.mktemp("report") / "runs.db")
