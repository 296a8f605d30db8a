"""A fresh PostgreSQL database per test, on the server `make test` starts."""

from __future__ import annotations


def fresh_pg_database(base: str, name: str) -> str:
    import re

    from sqlalchemy import create_engine, text

    db = "t_" + re.sub(r"[^a-z0-9_]", "_", name.lower())[:50]
    admin = create_engine(base, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{db}"'))
        conn.execute(text(f'CREATE DATABASE "{db}"'))
    admin.dispose()
    return base.rsplit("/", 1)[0] + "/" + db
