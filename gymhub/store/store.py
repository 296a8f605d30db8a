"""Commit each trajectory as it finishes; read runs back exactly as they were written."""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict
from sqlalchemy import Select, create_engine, event, inspect, select, tuple_
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import ArgumentError, IntegrityError, NoSuchModuleError, SQLAlchemyError
from sqlalchemy.orm import selectinload, sessionmaker

from gymhub.errors import StoreError
from gymhub.store.models import (
    Base,
    PathEventRow,
    RunRow,
    TaskRow,
    TrajectoryRow,
    TurnRow,
    VerdictLabelRow,
    VerdictRow,
)
from gymhub.types import Task, Trajectory

DEFAULT_URL = "sqlite:///gymhub.db"


class RunInfo(BaseModel):
    """A run as the store holds it: what was rolled out, on which tasks, with which settings."""

    model_config = ConfigDict(frozen=True, from_attributes=True)

    id: str
    env_id: str
    policy: str
    split: str
    group_size: int
    seed: int
    task_ids: list[str]
    config: dict[str, Any]


class VerdictLabel(BaseModel):
    """A person's review of one trajectory's verdict (``gymhub review``): right or wrong, and why."""

    model_config = ConfigDict(frozen=True, from_attributes=True)

    trajectory_id: str
    run_id: str
    verdict_right: bool
    note: str = ""
    reviewer: str = ""


def open_store(url: str | None = None, *, create: bool = True) -> TrajectoryStore:
    """Open the store at ``url``; a bare path means a SQLite file.

    ``create=True`` makes the file and the tables when missing (rollouts); ``create=False``
    (export, reports) refuses a store that does not exist yet, and creates nothing. Every way
    the URL can be wrong (unreachable server, missing folder, a folder, a file that is not a
    SQLite database) is a :class:`StoreError` that says which.
    """
    url = url or DEFAULT_URL
    if "://" not in url:
        url = f"sqlite:///{Path(url).expanduser().resolve()}"
    _check_sqlite_path(url, create)
    return TrajectoryStore(url, create=create)


def _check_sqlite_path(url: str, create: bool) -> None:
    """The checks SQLite itself answers with "unable to open database file"."""
    try:
        parsed = make_url(url)
    except ArgumentError as exc:
        raise StoreError(f"cannot open store {url!r}: {exc}") from exc
    if parsed.get_backend_name() != "sqlite" or parsed.database in (None, "", ":memory:"):
        return
    path = Path(parsed.database)
    if path.is_dir():
        raise StoreError(f"store {path} is a folder, not a SQLite file: give a file such as {path}/runs.db")
    if not path.exists():
        if not create:
            raise StoreError(f"no store at {path}: the file does not exist")
        if not path.parent.is_dir():
            raise StoreError(f"cannot create store {path}: the folder {path.parent} does not exist")


def _shown(url: str) -> str:
    """The URL as messages show it: never with its password."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return url


def _reason(exc: BaseException) -> str:
    """The driver's own first line (``connection refused``, ``file is not a database``)."""
    cause = getattr(exc, "orig", None) or exc
    lines = str(cause).strip().splitlines()
    return f"{type(cause).__name__}: {lines[0] if lines else ''}".rstrip(": ")


