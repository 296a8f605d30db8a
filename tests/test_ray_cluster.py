"""A GRPO step with its env workers on a real two-node Ray cluster, and the worker node killed
mid-step: the step finishes, and no episode is lost or counted twice.

The cluster is two ``ray start`` processes on this machine (a head and a second node with a
``worker_node`` resource), each in its own process group, with their own ports and temp dir,
so the test kills exactly the second node's processes and tears down only what it started.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ray = pytest.importorskip("ray")
torch = pytest.importorskip("torch")
psutil = pytest.importorskip("psutil")

from ray_nodes import NODE_DEADLINE_S, free_port, head_args, kill_node, node_env, start_node, wait_for_port  # noqa: E402

from gymhub.trainers.grpo import GRPOConfig, GRPOTrainer  # noqa: E402

pytestmark = pytest.mark.slow


@dataclass
class Cluster:
    address: str
    head: subprocess.Popen[bytes]
    worker: subprocess.Popen[bytes]
    head_node_id: str = ""
    worker_node_id: str = ""


@pytest.fixture
def two_node_cluster() -> Iterator[Cluster]:
    if ray.is_initialized():  # another test's local Ray in this process
        ray.shutdown()
    temp = Path(tempfile.mkdtemp(prefix="ghray-", dir="/tmp"))  # Ray's socket paths must stay short
    env = node_env()
    gcs_port = free_port()
    address = f"127.0.0.1:{gcs_port}"
    started: list[subprocess.Popen[bytes]] = []
    try:
        head = start_node(head_args(gcs_port, temp), temp / "head.log", env)
        started.append(head)
        deadline = time.monotonic() + NODE_DEADLINE_S
        wait_for_port(gcs_port, head, deadline)
        worker = start_node(
            [f"--address={address}", '--resources={"worker_node": 1}'], temp / "worker.log", env
        )
        started.append(worker)
        cluster = Cluster(address, head, worker)
        ray.init(address=address, include_dashboard=False, log_to_driver=False)
        while time.monotonic() < deadline:
            alive = [n for n in ray.nodes() if n["Alive"]]
            workers = [n["NodeID"] for n in alive if "worker_node" in n["Resources"]]
            if len(alive) == 2 and workers:
                cluster.worker_node_id = workers[0]
                cluster.head_node_id = next(n["NodeID"] for n in alive if n["NodeID"] != workers[0])
                break
            assert worker.poll() is None, (temp / "worker.log").read_text()[-3000:]
            time.sleep(1)
        else:
            raise AssertionError("the second node did not join the cluster")
        yield cluster
    finally:
        if ray.is_initialized():
            ray.shutdown()
        for process in reversed(started):
            kill_node(process)
        shutil.rmtree(temp, ignore_errors=True)


def test_a_trainer_step_survives_losing_the_worker_node(
    two_node_cluster: Cluster, tiny_model_path: Path, tmp_path: Path
) -> None:
    torch.set_num_threads(1)
    tasks, group_size = 16, 4  # 64 episodes: the kill lands while most are still to play
    cfg = GRPOConfig(
        env="toy-letters-v0",
        model=str(tiny_model_path),
        steps=2,
        tasks_per_step=tasks,
        group_size=group_size,
        max_new_tokens=6,
        concurrency=2,  # two env workers: one on each node (SPREAD, one CPU per node)
        rollout_backend="ray",
        ray_address=two_node_cluster.address,
        output_dir=str(tmp_path / "run"),
        console=False,
    )
    trainer = GRPOTrainer(cfg)
    backend = trainer.episode_backend
    trainer.train_step()  # starts the env workers (kept between steps); the second step is watched
    first_step = len(backend.episodes)
    sampled: list[Any] = []
    sample = trainer.sample

    def recording_sample() -> Any:  # the step's groups, as the loss receives them
        groups, stats = sample()
        sampled.append(groups)
        return groups, stats

    trainer.sample = recording_sample  # type: ignore[method-assign]
    metrics: list[dict[str, Any]] = []
    errors: list[BaseException] = []

    def step() -> None:
        try:
            metrics.append(trainer.train_step())
        except BaseException as exc:  # re-raised in the test's thread below
            errors.append(exc)

    thread = threading.Thread(target=step, daemon=True)
    thread.start()
    worker_node = two_node_cluster.worker_node_id
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and thread.is_alive():
        nodes = {e.node_id for e in backend.episodes[first_step:]}
        if worker_node in nodes and len(nodes) == 2:
            break
        time.sleep(0.01)
    ran_before_kill = backend.episodes[first_step:]
    assert thread.is_alive(), f"the step ended before both nodes played: {errors!r} {ran_before_kill}"
    assert {e.node_id for e in ran_before_kill} == {two_node_cluster.head_node_id, worker_node}
    kill_node(two_node_cluster.worker)  # the worker node's raylet, agents and env worker, all at once
    played_before_kill = len(backend.episodes) - first_step
    assert played_before_kill < tasks * group_size, "the kill came after the step: nothing was tested"
    thread.join(420)
    assert not thread.is_alive(), "the step did not finish after the worker node died"
    assert not errors, errors
    assert metrics and metrics[0]["step"] == 2

    groups = sampled[-1]
    played = [(t.task_id, t.sample_index) for g in groups for t in g.trajectories]
    assert len(groups) == tasks and all(len(g.trajectories) == group_size for g in groups)
    assert Counter(played) == Counter({k: 1 for k in played}) and len(played) == tasks * group_size
    assert all(sorted(t.sample_index for t in g.trajectories) == list(range(group_size)) for g in groups)
    assert all(t.status == "ok" for g in groups for t in g.trajectories)
    second_step = backend.episodes[first_step:]
    finished = Counter((e.task_id, e.sample_index) for e in second_step if e.finished)
    assert finished == Counter(played)  # each episode came back exactly once
    lost = [e for e in second_step if not e.finished]
    assert lost and all(e.node_id == worker_node for e in lost)  # mid-episode on the dead node
    after = {(e.task_id, e.sample_index): e.node_id for e in second_step if e.finished}
    assert all(after[(e.task_id, e.sample_index)] != worker_node for e in lost)  # replayed elsewhere
    assert backend.workers_lost >= 1
