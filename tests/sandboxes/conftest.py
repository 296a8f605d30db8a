from __future__ import annotations

import os
import signal
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from backends import BACKENDS, require

from gymhub.sandboxes import create_sandbox
from gymhub.sandboxes.job_client import JobServerSandbox


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    require(request.param)
    return str(request.param)


@pytest.fixture
def box(backend: str) -> Iterator[JobServerSandbox]:
    sandbox = create_sandbox(backend)
    yield sandbox  # type: ignore[misc]
    sandbox.close()


# ---------------------------------------------------------------- for the attack suites
def _uid_processes(uid: int) -> list[str]:
    """Live (non-zombie) processes whose real or effective uid is ``uid``, seen from the host's
    /proc: jobs of every backend show there (no backend remaps uids), containers included."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/status") as fh:
                status = dict(line.split(":", 1) for line in fh if ":" in line)
        except OSError:
            continue  # gone meanwhile
        real, effective = (int(v) for v in status.get("Uid", "-1 -1").split()[:2])
        state = status.get("State", "").strip()
        if uid in (real, effective) and not state.startswith(("Z", "X")):
            found.append(f"{name} {state} {status.get('Name', '?').strip()}")
    return found


@pytest.fixture
def uid_processes() -> Callable[..., list[str]]:
    """``uid_processes(uid, settle=2.0)``: the host's live processes of that uid (empty when
    none). A process killed a moment ago may take a few ms to go: it is asked again until it
    has, for ``settle`` seconds at most — a survivor is still reported."""

    def still_there(uid: int, settle: float = 2.0) -> list[str]:
        deadline = time.monotonic() + settle
        found = _uid_processes(uid)
        while found and time.monotonic() < deadline:
            time.sleep(0.1)
            found = _uid_processes(uid)
        return found

    return still_there


@pytest.fixture
def marker() -> str:
    """A token no file, process or memory holds before the test makes it."""
    return f"gymhub-attack-{uuid.uuid4().hex}"


def _force_kill(box: JobServerSandbox) -> None:
    """Take a wedged sandbox down from outside (its server, its jobs), so a hung client call
    returns and the fixture can close it. Only processes the test created are signalled."""
    container = getattr(box, "container", None)
    if container is not None:
        try:
            container.kill()
        except Exception:  # already gone
            pass
    proc: Any = getattr(box, "_proc", None)
    if proc is not None and proc.poll() is None:
        proc.kill()
    uid = getattr(box, "job_uid", None)
    if uid is not None:
        for line in _uid_processes(uid):
            try:
                os.kill(int(line.split()[0]), signal.SIGKILL)
            except ProcessLookupError:
                pass


@pytest.fixture
def bounded() -> Callable[..., Any]:
    """``bounded(box, seconds, fn, *args)``: ``fn(*args)``'s result, or a test failure when it
    has not returned after ``seconds`` (the sandbox is then killed from outside, so the hung
    call and the fixture's close() return). Exceptions of ``fn`` are re-raised."""

    def call(box: JobServerSandbox, seconds: float, fn: Callable[..., Any], *args: Any) -> Any:
        outcome: dict[str, Any] = {}

        def target() -> None:
            try:
                outcome["value"] = fn(*args)
            except BaseException as exc:  # handed to the caller
                outcome["error"] = exc

        worker = threading.Thread(target=target, daemon=True)
        worker.start()
        worker.join(seconds)
        if worker.is_alive():
            _force_kill(box)
            worker.join(30)
            pytest.fail(f"{getattr(fn, '__name__', fn)} hung for more than {seconds} s on {box.backend}")
        if "error" in outcome:
            raise outcome["error"]
        return outcome.get("value")

    return call
