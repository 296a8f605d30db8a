"""Attack class 4: memory and process limits bind the whole job, not each process of it.

``Limits(memory_mb=256)`` is a promise about the job: four processes each touching 200 MB
(each under a per-process limit) must not all hold their memory at once; files in tmpfs
(/dev/shm, /tmp, /var/tmp: RAM) must not carry a job past its memory limit; and a job must
not get a new user namespace (where it is root, and limits and filters can be re-negotiated).
"""

from __future__ import annotations

import pytest

from gymhub.sandboxes import Limits
from gymhub.sandboxes.job_client import JobServerSandbox

MEMORY_MB = 256
EACH_MB = 200


def test_four_processes_of_200_mb_do_not_fit_in_256_mb(box: JobServerSandbox) -> None:
    script = (
        "import os, sys, time\n"
        "children = []\n"
        "for _ in range(4):\n"
        "    pid = os.fork()\n"
        "    if pid == 0:\n"
        "        try:\n"
        f"            block = b'\\x01' * ({EACH_MB} << 20)  # every page written\n"
        "            os.write(1, b'held\\n')\n"
        "            time.sleep(2)  # all four hold their memory at the same time\n"
        "            os.write(1, b'ok\\n')\n"
        "        finally:\n"
        "            os._exit(0)\n"
        "    children.append(pid)\n"
        "for pid in children:\n"
        "    os.waitpid(pid, 0)\n"
    )
    result = box.run(script=script, timeout=20, limits=Limits(memory_mb=MEMORY_MB))
    held = result.stdout.count(b"ok\n")
    assert held * EACH_MB <= MEMORY_MB, (
        f"{box.backend}: {held} processes held {held * EACH_MB} MB at once under memory_mb={MEMORY_MB}"
    )


def test_the_same_with_exec_d_programs(box: JobServerSandbox) -> None:
    one = f"import time; b = b'\\x01' * ({EACH_MB} << 20); time.sleep(2); print('ok')"
    command = " & ".join([f'python3 -c "{one}"'] * 4) + "; wait"
    result = box.run(["sh", "-c", command], timeout=20, limits=Limits(memory_mb=MEMORY_MB))
    held = result.stdout.count(b"ok\n")
    assert held * EACH_MB <= MEMORY_MB, (
        f"{box.backend}: {held} programs held {held * EACH_MB} MB at once under memory_mb={MEMORY_MB}"
    )


def test_tmpfs_files_do_not_carry_a_job_past_its_memory_limit(box: JobServerSandbox, marker: str) -> None:
    """Files outside the work dir in RAM-backed folders are memory the job holds."""
    limit_mb, ceiling_mb = 128, 512
    script = (
        "import os\n"
        "chunk = b'm' * (8 << 20)  # under the per-file size limit\n"
        "written = 0\n"
        "for folder in ('/dev/shm', '/tmp', '/var/tmp'):\n"
        "    for i in range(64):\n"
        f"        if written >= {ceiling_mb} << 20:\n"
        "            break\n"
        "        try:\n"
        f"            with open(os.path.join(folder, '{marker}-%d' % i), 'wb') as fh:\n"
        "                fh.write(chunk)\n"
        "            written += len(chunk)\n"
        "        except (OSError, MemoryError):\n"
        "            break\n"
        "print('WROTE', written >> 20)\n"
    )
    try:
        result = box.run(script=script, timeout=30, limits=Limits(memory_mb=limit_mb))
        wrote = [
            int(line.split()[1]) for line in result.stdout.decode().splitlines() if line.startswith("WROTE")
        ]
        total = wrote[0] if wrote else 0
        assert total <= limit_mb, (
            f"{box.backend}: the job kept {total} MB in tmpfs under memory_mb={limit_mb}"
        )
    finally:
        _remove_host_leftovers(marker)
        box.reset()


def _remove_host_leftovers(marker: str) -> None:
    """On a backend that shares these folders with the host, the attack's files land there."""
    import glob
    import os

    for folder in ("/dev/shm", "/tmp", "/var/tmp"):
        for path in glob.glob(os.path.join(folder, f"{marker}-*")):
            os.unlink(path)


def test_a_process_limit_binds_the_whole_job(box: JobServerSandbox) -> None:
    script = (
        "import os, time\n"
        "started = 0\n"
        "for _ in range(40):\n"
        "    try:\n"
        "        if os.fork() == 0:\n"
        "            time.sleep(3)\n"
        "            os._exit(0)\n"
        "        started += 1\n"
        "    except OSError:\n"
        "        break\n"
        "print('STARTED', started)\n"
    )
    result = box.run(script=script, timeout=10, limits=Limits(processes=16))
    started = int(result.stdout.split()[-1])
    assert started < 16, f"{box.backend}: {started + 1} processes under processes=16"


@pytest.mark.parametrize(
    "how",
    [
        ["unshare", "-U", "id"],
        ["unshare", "-Ur", "id"],
        ["python3", "-c", "import ctypes, sys; sys.exit(ctypes.CDLL(None).unshare(0x10000000))"],
    ],
    ids=["unshare-U", "unshare-Ur", "ctypes-unshare"],
)
def test_no_new_user_namespace(box: JobServerSandbox, how: list[str]) -> None:
    result = box.run(how, timeout=10)
    assert result.exit_code != 0, f"{box.backend}: {how} made a user namespace: {result.stdout!r}"


def test_no_new_user_namespace_from_a_script(box: JobServerSandbox) -> None:
    script = (
        "import ctypes, os\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "print('RESULT', libc.unshare(0x10000000), ctypes.get_errno())\n"
    )
    result = box.run(script=script, timeout=10)
    assert result.stdout.split()[:2] == [b"RESULT", b"-1"], f"{box.backend}: {result.stdout!r}"
