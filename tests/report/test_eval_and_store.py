"""`gymhub eval` stores a run and prints its pass@k table; the store streams a run page by page
and keeps people's reviews."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from processes import gymhub_cli
from report_runs import TASKS, G, Runs

from gymhub.errors import StoreError
from gymhub.report.evaluation import eval_document
from gymhub.report.pass_at_k import pass_at_k
from gymhub.store import open_store


def test_eval_cli_stores_a_run_and_prints_pass_at_k(tmp_path: Path) -> None:
    db = tmp_path / "eval.db"
    done = subprocess.run(
        [
            *(gymhub_cli(), "eval", "toy-letters-v0", "--policy", "reference:half"),
            *("--k", "3", "--tasks", "2", "--db", str(db), "--json"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    store = open_store(str(db), create=False)
    run = store.get_run(doc["run_id"])
    trajs = store.load_trajectories(doc["run_id"])
    store.close()
    assert (run.split, run.group_size, len(run.task_ids)) == ("eval", 3, 2)
    assert len(trajs) == doc["trajectories"] == 6
    assert all(t.verdict is not None and t.verdict.outcome == 0.5 for t in trajs)  # half right: never passes
    assert [(row["k"], row["mean"]) for row in doc["pass_at_k"]] == [(1, 0.0), (2, 0.0), (3, 0.0)]
    assert {row["task_id"] for row in doc["per_task"]} == set(run.task_ids)


def test_eval_document_matches_the_store(runs: Runs) -> None:
    store = open_store(str(runs.db), create=False)
    try:
        doc = eval_document(store, runs.a)
        trajs = store.load_trajectories(runs.a)
    finally:
        store.close()
    by_task: dict[str, list[bool]] = {}
    for t in trajs:
        by_task.setdefault(t.task_id, []).append(t.verdict is not None and t.verdict.outcome >= 1.0)
    assert doc["k"] == G and doc["tasks"] == TASKS
    for row in doc["pass_at_k"]:
        expected = sum(pass_at_k(G, sum(p), row["k"]) for p in by_task.values()) / TASKS
        assert row["mean"] == pytest.approx(expected, abs=1e-9)
        assert row["low"] <= row["mean"] <= row["high"]
    for row in doc["per_task"]:
        assert row["passed"] == sum(by_task[row["task_id"]])


def test_iter_trajectories_pages_through_the_run(runs: Runs) -> None:
    store = open_store(str(runs.db), create=False)
    try:
        whole = store.load_trajectories(runs.a)
        for batch_size in (1, 3, G, 7, 1000):  # pages that end inside a task's group and on its edge
            assert list(store.iter_trajectories(runs.a, batch_size=batch_size)) == whole
        assert store.load_trajectory(runs.a, whole[5].id) == whole[5]
        assert store.load_trajectory(runs.b, whole[5].id) is None  # another run's trajectory
    finally:
        store.close()


def test_labels_are_stored_replaced_and_checked(runs: Runs, tmp_path: Path) -> None:
    import shutil

    db = tmp_path / "labels.db"
    shutil.copy(runs.db, db)
    store = open_store(str(db), create=False)
    try:
        tid = store.load_trajectories(runs.a)[0].id
        store.set_label(runs.a, tid, verdict_right=True, note="ok")
        store.set_label(runs.a, tid, verdict_right=False, note="no", reviewer="ann")
        labels = store.labels(runs.a)
        assert list(labels) == [tid]
        assert (labels[tid].verdict_right, labels[tid].note, labels[tid].reviewer) == (False, "no", "ann")
        assert store.labels(runs.b) == {}
        with pytest.raises(StoreError, match="has no trajectory"):
            store.set_label(runs.b, tid, verdict_right=True)
    finally:
        store.close()


def test_report_cli_refuses_an_unknown_run_before_writing(runs: Runs, tmp_path: Path) -> None:
    target = tmp_path / "report.html"
    done = subprocess.run(
        [gymhub_cli(), "report", runs.a, "no-such-run", "--db", str(runs.db), "-o", str(target)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2
    assert "no run 'no-such-run'" in done.stderr and not target.exists()
