"""Ray nodes for tests, started with ``ray start`` as separate process groups.

Tests connect their driver by address and never start Ray in-process (``ray.init()`` with no
address): with Ray 2.60, a process that ran an in-process cluster cannot start actors on another
cluster afterwards (they die before they run), so two test modules in one pytest worker would
break each other.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil

RAY = str(Path(sys.executable).with_name("ray"))
NODE_DEADLINE_S = 240  # a loaded 2-core machine can take a minute to start a node


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def node_env() -> dict[str, str]:
    env = {
        **os.environ,
        "RAY_AUTH_MODE": "disabled",  # a throwaway cluster on loopback ports
        "RAY_USAGE_STATS_ENABLED": "0",
        "RAY_raylet_start_wait_time_s": "120",  # the node agents import slowly on a loaded host
    }
    env.pop("RAY_ADDRESS", None)
    return env


def _node_ports() -> list[str]:
    """Every port a node listens on, chosen free, so two nodes on one host never collide."""
    names = (
        "node-manager-port",
        "object-manager-port",
        "metrics-export-port",
        "dashboard-agent-listen-port",
        "dashboard-agent-grpc-port",
        "runtime-env-agent-port",
    )
    return [arg for name in names for arg in (f"--{name}", str(free_port()))]


def start_node(
    args: list[str], log: Path, env: dict[str, str], num_cpus: int = 1, object_store_mb: int = 80
) -> subprocess.Popen[bytes]:
    """``ray start --block``: the node lives as long as this process group."""
    common = ["--block", "--node-ip-address=127.0.0.1", f"--num-cpus={num_cpus}", "--disable-usage-stats"]
    memory = ["--object-store-memory", str(object_store_mb * 1024**2)]
    with log.open("wb") as out:
        return subprocess.Popen(
            [RAY, "start", *common, *memory, *_node_ports(), *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,  # its own process group: killed as one, and only it
        )


def head_args(gcs_port: int, temp: Path) -> list[str]:
    return [
        "--head",
        f"--port={gcs_port}",
        "--include-dashboard=false",
        f"--temp-dir={temp}",
        "--ray-client-server-port",
        str(free_port()),
    ]


def kill_node(process: subprocess.Popen[bytes]) -> None:
    """SIGKILL a node at once, as a lost machine: ``ray start``, its raylet and agents (its
    process group) and the raylet's workers, which Ray puts in process groups of their own."""
    try:
        tree = psutil.Process(process.pid).children(recursive=True)
    except psutil.NoSuchProcess:
        tree = []
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    for child in tree:
        try:
            child.kill()
        except psutil.NoSuchProcess:
            pass
    process.wait(30)


def wait_for_port(port: int, process: subprocess.Popen[bytes], deadline: float) -> None:
    while time.monotonic() < deadline:
        assert process.poll() is None, "the head node exited"
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.5)
    raise AssertionError("the head node's GCS did not come up")
