"""Attack class 6: no uid is ever shared by two live sandboxes.

Two sandboxes sharing a job uid share everything a uid protects: each one's jobs can signal,
ptrace and read the other's processes, and one's reaper kills the other's jobs. The attacks:
sandboxes made at the same time by two processes (the second started so that its pid is the
first's plus a multiple of 1000, the worst case for a pid-derived scheme), and a uid whose
sandbox is closed while a process of that uid still lives, which must not be handed out again.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

import gymhub
from gymhub.sandboxes import create_sandbox
from gymhub.sandboxes.job_client import JobServerSandbox

PER_PROCESS = 3
INSTALLED = Path(gymhub.__file__).resolve().parents[1]  # children import the gymhub we test

CHILD = f"""
import sys
import gymhub
from gymhub.sandboxes import create_sandbox
boxes = [create_sandbox(sys.argv[1]) for _ in range({PER_PROCESS})]
print(' '.join(str(b.job_uid) for b in boxes), flush=True)
sys.stdin.readline()
for b in boxes:
    b.close()
"""


def _spawn_with_pid_like(pid: int, argv: list[str]) -> subprocess.Popen[str]:
    """A child whose pid equals ``pid`` modulo 1000 (root sets the next pid; else cheap
    processes are spawned until the counter gets there). Other processes on the machine may
    take a pid meanwhile: a few tries."""
    pid_max = int(open("/proc/sys/kernel/pid_max").read())
    for _ in range(20):
        want = pid + 1000
        while want >= pid_max - 10 or os.path.exists(f"/proc/{want}"):
            want = (want + 1000) % pid_max if want + 1000 < pid_max else pid % 1000 + 1000
        try:
            with open("/proc/sys/kernel/ns_last_pid", "w") as fh:
                fh.write(str(want - 1))
        except OSError:
            for _ in range(4000):  # no root: walk the pid counter with cheap processes
                probe = subprocess.Popen(["true"])
                probe.wait()
                if (probe.pid + 1) % 1000 == pid % 1000:
                    break
        child = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=INSTALLED
        )
        if child.pid % 1000 == pid % 1000:
            return child
        child.kill()
        child.wait()
    raise AssertionError("could not start a child with a pid equal to ours modulo 1000")


def test_two_processes_never_share_a_uid(backend: str) -> None:
    """Two fresh processes whose pids are equal modulo 1000 (and this one) each hold three
    sandboxes at once: all nine uids differ."""
    first = _spawn_with_pid_like(os.getpid(), [sys.executable, "-c", CHILD, backend])
    second = _spawn_with_pid_like(first.pid, [sys.executable, "-c", CHILD, backend])
    children = [first, second]
    mine: list[JobServerSandbox] = []
    try:
        mine = [create_sandbox(backend) for _ in range(PER_PROCESS)]  # type: ignore[misc]
        uids = {"this process": [box.job_uid for box in mine]}
        for child in children:
            assert child.stdout is not None
            uids[f"pid {child.pid}"] = [int(uid) for uid in child.stdout.readline().split()]
            assert len(uids[f"pid {child.pid}"]) == PER_PROCESS, "a child could not make its sandboxes"
        every = [uid for group in uids.values() for uid in group]
        assert len(set(every)) == len(every), f"{backend}: live sandboxes share uids: {uids}"
    finally:
        for box in mine:
            box.close()
        for child in children:
            if child.stdin is not None:
                child.stdin.write("\n")
                child.stdin.close()
        for child in children:
            child.wait(timeout=60)


@pytest.mark.slow
def test_a_uid_with_a_live_process_is_not_handed_out_again(
    backend: str, uid_processes: Callable[..., list[str]]
) -> None:
    """A closed sandbox's uid still has a process (a straggler: here the host starts one as
    that uid). New sandboxes — 110, made and closed by four threads, or as many as 45 s
    allow — must never get it."""
    first = create_sandbox(backend)
    assert isinstance(first, JobServerSandbox)
    taken = first.job_uid
    first.close()
    straggler = subprocess.Popen(["sleep", "120"], user=taken, group=taken)
    given: list[int] = []
    failures: list[str] = []
    lock = threading.Lock()
    deadline = time.monotonic() + 45

    def churn() -> None:
        while time.monotonic() < deadline:
            with lock:
                if len(given) >= 110 or taken in given:
                    return
            try:
                box = create_sandbox(backend)
            except Exception as exc:  # a failed start is class 11's business: noted, not fatal
                with lock:
                    failures.append(f"{type(exc).__name__}: {exc}")
                continue
            assert isinstance(box, JobServerSandbox)
            with lock:
                given.append(box.job_uid)
            box.close()

    try:
        workers = [threading.Thread(target=churn) for _ in range(4)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(120)
        assert taken not in given, (
            f"{backend}: uid {taken} was handed out again after {given.index(taken) + 1} sandboxes while a "
            f"process of it lived: {uid_processes(taken, settle=0)} ({len(failures)} starts failed)"
        )
    finally:
        straggler.kill()
        straggler.wait()
