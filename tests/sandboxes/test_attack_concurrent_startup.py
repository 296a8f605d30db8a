"""Attack class 11: sandboxes start under a burst (a pool filling up, a rollout's first step).

Eight sandboxes of one backend are created at once from eight threads (three bursts). Every one must start
(no "connection refused" from a job server that is not listening yet, no engine error) and
run a job; each must have its own uid. Two CPU hogs run meanwhile, as on a busy node.
"""

from __future__ import annotations

import subprocess
import sys
import threading

import pytest

from gymhub.sandboxes import create_sandbox
from gymhub.sandboxes.job_client import JobServerSandbox

BURST = 8
ROUNDS = 3  # the window a start-up race needs is small: give it three bursts


@pytest.mark.parametrize("round_", range(ROUNDS))
def test_eight_sandboxes_start_at_once(backend: str, round_: int) -> None:
    boxes: list[JobServerSandbox] = []
    errors: list[str] = []
    lock = threading.Lock()

    def start(index: int) -> None:
        try:
            box = create_sandbox(backend)
            assert isinstance(box, JobServerSandbox)
            with lock:
                boxes.append(box)
            result = box.run(script=f"print({index})", timeout=30)
            if result.stdout != f"{index}\n".encode():
                with lock:
                    errors.append(f"#{index}: {result}")
        except Exception as exc:  # every failure is reported, not just the first
            with lock:
                errors.append(f"#{index}: {type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=start, args=(i,)) for i in range(BURST)]
    # a busy machine (a training node): CPU hogs stretch every gap in a server's start-up
    hogs = [
        subprocess.Popen(
            [sys.executable, "-c", "import time\nend = time.time() + 60\nwhile time.time() < end: pass"]
        )
        for _ in range(2)
    ]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(180)
        assert not any(t.is_alive() for t in threads), f"{backend}: a sandbox start hung"
        assert errors == [], f"{backend}: {len(errors)} of {BURST} failed: {errors}"
        assert len({box.job_uid for box in boxes}) == BURST, f"{backend}: uids shared in a burst"
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
        for box in boxes:
            box.close()
