"""The trajectory store: SQLite by default, PostgreSQL by URL (SQLAlchemy 2)."""

from gymhub.store.store import RunInfo, TrajectoryStore, VerdictLabel, open_store

__all__ = ["RunInfo", "TrajectoryStore", "VerdictLabel", "open_store"]
