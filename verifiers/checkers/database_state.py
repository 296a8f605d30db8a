"""Database state assertions: SQL queries against the final database, compared on the host.

Each assertion is a query (SQLAlchemy ``text`` with bound parameters) and what it must return:
a scalar, or rows (as lists, order-insensitive unless ``ordered``). Queries run in a read-only
transaction that is rolled back, so checking never changes the state it checks.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import create_engine, text
from sqlalchemy.engine import Engine
from sqlalchemy.exc import SQLAlchemyError


@dataclass(frozen=True)
class DbAssertion:
    name: str
    query: str
    expected: Any  # a scalar, or a list of rows (each a list)
    params: dict[str, Any] = field(default_factory=dict)
    rows: bool = False
    ordered: bool = False


@dataclass(frozen=True)
class DbReport:
    passed: int
    total: int
    failures: list[str]


def _normalise_rows(rows: list[Any], ordered: bool) -> list[list[Any]]:
    out = [list(r) for r in rows]
    return out if ordered else sorted(out, key=repr)


def check_database(database: str | Engine, assertions: list[DbAssertion]) -> DbReport:
    engine = create_engine(database) if isinstance(database, str) else database
    failures: list[str] = []
    try:
        with engine.connect() as conn:
            for assertion in assertions:
                try:
                    result = conn.execute(text(assertion.query), assertion.params)
                    if assertion.rows:
                        got: Any = _normalise_rows(list(result.fetchall()), assertion.ordered)
                        want: Any = _normalise_rows(assertion.expected, assertion.ordered)
                    else:
                        got, want = result.scalar(), assertion.expected
                except SQLAlchemyError as exc:
                    failures.append(f"{assertion.name}: query failed ({type(exc).__name__})")
                    conn.rollback()
                    continue
                if got != want:
                    failures.append(f"{assertion.name}: expected {want!r}, got {got!r}"[:300])
            conn.rollback()
    finally:
        if isinstance(database, str):
            engine.dispose()
    return DbReport(len(assertions) - len(failures), len(assertions), failures)
