"""Rollouts on a local Ray instance: same verdicts as the local backend, and a killed worker
loses nothing and duplicates nothing."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import gymhub
from gymhub._rollout_engine import arollout
from gymhub.store import open_store

ray = pytest.importorskip("ray")

from ray_nodes import NODE_DEADLINE_S, free_port, head_args, kill_node, node_env, start_node, wait_for_port  # noqa: E402

from gymhub._ray_backend import RayBackend  # noqa: E402


@pytest.fixture(scope="module")
def ray_instance() -> Iterator[None]:
    """A one-node cluster from ``ray start``, the driver connected by address (never Ray
    in-process: see ``tests/ray_nodes.py``)."""
    if ray.is_initialized():
        ray.shutdown()
    temp = Path(tempfile.mkdtemp(prefix="ghray-", dir="/tmp"))  # Ray's socket paths must stay short
    gcs_port = free_port()
    head = start_node(
        head_args(gcs_port, temp), temp / "head.log", node_env(), num_cpus=2, object_store_mb=200
    )
    try:
        wait_for_port(gcs_port, head, time.monotonic() + NODE_DEADLINE_S)
        ray.init(address=f"127.0.0.1:{gcs_port}", include_dashboard=False, log_to_driver=False)
        yield
    finally:
        if ray.is_initialized():
            ray.shutdown()
        kill_node(head)
        shutil.rmtree(temp, ignore_errors=True)


def _digests(groups: list[gymhub.TrajectoryGroup]) -> dict[tuple[str, int], tuple[str, float]]:
    return {
        (t.task_id, t.sample_index): (t.verdict.digest, t.verdict.outcome)
        for g in groups
        for t in g.trajectories
    }


@pytest.mark.parametrize("env_id", ["code-python-v0", "mcp-tools-v0"])
def test_ray_verdicts_equal_the_local_backends(ray_instance: Any, env_id: str) -> None:
    kwargs: dict[str, Any] = {"tasks": 4, "group_size": 2, "concurrency": 2, "seed": 7, "run_id": "same"}
    local = gymhub.rollout(env_id, "reference", **kwargs)
    on_ray = gymhub.rollout(env_id, "reference", backend=RayBackend(), **kwargs)
    assert all(t.status == "ok" for g in on_ray for t in g.trajectories)
    assert _digests(on_ray) == _digests(local)
    assert [g.advantages for g in on_ray] == [g.advantages for g in local]


def test_a_policy_object_acts_in_the_driver_with_the_same_verdicts(ray_instance: Any) -> None:
    """A Policy object (a trainer's generator) stays in the driver; the workers only run the env,
    each reset and step a remote call. The verdicts are the local backend's."""
    from gymhub.policies import make_policy

    kwargs: dict[str, Any] = {"tasks": 3, "group_size": 2, "concurrency": 2, "seed": 3, "run_id": "driver"}
    local = gymhub.rollout("code-python-v0", "reference", **kwargs)
    backend = RayBackend()
    on_ray = gymhub.rollout("code-python-v0", make_policy("reference"), backend=backend, **kwargs)
    assert all(t.status == "ok" for g in on_ray for t in g.trajectories)
    assert _digests(on_ray) == _digests(local)
    assert len(backend.episodes) == 6 and all(e.finished for e in backend.episodes)
    assert os.getpid() not in {e.worker_pid for e in backend.episodes}  # the envs ran in the actors


def test_an_address_of_another_cluster_is_refused(ray_instance: Any) -> None:
    with pytest.raises(gymhub.GymhubError, match="already connected to the Ray cluster"):
        gymhub.rollout("toy-letters-v0", "reference", tasks=1, backend=RayBackend("127.0.0.1:1"))


def test_a_killed_worker_loses_nothing_and_duplicates_nothing(ray_instance: Any, tmp_path: Path) -> None:
    store = open_store(str(tmp_path / "ray.db"))
    env = gymhub.make("code-python-v0")
    tasks = env.tasks[:30]
    store.create_run(
        "r", env_id="code-python-v0", policy="reference", split="train", group_size=2, seed=0, tasks=tasks
    )
    backend = RayBackend()
    done: list[Any] = []

    async def drive() -> None:
        async for group in arollout(
            "code-python-v0",
            "reference",
            tasks=tasks,
            group_size=2,
            concurrency=2,
            store=store,
            run_id="r",
            backend=backend,
        ):
            done.append(group)

    thread = threading.Thread(target=asyncio.run, args=(drive(),))
    thread.start()
    deadline = time.monotonic() + 120
    while len(store.load_trajectories("r")) < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    victim = backend.episodes[-1].worker_pid  # a live worker: it just finished an episode
    os.kill(victim, signal.SIGKILL)  # the worker dies, mid-episode or between
    thread.join(300)
    assert not thread.is_alive()
    stored = store.load_trajectories("r")
    keys = [(t.task_id, t.sample_index) for t in stored]
    assert len(keys) == len(set(keys)) == 60  # every episode once: none lost, none twice
    assert all(t.status == "ok" and t.verdict.outcome == 1.0 for t in stored)
    assert len(done) == 30 and backend.workers_lost >= 1
    finished = [(e.task_id, e.sample_index) for e in backend.episodes if e.finished]
    assert sorted(finished) == sorted(keys)  # a lost episode was played again, and counted once
    local = gymhub.rollout("code-python-v0", "reference", tasks=tasks, group_size=2, run_id="r")
    assert {(t.task_id, t.sample_index): t.verdict.digest for t in stored} == {
        k: v[0] for k, v in _digests(local).items()
    }


def test_cli_backend_ray_stores_the_same_run(tmp_path: Path) -> None:
    import json
    import subprocess
    import sys

    db = str(tmp_path / "cli.db")
    cli = [
        sys.executable,
        "-m",
        "gymhub",
        "rollout",
        "toy-letters-v0",
        "--tasks",
        "3",
        "-g",
        "2",
        "--db",
        db,
    ]
    ray_run = json.loads(
        subprocess.run(
            [*cli, "--backend", "ray", "--json"], capture_output=True, text=True, check=True
        ).stdout
    )
    local_run = json.loads(
        subprocess.run([*cli, "--json"], capture_output=True, text=True, check=True).stdout
    )
    assert ray_run["trajectories"] == local_run["trajectories"] == 6 and ray_run["errors"] == 0
    assert ray_run["mean_outcome"] == local_run["mean_outcome"] == 1.0
    bad = subprocess.run([*cli, "--backend", "spark"], capture_output=True, text=True)
    assert bad.returncode != 0 and "--backend must be one of local, ray" in bad.stderr + bad.stdout


def test_grpo_config_names_a_cluster_only_with_the_ray_backend() -> None:
    from gymhub.trainers.grpo import GRPOConfig

    assert GRPOConfig(rollout_backend="ray", ray_address="head:6379").ray_address == "head:6379"
    with pytest.raises(gymhub.GymhubError, match="use it with rollout_backend='ray'"):
        GRPOConfig(ray_address="head:6379")
    with pytest.raises(gymhub.GymhubError, match="rollout_backend must be local or ray"):
        GRPOConfig(rollout_backend="spark")  # type: ignore[arg-type]
