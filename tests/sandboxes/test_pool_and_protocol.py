"""The sandbox protocol, the warm pool, and determinism across backends."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time

import pytest

import gymhub
from gymhub.sandboxes import create_sandbox
from gymhub.sandboxes.job_client import JobServerSandbox
from gymhub.sandboxes.warm_pool import SandboxPool


def test_protocol_on_every_backend(box: JobServerSandbox) -> None:
    box.write_file("src/app.py", b"print('hi from app')\n")
    box.write_file("run.sh", b"#!/bin/sh\necho run\n", mode=0o755)
    assert box.read_file("src/app.py") == b"print('hi from app')\n"
    assert {(e.path, e.kind, e.mode) for e in box.list_files()} >= {
        ("src", "dir", 0o755),
        ("run.sh", "file", 0o755),
    }
    result = box.run(["python3", "src/app.py"], env={"EXTRA": "1"})
    assert result.ok and result.stdout == b"hi from app\n"
    assert box.run(["./run.sh"]).stdout == b"run\n"
    echo = box.run(script="import sys\nprint(sys.stdin.read().upper())", stdin=b"abc")
    assert echo.stdout == b"ABC\n"
    snap = box.snapshot()
    box.write_file("extra.txt", b"later")
    box.run(["sh", "-c", "rm -rf src"])
    box.restore(snap)
    assert sorted(e.path for e in box.list_files()) == ["run.sh", "src", "src/app.py"]
    box.reset()
    assert box.list_files() == []
    with pytest.raises(gymhub.SandboxError):
        box.read_file("../../etc/passwd")
    box.run(["ln", "-s", "/etc/passwd", "link"])
    with pytest.raises(gymhub.SandboxError):
        box.read_file("link")  # symlinks out of the work dir are not followed


def test_async_twins(box: JobServerSandbox) -> None:
    async def go() -> bytes:
        await box.awrite_file("a.txt", b"A")
        result = await box.aexec(["cat", "a.txt"])
        return result.stdout

    assert asyncio.run(go()) == b"A"


def _gone(box: JobServerSandbox) -> bool:
    """The sandbox's own server (process or container) and every job process are gone."""
    if getattr(box, "container", None) is not None:
        listed = subprocess.run(
            ["docker", "ps", "-aq", "--filter", f"id={box.container.id}"], capture_output=True, text=True
        ).stdout
        if listed.strip():
            return False
    elif box._proc is not None and box._proc.poll() is None:
        return False
    jobs = subprocess.run(["ps", "-o", "pid=", "-u", str(box.job_uid)], capture_output=True, text=True).stdout
    return not jobs.split()


def test_pool_hands_out_pristine_sandboxes_and_leaks_nothing(backend: str) -> None:
    pool = SandboxPool(backend, size=2)
    first = pool.acquire()
    first.write_file("dirty.txt", b"x")
    first.run(script="import subprocess\nsubprocess.Popen(['sleep', '300'])")
    pool.release(first)
    boxes = [pool.acquire(), pool.acquire()]
    assert all(b.list_files() == [] for b in boxes)
    members = list(pool._members)
    assert len(members) == 2
    for b in boxes:
        pool.release(b)
    pool.close()
    time.sleep(0.3)
    assert all(_gone(m) for m in members)  # type: ignore[arg-type]


def test_pool_replaces_a_dead_sandbox(backend: str) -> None:
    with SandboxPool(backend, size=1) as pool:
        box = pool.acquire()
        box._conn.close()  # type: ignore[union-attr]  # the connection is gone: it is dead
        pool.release(box)
        fresh = pool.acquire(timeout=60)
        assert fresh is not box and fresh.alive()
        assert pool.replaced == 1
        pool.release(fresh)


def test_pool_is_bounded() -> None:
    with SandboxPool("local", size=1) as pool:
        box = pool.acquire()
        with pytest.raises(gymhub.SandboxError, match="no local sandbox free"):
            pool.acquire(timeout=0.2)
        pool.release(box)


def test_same_program_same_output_on_every_backend() -> None:
    from backends import unavailable

    program = "import sys, json\nprint(json.dumps({'h': hash('abc'), 'x': sorted({3, 1, 2})}))\nsys.exit(3)"
    results = {}
    for backend in ("local", "bwrap", "docker"):
        if unavailable(backend):
            continue
        with create_sandbox(backend) as box:
            r = box.run(script=program)
            results[backend] = (r.exit_code, r.stdout)
    assert len(set(results.values())) == 1, results


def test_code_verdicts_are_identical_on_every_backend() -> None:
    from backends import unavailable

    verdicts: dict[str, dict[tuple[str, str], str]] = {}
    for backend in ("local", "bwrap", "docker"):
        if unavailable(backend):
            continue
        found = {}
        for variant in ("reference", "wrong", "os-exit", "always-equal"):
            groups = gymhub.rollout(
                "code-python-v0",
                f"reference:{variant}",
                tasks=8,
                env_kwargs={"sandbox": backend},
                concurrency=2,
            )
            # groups arrive in completion order: compare by task, byte for byte
            found.update(
                {(variant, t.task_id): t.verdict.model_dump_json() for g in groups for t in g.trajectories}
            )
        verdicts[backend] = found
    reference = verdicts["local"]
    assert len(reference) == 32
    assert all(v == reference for v in verdicts.values())


def test_prune_removes_containers_of_killed_processes_only() -> None:
    import os
    import signal

    from backends import require

    require("docker")
    script = (
        "from gymhub.sandboxes import create_sandbox\nimport sys, time\n"
        "box = create_sandbox('docker')\nprint(box.container.id, flush=True)\ntime.sleep(600)\n"
    )
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    container_id = child.stdout.readline().strip()  # type: ignore[union-attr]
    with create_sandbox("docker") as mine:  # ours: alive, must survive the prune
        os.kill(child.pid, signal.SIGKILL)  # the owner dies without closing its container
        child.wait()
        listed = subprocess.run(
            ["docker", "ps", "-aq", "--no-trunc", "--filter", f"id={container_id}"],
            capture_output=True,
            text=True,
        ).stdout
        assert listed.strip()
        pruned = subprocess.run(
            [sys.executable, "-m", "gymhub", "sandbox", "prune"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        # the dead owner's container goes, ours stays (other tests may leave orphans too)
        assert container_id[:12] in pruned
        listed = subprocess.run(
            ["docker", "ps", "-aq", "--filter", f"id={container_id}"], capture_output=True, text=True
        ).stdout
        assert not listed.strip()
        assert mine.alive()
