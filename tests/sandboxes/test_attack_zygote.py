"""The zygote jobs fork from is the one process a sandbox cannot replace (the server's memory is
no longer pristine). A job must not be able to take it down and leave a sandbox that looks
alive but fails every honest job after it: the OOM killer takes job processes first, and a
sandbox whose zygote is gone says so (``alive()`` False, reset fails) so pools replace it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time

from gymhub.sandboxes import Limits
from gymhub.sandboxes.job_client import JobServerSandbox


def honest(box: JobServerSandbox) -> bool:
    return box.run(script="print(6 * 7)", timeout=10).stdout == b"42\n"


def test_an_oom_storm_of_small_processes_leaves_the_zygote(box: JobServerSandbox) -> None:
    # 40 processes of ~12 MB each (the zygote's size) in a 256 MB job: the OOM killer must run
    script = (
        "import os, time\n"
        "for _ in range(40):\n"
        "    if os.fork() == 0:\n"
        "        block = b'\\x01' * (12 << 20)\n"
        "        time.sleep(5)\n"
        "        os._exit(0)\n"
        "time.sleep(3)\n"
    )
    box.run(script=script, timeout=4, limits=Limits(memory_mb=256, processes=64))
    box.reset()
    assert box.alive()
    assert honest(box)


def test_a_sandbox_whose_zygote_died_is_dead(backend: str) -> None:
    if backend != "local":
        return  # the zygote is reachable from the host only on local (a host process)
    from gymhub.sandboxes import create_sandbox

    box = create_sandbox(backend)
    try:
        server = box._proc.pid  # type: ignore[attr-defined]
        children = subprocess.run(["pgrep", "-P", str(server)], capture_output=True, text=True).stdout.split()
        assert children, "the server has no zygote"
        os.kill(int(children[0]), signal.SIGKILL)
        time.sleep(0.2)
        assert not box.alive()
    finally:
        box.close()
