"""Hostile code, on every backend this machine has: contained, and the sandbox usable after.

Only loopback addresses are ever targeted.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from pathlib import Path

from gymhub.sandboxes.job_client import JobServerSandbox


def usable(box: JobServerSandbox) -> None:
    result = box.run(script="print('still here')", timeout=10)
    assert result.stdout == b"still here\n", result


def uid_processes(uid: int) -> list[str]:
    out = subprocess.run(
        ["ps", "-o", "pid=,stat=,cmd=", "-u", str(uid)], capture_output=True, text=True
    ).stdout
    return [line for line in out.splitlines() if line.strip() and " Z" not in line]


def test_fork_bomb_is_capped_and_leaves_nothing(box: JobServerSandbox) -> None:
    result = box.run(
        script="import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n",
        timeout=3,
    )
    assert result.timed_out
    time.sleep(0.2)
    assert uid_processes(box.job_uid) == []
    usable(box)


def test_memory_bomb_fails_inside(box: JobServerSandbox) -> None:
    result = box.run(script="x = bytearray(8 * 1024 ** 3)\nprint('allocated')", timeout=10)
    assert result.exit_code != 0 and b"allocated" not in result.stdout
    assert result.killed_by == "memory"
    usable(box)


def test_infinite_loop_is_killed_on_time(box: JobServerSandbox) -> None:
    start = time.monotonic()
    result = box.run(script="while True:\n    pass\n", timeout=1)
    assert result.timed_out and result.killed_by == "timeout"
    assert time.monotonic() - start < 4
    usable(box)


def test_a_10_gb_file_is_refused(box: JobServerSandbox) -> None:
    script = (
        "chunk = b'x' * (1 << 20)\nwith open('big', 'wb') as fh:\n"
        "    for _ in range(10 * 1024):\n        fh.write(chunk)\n"
    )
    result = box.run(script=script, timeout=20)
    assert result.exit_code != 0
    sizes = [e.size for e in box.list_files() if e.path == "big"]
    assert sizes and sizes[0] <= 256 * (1 << 20)
    usable(box)


def test_filling_the_work_dir_stops_at_its_size(box: JobServerSandbox) -> None:
    script = (
        "import itertools\nchunk = b'x' * (4 << 20)\nfor i in itertools.count():\n"
        "    with open(f'f{i}', 'wb') as fh:\n        fh.write(chunk)\n"
    )
    result = box.run(script=script, timeout=30)
    assert result.exit_code != 0
    assert sum(e.size for e in box.list_files()) <= 300 * (1 << 20)
    box.reset()
    assert box.list_files() == []
    usable(box)


def test_100_mb_of_stdout_is_capped(box: JobServerSandbox) -> None:
    result = box.run(
        script="import sys\nfor _ in range(100):\n    sys.stdout.write('y' * 1_000_000)\n", timeout=20
    )
    assert result.truncated and result.killed_by == "output"
    assert len(result.stdout) <= box.limits.max_output_bytes
    usable(box)


def test_no_network_not_even_host_loopback(box: JobServerSandbox) -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    port = listener.getsockname()[1]
    try:
        result = box.run(
            script=f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=2)\n"
            "print('connected')",
            timeout=10,
        )
    finally:
        listener.close()
    assert b"connected" not in result.stdout and result.exit_code != 0


def test_host_secrets_are_not_readable(box: JobServerSandbox, tmp_path: Path) -> None:
    secret = Path("/root") / f".gymhub-secret-{os.getpid()}"
    secret.write_text("top secret")
    try:
        script = (
            f"for path in ('/etc/shadow', {str(secret)!r}):\n    try:\n"
            "        print(open(path).read())\n    except OSError as exc:\n        print('denied', path)\n"
        )
        result = box.run(script=script, timeout=10)
    finally:
        secret.unlink()
    assert b"top secret" not in result.stdout and b"root:" not in result.stdout
    assert result.stdout.count(b"denied") == 2


def test_writing_outside_the_work_dir_fails(box: JobServerSandbox) -> None:
    targets = ["/etc/gymhub-pwned", "/usr/gymhub-pwned", str(Path(__file__).parent / "gymhub-pwned")]
    script = (
        f"import os\nfor path in {targets!r}:\n    try:\n        open(path, 'w').write('x')\n"
        "        print('wrote', path)\n    except OSError:\n        print('refused', path)\n"
    )
    result = box.run(script=script, timeout=10)
    assert b"wrote" not in result.stdout, result.stdout
    assert not any(Path(t).exists() for t in targets)


def test_killing_the_parent_fails_and_the_server_lives(box: JobServerSandbox) -> None:
    result = box.run(
        script="import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\nos.kill(1, signal.SIGKILL)",
        timeout=10,
    )
    assert result.exit_code != 0 and b"PermissionError" in result.stderr
    usable(box)


def test_background_processes_do_not_survive_a_timeout(box: JobServerSandbox) -> None:
    script = (
        "import os, subprocess, time\n"
        "subprocess.Popen(['sleep', '1000'], start_new_session=True)\n"
        "if os.fork() == 0:\n    os.setsid()\n    time.sleep(1000)\n"
        "while True:\n    pass\n"
    )
    result = box.run(script=script, timeout=1)
    assert result.timed_out
    assert uid_processes(box.job_uid) == []
    usable(box)


def test_setuid_binaries_do_not_give_root(box: JobServerSandbox) -> None:
    result = box.run(["sh", "-c", "su -c id root </dev/null; id -u"], timeout=10)
    assert result.stdout.strip().splitlines()[-1] == str(box.job_uid).encode()