class TrajectoryStore:
    def __init__(self, url: str, *, create: bool = True) -> None:
        self.url = url
        try:
            self.engine: Engine = create_engine(url, future=True)
        except (ArgumentError, NoSuchModuleError, ValueError) as exc:
            raise StoreError(f"cannot open store {_shown(url)}: {exc}") from exc
        except ImportError as exc:
            extra = "postgres" if url.startswith("postgresql") else None
            hint = f"; pip install 'gymhub[{extra}]'" if extra else ""
            raise StoreError(f"cannot open store {_shown(url)}: {exc}{hint}") from exc
        if self.engine.dialect.name == "sqlite":
            event.listen(self.engine, "connect", _sqlite_pragmas)
        try:
            if create:
                Base.metadata.create_all(self.engine)
            elif not inspect(self.engine).has_table(RunRow.__tablename__):
                raise StoreError(f"{_shown(url)} holds no gymhub store (it has no runs table)")
        except SQLAlchemyError as exc:
            self.engine.dispose()
            raise StoreError(f"cannot open store {_shown(url)}: {_reason(exc)}") from exc
        except StoreError:
            self.engine.dispose()
            raise
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)

    def close(self) -> None:
        self.engine.dispose()

    # ------------------------------------------------------------------ writes
    def create_run(
        self,
        run_id: str,
        *,
        env_id: str,
        policy: str,
        split: str,
        group_size: int,
        seed: int,
        tasks: list[Task],
        config: dict[str, Any] | None = None,
    ) -> None:
        """Record a new run and its tasks' public part; a run id that exists is a StoreError."""
        if self.find_run(run_id) is not None:
            raise StoreError(
                f"run {run_id!r} already exists in {_shown(self.url)}: name another, or resume it"
            )
        try:
            self._insert_run(run_id, env_id, policy, split, group_size, seed, tasks, config)
        except IntegrityError as exc:  # another process took the id between the check and the insert
            raise StoreError(f"run {run_id!r} already exists in {_shown(self.url)}: {_reason(exc)}") from exc
        except SQLAlchemyError as exc:
            raise StoreError(f"cannot record run {run_id!r} in {_shown(self.url)}: {_reason(exc)}") from exc

    def _insert_run(
        self,
        run_id: str,
        env_id: str,
        policy: str,
        split: str,
        group_size: int,
        seed: int,
        tasks: list[Task],
        config: dict[str, Any] | None,
    ) -> None:
        with self._sessions() as session, session.begin():
            session.add(
                RunRow(
                    id=run_id,
                    env_id=env_id,
                    policy=policy,
                    split=split,
                    group_size=group_size,
                    seed=seed,
                    task_ids=[t.id for t in tasks],
                    config=config or {},
                )
            )
            known = set(session.scalars(select(TaskRow.id).where(TaskRow.id.in_([t.id for t in tasks]))))
            for task in tasks:
                if task.id not in known:
                    session.add(
                        TaskRow(
                            id=task.id,
                            env_id=task.env_id,
                            split=task.split,
                            prompt=task.prompt,
                            task_metadata=task.metadata,
                        )
                    )

    def add_trajectory(self, run_id: str, trajectory: Trajectory) -> bool:
        """Commit one trajectory; returns False if that (task, sample) was already stored.

        Only a unique-key violation means "already stored"; a foreign-key violation (the run is
        not in the store) is a :class:`StoreError`, never a silent False.
        """
        row = _trajectory_row(run_id, trajectory)
        try:
            with self._sessions() as session, session.begin():
                session.add(row)
        except IntegrityError as exc:
            if _violation(exc) == "unique":
                return False
            raise StoreError(
                f"cannot store trajectory {trajectory.id}: run {run_id!r} is not in {_shown(self.url)} "
                f"({_reason(exc)}); create the run first (gymhub.rollout(..., store=...) does)"
            ) from exc
        except SQLAlchemyError as exc:  # disk full, server gone: stop loudly, keep what is stored
            cause = getattr(exc, "orig", None) or exc
            raise StoreError(
                f"could not store trajectory {trajectory.id} of run {run_id}: "
                f"{type(cause).__name__}: {cause}. Everything finished before it is stored; "
                f"free space or fix the database, then `gymhub rollout --resume {run_id}`"
            ) from exc
        return True

    # ------------------------------------------------------------------ reads
    def get_run(self, run_id: str) -> RunInfo:
        found = self.find_run(run_id)
        if found is None:
            with self._reading(), self._sessions() as session:
                runs = list(session.scalars(select(RunRow.id).order_by(RunRow.created_at).limit(5)))
            listed = f"some runs: {', '.join(runs)} (`gymhub runs` lists all)" if runs else "it has no runs"
            raise StoreError(f"no run {run_id!r} in {_shown(self.url)}; {listed}")
        return found

    def find_run(self, run_id: str) -> RunInfo | None:
        """The run, or None when the store has no run of that id."""
        with self._reading(), self._sessions() as session:
            row = session.get(RunRow, run_id)
            return None if row is None else RunInfo.model_validate(row)

    def list_runs(self) -> list[RunInfo]:
        with self._reading(), self._sessions() as session:
            ids = list(session.scalars(select(RunRow.id).order_by(RunRow.created_at)))
        return [self.get_run(i) for i in ids]

    def run_counts(self) -> dict[str, tuple[int, int]]:
        """run id -> (trajectories stored, of which errored), for every run in the store."""
        from sqlalchemy import case, func

        query = select(
            TrajectoryRow.run_id,
            func.count(),
            func.sum(case((TrajectoryRow.status == "errored", 1), else_=0)),
        ).group_by(TrajectoryRow.run_id)
        with self._reading(), self._sessions() as session:
            return {run_id: (int(n), int(errored or 0)) for run_id, n, errored in session.execute(query)}

    @contextlib.contextmanager
    def _reading(self) -> Iterator[None]:
        """Database failures on reads (a truncated file, a server gone) as one StoreError."""
        try:
            yield
        except SQLAlchemyError as exc:
            raise StoreError(f"cannot read {_shown(self.url)}: {_reason(exc)}") from exc

    def stored_keys(self, run_id: str) -> set[tuple[str, int]]:
        with self._reading(), self._sessions() as session:
            rows = session.execute(
                select(TrajectoryRow.task_id, TrajectoryRow.sample_index).where(
                    TrajectoryRow.run_id == run_id
                )
            )
            return {(task_id, k) for task_id, k in rows}

    def load_trajectories(self, run_id: str, task_id: str | None = None) -> list[Trajectory]:
        """The run's trajectories (of one task, with ``task_id``) in (task, sample) order."""
        return list(self.iter_trajectories(run_id, task_id=task_id))

    def load_group(self, run_id: str, task_id: str) -> list[Trajectory]:
        return self.load_trajectories(run_id, task_id)

    def iter_trajectories(
        self, run_id: str, *, task_id: str | None = None, batch_size: int = 500
    ) -> Iterator[Trajectory]:
        """The run's trajectories in (task, sample) order, read ``batch_size`` at a time (keyset
        pages): memory stays flat however many the run holds."""
        query = _trajectories_where(TrajectoryRow.run_id == run_id)
        if task_id is not None:
            query = query.where(TrajectoryRow.task_id == task_id)
        query = query.order_by(TrajectoryRow.task_id, TrajectoryRow.sample_index).limit(batch_size)
        page = self._read_trajectories(query)
        yield from page
        while len(page) == batch_size:
            after = tuple_(TrajectoryRow.task_id, TrajectoryRow.sample_index) > tuple_(
                page[-1].task_id, page[-1].sample_index
            )
            page = self._read_trajectories(query.where(after))
            yield from page

    def load_trajectory(self, run_id: str, trajectory_id: str) -> Trajectory | None:
        """One trajectory of a run, or None when the run has no trajectory of that id."""
        query = _trajectories_where(TrajectoryRow.run_id == run_id, TrajectoryRow.id == trajectory_id)
        found = self._read_trajectories(query)
        return found[0] if found else None

    def _read_trajectories(self, query: Select[TrajectoryRow]) -> list[Trajectory]:
        with self._reading(), self._sessions() as session:
            return [Trajectory.model_validate(row, from_attributes=True) for row in session.scalars(query)]

    def task_prompts(self, task_ids: list[str]) -> dict[str, str]:
        """task id -> its prompt (the public part), for the tasks the store knows."""
        found: dict[str, str] = {}
        with self._reading(), self._sessions() as session:
            for start in range(0, len(task_ids), 500):  # bound the number of SQL parameters
                chunk = task_ids[start : start + 500]
                rows = session.execute(select(TaskRow.id, TaskRow.prompt).where(TaskRow.id.in_(chunk)))
                found.update((task_id, prompt) for task_id, prompt in rows)
        return found

    def pass_counts(self, run_id: str) -> dict[str, tuple[int, int]]:
        """task id -> (samples stored, samples that passed: a verdict without error, outcome 1).

        An errored episode is a sample that did not pass (what pass@k counts)."""
        from sqlalchemy import and_, case, func

        passed = and_(TrajectoryRow.status == "ok", VerdictRow.error.is_(None), VerdictRow.outcome >= 1.0)
        query = (
            select(TrajectoryRow.task_id, func.count(), func.sum(case((passed, 1), else_=0)))
            .outerjoin(VerdictRow, VerdictRow.trajectory_id == TrajectoryRow.id)
            .where(TrajectoryRow.run_id == run_id)
            .group_by(TrajectoryRow.task_id)
        )
        with self._reading(), self._sessions() as session:
            return {task_id: (int(n), int(c or 0)) for task_id, n, c in session.execute(query)}

    # ------------------------------------------------------------------ verdict labels
    def set_label(
        self, run_id: str, trajectory_id: str, *, verdict_right: bool, note: str = "", reviewer: str = ""
    ) -> VerdictLabel:
        """Record a person's review of a trajectory's verdict; a second review replaces the first."""
        with self._reading(), self._sessions() as session, session.begin():
            owner = session.scalar(select(TrajectoryRow.run_id).where(TrajectoryRow.id == trajectory_id))
            if owner != run_id:
                raise StoreError(f"run {run_id!r} has no trajectory {trajectory_id!r} in {_shown(self.url)}")
            row = session.get(VerdictLabelRow, trajectory_id)
            if row is None:
                row = VerdictLabelRow(trajectory_id=trajectory_id, run_id=run_id)
                session.add(row)
            row.verdict_right = verdict_right
            row.note = note
            row.reviewer = reviewer
            row.updated_at = _now_utc()
            return VerdictLabel.model_validate(row)

    def labels(self, run_id: str) -> dict[str, VerdictLabel]:
        """trajectory id -> the review of its verdict, for the run's reviewed trajectories."""
        query = select(VerdictLabelRow).where(VerdictLabelRow.run_id == run_id)
        with self._reading(), self._sessions() as session:
            return {row.trajectory_id: VerdictLabel.model_validate(row) for row in session.scalars(query)}


