"""The reusable checkers, each against real inputs (real databases, a real sandbox)."""

from __future__ import annotations

import hashlib
import time

import pytest
from pydantic import BaseModel
from sqlalchemy import create_engine, text

from gymhub.sandboxes import LocalSandbox
from gymhub.verifiers.checkers.database_state import DbAssertion, check_database
from gymhub.verifiers.checkers.filesystem_state import FileAssertion, check_files
from gymhub.verifiers.checkers.math_equivalence import math_equivalent
from gymhub.verifiers.checkers.structured_output import validate_json_schema, validate_model
from gymhub.verifiers.checkers.text_match import exact_match, normalize_answer, normalized_match, token_f1


def test_text_matchers() -> None:
    assert normalize_answer("  The Quick, brown FOX!  ") == "quick brown fox"
    assert exact_match("Paris", ["paris", "Paris"]) and not exact_match("paris", "Paris")
    assert normalized_match("the Eiffel tower.", "Eiffel Tower")
    # pred: eiffel tower in paris (4), gold: eiffel tower (2): P = 1/2, R = 1, F1 = 2/3
    assert token_f1("Eiffel Tower in Paris", "the Eiffel Tower") == pytest.approx(2 / 3)
    assert token_f1("", "x") == 0.0 and token_f1("", "") == 1.0
    assert token_f1("London", ["Paris", "london"]) == 1.0


@pytest.mark.parametrize(
    "answer,gold,equal",
    [
        ("0.5", r"$\frac{1}{2}$", True),
        (r"$(x+1)^2$", r"$x^2+2x+1$", True),
        (r"\boxed{3}", "3", True),
        ("4", "3", False),
        ("no idea", "3", False),
    ],
)
def test_math_equivalence(answer: str, gold: str, equal: bool) -> None:
    assert math_equivalent(answer, gold) is equal


def test_math_equivalence_survives_a_hostile_answer() -> None:
    start = time.monotonic()
    assert math_equivalent("9^9^9^9^9^9", "3", timeout=2) is False
    assert time.monotonic() - start < 60
    assert math_equivalent("3", "3") is True  # the worker is usable again


class Answer(BaseModel):
    answer: int
    reason: str = ""


def test_structured_output() -> None:
    schema = {"type": "object", "required": ["answer"], "properties": {"answer": {"type": "integer"}}}
    good = validate_json_schema('Here you go:\n```json\n{"answer": 42}\n```', schema)
    assert good.ok and good.value == {"answer": 42}
    bad = validate_json_schema('{"answer": "42"}', schema)
    assert not bad.ok and "answer" in bad.errors[0]
    assert validate_json_schema("no json here", schema).errors == ["no JSON value found"]
    assert validate_model('{"answer": 7}', Answer).value == {"answer": 7, "reason": ""}
    assert not validate_model('{"answer": "x"}', Answer).ok


@pytest.fixture(params=["sqlite", "postgresql"])
def database(request: pytest.FixtureRequest, tmp_path) -> str:  # type: ignore[no-untyped-def]
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'app.db'}"
    else:
        from databases import fresh_pg_database

        url = fresh_pg_database(request.getfixturevalue("postgres_url"), tmp_path.name + "_db")
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE orders (id INTEGER PRIMARY KEY, status TEXT, refund INTEGER)"))
        conn.execute(text("INSERT INTO orders VALUES (1, 'refunded', 30), (2, 'open', 0), (3, 'open', 0)"))
    engine.dispose()
    return url


def test_database_assertions(database: str) -> None:
    report = check_database(
        database,
        [
            DbAssertion("refunded", "SELECT status FROM orders WHERE id = :id", "refunded", {"id": 1}),
            DbAssertion("open ones", "SELECT id FROM orders WHERE status = 'open'", [[3], [2]], rows=True),
            DbAssertion("total refund", "SELECT SUM(refund) FROM orders", 31),
            DbAssertion("broken", "SELECT nope FROM orders", 1),
        ],
    )
    assert (report.passed, report.total) == (2, 4)
    assert report.failures[0].startswith("total refund: expected 31, got 30")
    assert report.failures[1] in (
        "broken: query failed (ProgrammingError)",
        "broken: query failed (OperationalError)",
    )
    again = check_database(database, [DbAssertion("count", "SELECT COUNT(*) FROM orders", 3)])
    assert again.passed == 1  # checking changed nothing


def test_filesystem_assertions() -> None:
    with LocalSandbox() as box:
        box.write_file("out/report.txt", b"total: 42\n")
        box.write_file("run.sh", b"#!/bin/sh\necho hi\n", mode=0o755)
        report = check_files(
            box,
            [
                FileAssertion("out/report.txt", contains="total: 42"),
                FileAssertion("out/report.txt", sha256=hashlib.sha256(b"total: 42\n").hexdigest()),
                FileAssertion("run.sh", mode=0o755, content="#!/bin/sh\necho hi\n"),
                FileAssertion("secret.key", exists=False),
                FileAssertion("out/missing.txt"),
                FileAssertion("out/report.txt", mode=0o600),
            ],
        )
        assert (report.passed, report.total) == (4, 6)
        assert report.failures == ["out/missing.txt: missing", "out/report.txt: mode 0o644, expected 0o600"]
