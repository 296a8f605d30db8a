"""Schemathesis against the HTTP server's own OpenAPI document: whatever it is sent, the server
answers within its documented responses and never with a 5xx."""

from __future__ import annotations

import pytest

schemathesis = pytest.importorskip("schemathesis")

from hypothesis import HealthCheck, settings  # noqa: E402
from schemathesis.specs.openapi.checks import positive_data_acceptance  # noqa: E402

from gymhub.server import create_app  # noqa: E402

app = create_app(["toy-letters-v0"], max_sessions_per_client=10_000)
schema = schemathesis.openapi.from_asgi("/openapi.json", app)


@schema.parametrize()
@settings(max_examples=50, deadline=None, suppress_health_check=list(HealthCheck))
def test_every_operation_keeps_its_contract(case: schemathesis.Case) -> None:
    excluded = []
    if case.operation.path == "/verify":
        # A trajectory's turns have cross-field rules JSON Schema cannot state (one loss-mask
        # entry per token id, ...): a schema-valid body may still be refused, with a 422.
        excluded.append(positive_data_acceptance)
    case.call_and_validate(excluded_checks=excluded)
