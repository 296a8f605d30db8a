"""Exports of stored trajectories: JSONL (the exact pydantic JSON), Parquet, datasets."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gymhub.types import Trajectory


def flat_row(t: Trajectory) -> dict[str, Any]:
    """One flat record per trajectory: the columns people filter on, plus the full JSON."""
    v = t.verdict
    return {
        "id": t.id,
        "task_id": t.task_id,
        "env_id": t.env_id,
        "sample_index": t.sample_index,
        "policy": t.policy,
        "seed": t.seed,
        "status": t.status,
        "error": t.error,
        "outcome": None if v is None else v.outcome,
        "path_signal": None if v is None else v.path_signal,
        "digest": None if v is None else v.digest,
        "rules_fired": [] if v is None else [e.rule for e in v.path_events],
        "num_turns": len(t.turns),
        "trajectory_json": t.model_dump_json(),
    }


def export_jsonl(trajectories: list[Trajectory], path: str | Path) -> int:
    with open(path, "w", encoding="utf-8") as fh:
        for t in trajectories:
            fh.write(t.model_dump_json() + "\n")
    return len(trajectories)


def read_jsonl(path: str | Path) -> list[Trajectory]:
    return [t for _, t in read_jsonl_lines(path)]


def read_jsonl_lines(path: str | Path) -> list[tuple[int, Trajectory]]:
    """(line number, trajectory) for each record; a bad line is a ValueError naming its number."""
    from pydantic import ValidationError

    records = []
    with open(path, encoding="utf-8") as fh:
        for number, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                records.append((number, Trajectory.model_validate_json(line)))
            except ValidationError as exc:
                first = exc.errors()[0]
                where = ".".join(str(p) for p in first.get("loc", ())) or "record"
                more = f" (and {exc.error_count() - 1} more problems)" if exc.error_count() > 1 else ""
                cut = "" if line.endswith("\n") else "; the line has no newline: is the file truncated?"
                raise ValueError(f"{path}, line {number}: {where}: {first['msg']}{more}{cut}") from None
    return records


def export_parquet(trajectories: list[Trajectory], path: str | Path) -> int:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pylist([flat_row(t) for t in trajectories])
    pq.write_table(table, str(path))
    return len(trajectories)


def to_dataset(trajectories: list[Trajectory]) -> Any:
    """A Hugging Face ``datasets.Dataset`` with one row per trajectory."""
    import datasets

    return datasets.Dataset.from_list([flat_row(t) for t in trajectories])


EXPORTERS = {"jsonl": export_jsonl, "parquet": export_parquet}