def _now_utc() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


def _violation(exc: IntegrityError) -> str:
    """``unique`` or ``foreign-key`` (or ``other``), on SQLite and PostgreSQL alike."""
    cause = getattr(exc, "orig", None)
    sqlstate = getattr(cause, "sqlstate", None) or getattr(cause, "pgcode", None)
    if sqlstate == "23505":
        return "unique"
    if sqlstate == "23503":
        return "foreign-key"
    text = str(cause).upper()
    if "UNIQUE" in text or "PRIMARY KEY" in text:
        return "unique"
    if "FOREIGN KEY" in text:
        return "foreign-key"
    return "other"


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")  # readers never block the committing writer
    cursor.execute("PRAGMA synchronous=NORMAL")  # durable across a killed process
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


def _trajectories_where(*conditions: Any) -> Select[TrajectoryRow]:
    """Trajectory rows with their turns, verdicts and path events loaded in the same read."""
    return (
        select(TrajectoryRow)
        .where(*conditions)
        .options(
            selectinload(TrajectoryRow.turns),
            selectinload(TrajectoryRow.verdict).selectinload(VerdictRow.path_events),
        )
    )


def _columns(table: type[Base], fields: dict[str, Any]) -> dict[str, Any]:
    """The fields of a model's ``model_dump()`` that are columns of ``table``."""
    names = table.__table__.columns.keys()
    return {name: value for name, value in fields.items() if name in names}


def _trajectory_row(run_id: str, t: Trajectory) -> TrajectoryRow:
    fields = t.model_dump()
    row = TrajectoryRow(run_id=run_id, **_columns(TrajectoryRow, fields))
    row.turns = [TurnRow(index=i, **_columns(TurnRow, turn)) for i, turn in enumerate(fields["turns"])]
    if fields["verdict"] is not None:
        row.verdict = VerdictRow(**_columns(VerdictRow, fields["verdict"]))
        row.verdict.path_events = [
            PathEventRow(index=i, **_columns(PathEventRow, event))
            for i, event in enumerate(fields["verdict"]["path_events"])
        ]
    return row
