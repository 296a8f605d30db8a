"""The store, on SQLite and on a real PostgreSQL server."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from sqlalchemy import create_engine, text

import gymhub
from gymhub.store import open_store
from gymhub.store.export import export_jsonl, export_parquet, read_jsonl, to_dataset
from gymhub.types import Message, PathEvent, ToolCall, Trajectory, Turn, Verdict


def _run(
    store_url: str,
    env_id: str = "code-python-v0",
    variant: str = "reference",
    n: int = 4,
    g: int = 2,
    run_id: str = "run1",
) -> list[Trajectory]:
    store = open_store(store_url)
    env = gymhub.make(env_id)
    store.create_run(
        run_id, env_id=env_id, policy=variant, split="train", group_size=g, seed=0, tasks=env.tasks[:n]
    )
    gymhub.rollout(
        env_id, f"reference:{variant}", tasks=env.tasks[:n], group_size=g, store=store, run_id=run_id
    )
    trajectories = store.load_trajectories(run_id)
    store.close()
    return trajectories


def test_round_trip_is_exact(store_url: str) -> None:
    stored = _run(store_url, variant="os-exit")
    assert len(stored) == 8
    again = gymhub.rollout("code-python-v0", "reference:os-exit", tasks=4, group_size=2, run_id="run1")
    fresh = {t.id: t for g in again for t in g.trajectories}
    for t in stored:
        # timings differ between runs; everything else must be identical
        assert t.model_copy(update={"timings": {}}).turns == fresh[t.id].turns
        assert t.verdict == fresh[t.id].verdict
        assert t.verdict.path_events[0].rule == "exit-call"


def test_floats_and_tokens_round_trip(store_url: str) -> None:
    store = open_store(store_url)
    env = gymhub.make("toy-letters-v0")
    store.create_run(
        "r", env_id="toy-letters-v0", policy="p", split="train", group_size=1, seed=0, tasks=env.tasks[:1]
    )
    t = Trajectory(
        id="t1",
        task_id=env.tasks[0].id,
        env_id="toy-letters-v0",
        turns=(
            Turn(source="env", messages=(Message(role="user", content="say a é 中"),)),
            Turn(
                source="policy",
                messages=(Message(role="assistant", content="a"),),
                token_ids=(1, 2, 3),
                logprobs=(-0.1, -1e-300, -123.456789012345678),
                loss_mask=(1, 1, 1),
                timings={"generate_s": 0.1 + 0.2},
            ),
        ),
    )
    assert store.add_trajectory("r", t)
    assert store.load_trajectories("r") == [t]


def test_every_field_round_trips_and_bools_stay_integers_in_the_table(store_url: str) -> None:
    """Rows are written from model_dump() and read back with model_validate: every field of a
    trajectory (tool calls, path events, an errored and truncated episode) comes back equal,
    and the columns keep the layout older stores have (truncated, verdict_right: 0 / 1)."""
    store = open_store(store_url)
    env = gymhub.make("toy-letters-v0")
    store.create_run(
        "r", env_id="toy-letters-v0", policy="p", split="train", group_size=1, seed=0, tasks=env.tasks[:1]
    )
    call = ToolCall(id="c1", name="grade", arguments='{"score": 1}')
    verdict = Verdict.build(
        verifier="v",
        verifier_version="2",
        outcome=0.5,
        path_events=[PathEvent(step=1, rule="forbidden-tool", kind="penalty", value=-0.25, evidence="grade")],
        details={"tests": [3, 5]},
    ).model_copy(update={"digest": "d" * 64, "error": "late"})
    t = Trajectory(
        id="t1",
        task_id=env.tasks[0].id,
        env_id="toy-letters-v0",
        turns=(
            Turn(source="policy", messages=(Message(role="assistant", tool_calls=(call,)),)),
            Turn(
                source="env",
                messages=(Message(role="tool", content="no", tool_call_id="c1", name="grade"),),
            ),
        ),
        verdict=verdict,
        policy="p",
        seed=7,
        env_version="1",
        verifier_version="2",
        status="errored",
        error="boom",
        truncated=True,
        timings={"episode_s": 1.5},
    )
    assert store.add_trajectory("r", t)
    assert store.load_trajectories("r") == [t]
    assert store.load_trajectory("r", "t1") == t
    store.set_label("r", "t1", verdict_right=False, note="no")
    assert store.labels("r")["t1"].verdict_right is False
    with create_engine(store_url).connect() as conn:
        assert conn.execute(text("SELECT truncated FROM trajectories")).scalar_one() == 1
        assert conn.execute(text("SELECT verdict_right FROM verdict_labels")).scalar_one() == 0
    store.close()


def test_duplicates_are_refused(store_url: str) -> None:
    _run(store_url, n=2, g=1)
    store = open_store(store_url)
    [first, *_] = store.load_trajectories("run1")
    assert store.add_trajectory("run1", first) is False
    assert store.add_trajectory("run1", first.model_copy(update={"id": "other"})) is False
    assert len(store.load_trajectories("run1")) == 2


def test_unknown_run_is_a_clear_error(store_url: str) -> None:
    with pytest.raises(gymhub.StoreError, match="no run"):
        open_store(store_url).get_run("nope")


def test_exports(tmp_path: Path) -> None:
    stored = _run(f"sqlite:///{tmp_path / 'e.db'}", n=3, g=2)
    assert export_jsonl(stored, tmp_path / "o.jsonl") == 6
    assert read_jsonl(tmp_path / "o.jsonl") == stored
    export_parquet(stored, tmp_path / "o.parquet")
    table = pq.read_table(tmp_path / "o.parquet").to_pylist()
    assert [r["id"] for r in table] == [t.id for t in stored]
    assert Trajectory.model_validate_json(table[0]["trajectory_json"]) == stored[0]
    dataset = to_dataset(stored)
    assert len(dataset) == 6 and set(dataset["outcome"]) == {1.0}


def _count(url: str, run_id: str) -> tuple[int, int]:
    engine = create_engine(url)
    with engine.connect() as conn:
        total = conn.execute(
            text("SELECT count(*) FROM trajectories WHERE run_id = :r"), {"r": run_id}
        ).scalar_one()
        distinct = conn.execute(
            text(
                "SELECT count(*) FROM (SELECT DISTINCT task_id, sample_index FROM trajectories "
                "WHERE run_id = :r) AS d"
            ),
            {"r": run_id},
        ).scalar_one()
    engine.dispose()
    return total, distinct


def test_sigkill_mid_run_then_resume_loses_nothing_and_duplicates_nothing(store_url: str) -> None:
    tasks, g = 60, 2
    cmd = [
        sys.executable,
        "-m",
        "gymhub",
        "rollout",
        "code-python-v0",
        "--tasks",
        str(tasks),
        "-g",
        str(g),
        "--db",
        store_url,
        "--run-id",
        "killme",
        "--json",
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.time() + 60
    stored = 0
    while time.time() < deadline:
        time.sleep(0.2)
        try:
            stored = _count(store_url, "killme")[0]
        except Exception:  # the tables may not exist yet
            continue
        if stored >= 10:
            break
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    partial, _ = _count(store_url, "killme")
    assert 10 <= partial < tasks * g, "the kill must land mid-run"
    resumed = subprocess.run(
        [
            sys.executable,
            "-m",
            "gymhub",
            "rollout",
            "code-python-v0",
            "--db",
            store_url,
            "--resume",
            "killme",
            "--json",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    summary = json.loads(resumed.stdout)
    assert summary["trajectories"] == tasks * g
    assert summary["new_trajectories"] == tasks * g - partial
    assert _count(store_url, "killme") == (tasks * g, tasks * g)
    assert summary["mean_outcome"] == 1.0 and summary["errors"] == 0


def test_a_full_disk_stops_the_run_with_a_clear_error_and_keeps_what_finished(
    tmp_path: Path,
) -> None:
    from sqlalchemy import event

    store = open_store(str(tmp_path / "full.db"))
    env = gymhub.make("toy-letters-v0")
    store.create_run(
        "full",
        env_id="toy-letters-v0",
        policy="reference",
        split="train",
        group_size=4,
        seed=0,
        tasks=env.tasks,
    )
    with store.engine.connect() as conn:
        pages = conn.exec_driver_sql("PRAGMA page_count").scalar_one()
    # SQLite's own "database or disk is full" (SQLITE_FULL), a few pages from now
    event.listen(store.engine, "connect", lambda c, _r: c.execute(f"PRAGMA max_page_count={pages + 6}"))
    store.engine.dispose()
    with pytest.raises(gymhub.StoreError, match="full") as info:
        gymhub.rollout(
            "toy-letters-v0", "reference", tasks=env.tasks, group_size=4, store=store, run_id="full"
        )
    assert "--resume full" in str(info.value)
    kept = store.load_trajectories("full")
    assert 0 < len(kept) < len(env.tasks) * 4
    assert all(t.verdict is not None and t.verdict.outcome == 1.0 for t in kept)


def test_rollout_with_a_store_records_the_run_itself(store_url: str) -> None:
    store = open_store(store_url)
    groups = gymhub.rollout("toy-letters-v0", "reference", tasks=3, group_size=2, store=store, run_id="auto")
    run = store.get_run("auto")
    assert (run.env_id, run.policy, run.group_size, len(run.task_ids)) == (
        "toy-letters-v0",
        "reference",
        2,
        3,
    )
    assert len(store.load_trajectories("auto")) == 6 == sum(len(g.trajectories) for g in groups)
    unnamed = gymhub.rollout("toy-letters-v0", "reference", tasks=1, store=store)
    assert len(store.list_runs()) == 2 and len(unnamed) == 1  # a new id when none is given
    store.close()


def test_resume_from_python_runs_only_what_is_missing(store_url: str) -> None:
    store = open_store(store_url)
    gymhub.rollout("toy-letters-v0", "reference", tasks=3, group_size=2, store=store, run_id="r", seed=7)
    engine = create_engine(store_url)
    with engine.begin() as conn:  # lose two trajectories, as a killed run would never have stored them
        ids = [row[0] for row in conn.execute(text("SELECT id FROM trajectories ORDER BY id LIMIT 2"))]
        for table, column in (
            ("path_events", "trajectory_id"),
            ("verdicts", "trajectory_id"),
            ("turns", "trajectory_id"),
        ):
            conn.execute(text(f"DELETE FROM {table} WHERE {column} IN (:a, :b)"), {"a": ids[0], "b": ids[1]})
        conn.execute(text("DELETE FROM trajectories WHERE id IN (:a, :b)"), {"a": ids[0], "b": ids[1]})
    engine.dispose()
    with pytest.raises(gymhub.StoreError, match="resume=True"):
        gymhub.rollout("toy-letters-v0", "reference", tasks=3, group_size=2, store=store, run_id="r")
    with pytest.raises(gymhub.StoreError, match="seed=7"):
        gymhub.rollout("toy-letters-v0", "reference", store=store, run_id="r", resume=True, seed=0)
    with pytest.raises(gymhub.StoreError, match="rolls out toy-letters-v0"):
        gymhub.rollout("toy-json-v0", "reference", store=store, run_id="r", resume=True)
    seen: list[str] = []
    groups = gymhub.rollout(
        "toy-letters-v0",
        "reference",
        store=store,
        run_id="r",
        resume=True,
        on_trajectory=lambda t: seen.append(t.id),
    )
    assert sorted(seen) == sorted(ids)  # only the two missing ones ran
    assert all(len(g.trajectories) == 2 for g in groups)  # groups are completed from the store
    assert len(store.load_trajectories("r")) == 6
    with pytest.raises(gymhub.StoreError, match="no run 'nope'"):
        gymhub.rollout("toy-letters-v0", "reference", store=store, run_id="nope", resume=True)
    store.close()


def test_unique_and_foreign_key_violations_are_told_apart(store_url: str) -> None:
    store = open_store(store_url)
    gymhub.rollout("toy-letters-v0", "reference", tasks=1, store=store, run_id="r")
    [stored] = store.load_trajectories("r")
    assert store.add_trajectory("r", stored) is False  # already stored: unique key
    with pytest.raises(gymhub.StoreError, match="run 'ghost' is not in"):
        store.add_trajectory("ghost", stored.model_copy(update={"id": "fresh-id"}))  # foreign key
    with pytest.raises(gymhub.StoreError, match="already exists"):
        store.create_run(
            "r", env_id="toy-letters-v0", policy="p", split="train", group_size=1, seed=0, tasks=[]
        )
    store.close()


def test_open_store_says_what_is_wrong_and_creates_nothing_when_reading(tmp_path: Path) -> None:
    with pytest.raises(gymhub.StoreError, match="does not exist"):
        open_store(str(tmp_path / "no" / "runs.db"))
    with pytest.raises(gymhub.StoreError, match="is a folder"):
        open_store(str(tmp_path))
    (tmp_path / "notes.db").write_text("not a database\n" * 50)
    with pytest.raises(gymhub.StoreError, match="file is not a database"):
        open_store(str(tmp_path / "notes.db"))
    with pytest.raises(gymhub.StoreError, match="no store at"):
        open_store(str(tmp_path / "missing.db"), create=False)
    assert not (tmp_path / "missing.db").exists()
    with pytest.raises(gymhub.StoreError, match="cannot open store"):
        open_store("nosuchdialect://x/y")
