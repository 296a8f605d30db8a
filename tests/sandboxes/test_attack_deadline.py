"""Attack class 3: the time limit holds whatever the job does.

Each attack runs with ``timeout=1``. Whatever it tries — closing every descriptor so the
server sees no pipe to watch, stopping itself, double forks into new sessions, ignoring
SIGTERM, stopped children — run() must come back within a generous bound (6 s, not a tight
timing check), nothing of the job uid may be left alive on the host afterwards, and a
spinning grandchild must not keep burning CPU. Every attack ends by itself within ~15 s, so a
sandbox that does not enforce the limit makes the test fail slowly instead of hang.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from gymhub.sandboxes.job_client import JobServerSandbox

BOUND_S = 6.0  # timeout=1 plus a generous allowance for kills and a loaded machine

ATTACKS = {
    # the server sees every pipe closed — and must not then wait for the process without a deadline
    "close_all_descriptors_then_sleep": (
        "import os, time\nos.closerange(0, 1024)\nfor _ in range(300):\n    time.sleep(0.05)\n"
    ),
    # stopped: no CPU is used, so no CPU rlimit ever fires; a helper resumes it after 12 s
    "close_all_descriptors_then_stop_itself": (
        "import os, signal, time\n"
        "parent = os.getpid()\n"
        "if os.fork() == 0:\n"
        "    os.closerange(0, 1024)\n"
        "    time.sleep(12)\n"
        "    os.kill(parent, signal.SIGCONT)\n"
        "    os._exit(0)\n"
        "os.closerange(0, 1024)\n"
        "os.kill(parent, signal.SIGSTOP)\n"
    ),
    "ignore_sigterm_and_sleep": (
        "import signal, time\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
        "signal.signal(signal.SIGHUP, signal.SIG_IGN)\n"
        "for _ in range(300):\n    time.sleep(0.05)\n"
    ),
    "double_fork_into_a_new_session_and_spin": (
        "import os, time\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    if os.fork() == 0:\n"
        "        os.closerange(0, 1024)\n"
        "        end = time.monotonic() + 15\n"
        "        while time.monotonic() < end:\n            pass\n"
        "    os._exit(0)\n"
        "for _ in range(300):\n    time.sleep(0.05)\n"
    ),
    "stopped_children_in_other_sessions": (
        "import os, signal, time\n"
        "for _ in range(4):\n"
        "    if os.fork() == 0:\n"
        "        os.setsid()\n"
        "        os.kill(os.getpid(), signal.SIGSTOP)\n"
        "        time.sleep(15)\n"
        "        os._exit(0)\n"
        "os.closerange(0, 1024)\n"
        "for _ in range(300):\n    time.sleep(0.05)\n"
    ),
    "leader_exits_at_once_a_session_child_keeps_the_pipes": (
        "import os, time\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    end = time.monotonic() + 15\n"
        "    while time.monotonic() < end:\n        pass\n"
        "    os._exit(0)\n"
        "os._exit(0)\n"
    ),
    "fill_stdout_and_never_read_a_huge_stdin": (
        "import os, time\n"
        "os.set_blocking(1, True)\n"
        "end = time.monotonic() + 15\n"
        "while time.monotonic() < end:\n"
        "    os.write(1, b'z' * 65536)\n"
        "    time.sleep(0.01)\n"
    ),
}


@pytest.mark.parametrize("attack", sorted(ATTACKS))
@pytest.mark.parametrize("mode", ["script", "program"])
def test_the_deadline_holds(
    box: JobServerSandbox, attack: str, mode: str, uid_processes: Callable[..., list[str]]
) -> None:
    source = ATTACKS[attack]
    stdin = b"s" * (8 << 20) if attack.startswith("fill_stdout") else b""
    start = time.monotonic()
    if mode == "script":
        result = box.run(script=source, timeout=1, stdin=stdin)
    else:
        result = box.run(["python3", "-c", source], timeout=1, stdin=stdin)
    took = time.monotonic() - start
    assert took < BOUND_S, f"{box.backend}/{attack}: run(timeout=1) came back after {took:.1f} s"
    if attack != "leader_exits_at_once_a_session_child_keeps_the_pipes":  # that one ends in time
        assert result.killed_by is not None, f"{box.backend}/{attack}: not reported as killed: {result}"
    assert box.alive()  # one round trip: whatever the server does after a reply is done
    left = uid_processes(box.job_uid)
    assert left == [], f"{box.backend}/{attack}: processes of the job uid outlived the job: {left}"
    again = box.run(script="print('still here')", timeout=10)
    assert again.stdout == b"still here\n", again


def test_a_spinning_grandchild_burns_nothing_after_the_deadline(
    box: JobServerSandbox, uid_processes: Callable[..., list[str]]
) -> None:
    """The grandchild escapes into its own session, closes its pipes and counts in a file of
    the work dir: once run() is back, the count must stop growing."""
    script = (
        "import os, time\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    if os.fork() == 0:\n"
        "        os.closerange(0, 1024)\n"
        "        fd = os.open('beats', os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)\n"
        "        end = time.monotonic() + 15\n"
        "        while time.monotonic() < end:\n"
        "            for _ in range(20000):\n                pass\n"
        "            os.write(fd, b'.')\n"
        "    os._exit(0)\n"
        "for _ in range(300):\n    time.sleep(0.05)\n"
    )
    start = time.monotonic()
    box.run(script=script, timeout=1)
    assert time.monotonic() - start < BOUND_S
    sizes = []
    for _ in range(2):
        result = box.run(["sh", "-c", "stat -c %s beats 2>/dev/null || echo 0"], timeout=10)
        sizes.append(int(result.stdout.split()[0]))
        time.sleep(1.0)
    assert sizes[0] == sizes[1], f"{box.backend}: a grandchild is still spinning after the deadline: {sizes}"
    assert uid_processes(box.job_uid) == []
