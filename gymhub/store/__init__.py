"""The trajectory store: SQLite by default, PostgreSQL by URL (SQLAlchemy 2)."""

from gymhub.store.store import RunInfo, TrajectoryStore, open_store

__all__ = ["RunInfo", "TrajectoryStore", "open_store"]
