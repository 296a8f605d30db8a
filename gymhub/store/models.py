"""SQLAlchemy 2 models: runs, tasks, trajectories, turns, verdicts, path events.

The pydantic types in :mod:`gymhub.types` are the source of truth; these tables hold them
row by row so runs can be queried (pass rates, rule firing rates) in SQL. Columns and
relationships carry the models' field names, so a row is written from ``model_dump()`` and
read back with ``model_validate(row, from_attributes=True)``.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, ClassVar

from sqlalchemy import (
    JSON,
    BigInteger,
    Float,
    ForeignKey,
    Integer,
    String,
    Text,
    TypeDecorator,
    UniqueConstraint,
)
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship


class Base(DeclarativeBase):
    type_annotation_map: ClassVar[dict[Any, Any]] = {dict[str, Any]: JSON, list[Any]: JSON}


class IntegerBool(TypeDecorator[bool]):
    """A bool kept in an INTEGER column (0 / 1), as stores have always held it."""

    impl = Integer
    cache_ok = True

    def process_bind_param(self, value: bool | None, dialect: Dialect) -> int | None:
        return None if value is None else int(value)

    def process_result_value(self, value: int | None, dialect: Dialect) -> bool | None:
        return None if value is None else bool(value)


def _now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


class RunRow(Base):
    __tablename__ = "runs"
    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    env_id: Mapped[str] = mapped_column(String(200), index=True)
    policy: Mapped[str] = mapped_column(Text)
    split: Mapped[str] = mapped_column(String(16))
    group_size: Mapped[int] = mapped_column(Integer)
    seed: Mapped[int] = mapped_column(BigInteger)
    task_ids: Mapped[list[Any]] = mapped_column(JSON)
    config: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    created_at: Mapped[dt.datetime] = mapped_column(default=_now)


class TaskRow(Base):
    """The public part of a task (never the hidden part)."""

    __tablename__ = "tasks"
    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    env_id: Mapped[str] = mapped_column(String(200))
    split: Mapped[str] = mapped_column(String(16))
    prompt: Mapped[str] = mapped_column(Text)
    task_metadata: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)


class TrajectoryRow(Base):
    __tablename__ = "trajectories"
    __table_args__ = (
        UniqueConstraint("run_id", "task_id", "sample_index", name="one_trajectory_per_sample"),
    )
    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id"), index=True)
    task_id: Mapped[str] = mapped_column(String(64), index=True)
    env_id: Mapped[str] = mapped_column(String(200))
    sample_index: Mapped[int] = mapped_column(Integer)
    policy: Mapped[str] = mapped_column(Text)
    seed: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    env_version: Mapped[str] = mapped_column(String(64))
    verifier_version: Mapped[str] = mapped_column(String(64))
    status: Mapped[str] = mapped_column(String(16))
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    truncated: Mapped[bool] = mapped_column(IntegerBool, default=False)
    timings: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    created_at: Mapped[dt.datetime] = mapped_column(default=_now)
    turns: Mapped[list[TurnRow]] = relationship(order_by="TurnRow.index", cascade="all, delete-orphan")
    verdict: Mapped[VerdictRow | None] = relationship(cascade="all, delete-orphan")


class TurnRow(Base):
    __tablename__ = "turns"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    trajectory_id: Mapped[str] = mapped_column(ForeignKey("trajectories.id"), index=True)
    index: Mapped[int] = mapped_column(Integer)
    source: Mapped[str] = mapped_column(String(8))
    messages: Mapped[list[Any]] = mapped_column(JSON)
    token_ids: Mapped[list[Any]] = mapped_column(JSON)
    logprobs: Mapped[list[Any] | None] = mapped_column(JSON, nullable=True)
    prompt_token_ids: Mapped[list[Any] | None] = mapped_column(JSON, nullable=True)
    loss_mask: Mapped[list[Any]] = mapped_column(JSON)
    timings: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)


class VerdictRow(Base):
    __tablename__ = "verdicts"
    trajectory_id: Mapped[str] = mapped_column(ForeignKey("trajectories.id"), primary_key=True)
    outcome: Mapped[float] = mapped_column(Float)
    path_signal: Mapped[float] = mapped_column(Float)
    details: Mapped[dict[str, Any]] = mapped_column(JSON)
    verifier: Mapped[str] = mapped_column(String(200))
    verifier_version: Mapped[str] = mapped_column(String(64))
    digest: Mapped[str] = mapped_column(String(64))
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    path_events: Mapped[list[PathEventRow]] = relationship(
        order_by="PathEventRow.index", cascade="all, delete-orphan"
    )


class PathEventRow(Base):
    __tablename__ = "path_events"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    trajectory_id: Mapped[str] = mapped_column(ForeignKey("verdicts.trajectory_id"), index=True)
    index: Mapped[int] = mapped_column(Integer)
    step: Mapped[int] = mapped_column(Integer)
    rule: Mapped[str] = mapped_column(String(200), index=True)
    kind: Mapped[str] = mapped_column(String(16))
    value: Mapped[float] = mapped_column(Float)
    evidence: Mapped[str] = mapped_column(Text)


class VerdictLabelRow(Base):
    """A person's review of one trajectory's verdict: right or wrong, and why (the latest wins)."""

    __tablename__ = "verdict_labels"
    trajectory_id: Mapped[str] = mapped_column(ForeignKey("trajectories.id"), primary_key=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id"), index=True)
    verdict_right: Mapped[bool] = mapped_column(IntegerBool)
    note: Mapped[str] = mapped_column(Text, default="")
    reviewer: Mapped[str] = mapped_column(String(200), default="")
    updated_at: Mapped[dt.datetime] = mapped_column(default=_now)
