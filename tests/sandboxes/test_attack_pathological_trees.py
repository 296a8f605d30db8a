"""Attack class 9: pathological trees do not wedge a sandbox.

A job leaves a work dir built to break whoever walks it: 10,000 nested folders, as many files
as it can make in a few seconds (up to a million), names with newlines, bytes that are not
UTF-8 and 255-byte names, folders it made unreadable, and special files that block whoever
opens them (a FIFO). Afterwards list_files / snapshot / read_file / write_file must each
either work or raise SandboxError — within a bound, never hang — and reset() must either
leave an empty, working sandbox or, if it fails, the sandbox must say it is dead
(``alive()`` is False) so that a pool replaces it instead of handing it out dirty.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from gymhub.errors import SandboxError
from gymhub.sandboxes.job_client import JobServerSandbox

OP_BOUND_S = 60.0  # one host operation on a huge tree: generous, but a hang fails

TREES = {
    "nested_10000_deep": (
        "import os\n"
        "os.mkdir('deep')\n"
        "os.chdir('deep')\n"
        "for _ in range(10000):\n"
        "    os.mkdir('d')\n"
        "    os.chdir('d')\n"
        "open('bottom', 'w').write('x')\n"
    ),
    "a_million_files_or_as_many_as_fit": (
        "import os, time\n"
        "end = time.monotonic() + 8\n"
        "made = 0\n"
        "try:\n"
        "    for group in range(1000):\n"
        "        os.mkdir(f'g{group}')\n"
        "        for i in range(1000):\n"
        "            os.close(os.open(f'g{group}/f{i}', os.O_CREAT | os.O_WRONLY, 0o644))\n"
        "            made += 1\n"
        "        if time.monotonic() > end:\n"
        "            break\n"
        "except OSError as exc:  # out of inodes or space: as many as fit\n"
        "    print('STOPPED', exc.errno)\n"
        "print('MADE', made)\n"
    ),
    "odd_names": (
        "import os\n"
        "names = [b'new\\nline', b'\\xff\\xfe not utf-8', b'x' * 255, b'-rf', b' ', b'\\\\', b'...',\n"
        "         b'carriage\\rreturn', b'tab\\tand \\x1b[31m escape', 'ünïcödé'.encode()]\n"
        "for name in names:\n"
        "    os.mkdir(name)\n"
        "    with open(os.path.join(name, name), 'wb') as fh:\n"
        "        fh.write(name)\n"
        "for _ in range(30):  # a path far over PATH_MAX\n"
        "    os.mkdir(b'y' * 255)\n"
        "    os.chdir(b'y' * 255)\n"
    ),
    "unreadable_folders": (
        "import os\n"
        "os.makedirs('locked/inner/more')\n"
        "open('locked/inner/more/f', 'w').write('x')\n"
        "os.chmod('locked/inner/more', 0)\n"
        "os.chmod('locked/inner', 0)\n"
        "os.chmod('locked', 0)\n"
        "os.mkdir('wo')\n"
        "open('wo/f', 'w').write('x')\n"
        "os.chmod('wo', 0o300)\n"
    ),
    "fifos_and_sockets": (
        "import os, socket\n"
        "os.mkfifo('fifo')\n"
        "os.mkfifo('also.txt')\n"
        "s = socket.socket(socket.AF_UNIX)\n"
        "s.bind('sock')\n"
        "os.symlink('fifo', 'link-to-fifo')\n"
        "os.symlink('loop-b', 'loop-a')\n"
        "os.symlink('loop-a', 'loop-b')\n"
    ),
}


@pytest.mark.parametrize("tree", sorted(TREES))
def test_a_pathological_tree_does_not_wedge_the_sandbox(
    box: JobServerSandbox, tree: str, bounded: Callable[..., Any]
) -> None:
    built = bounded(box, 60, lambda: box.run(script=TREES[tree], timeout=30))
    assert built.exit_code == 0, built.stderr[-2000:]

    def attempt(fn: Callable[..., Any], *args: Any) -> Any:
        try:
            return bounded(box, OP_BOUND_S, fn, *args)
        except SandboxError as exc:
            return exc

    attempt(box.list_files)
    attempt(box.snapshot)
    for path in ("fifo", "also.txt", "link-to-fifo", "sock", "loop-a", "locked/inner/more/f", "wo/f"):
        attempt(box.read_file, path)
    for path in ("fifo", "also.txt", "link-to-fifo", "loop-a"):
        attempt(box.write_file, path, b"host data")
    reset = attempt(box.reset)
    alive = bounded(box, OP_BOUND_S, box.alive)
    if isinstance(reset, SandboxError):
        assert not alive, f"{box.backend}/{tree}: reset() failed ({reset}) yet the sandbox says it is alive"
        return
    assert alive, f"{box.backend}/{tree}: reset() returned but the sandbox is dead"
    listed = bounded(box, OP_BOUND_S, box.list_files)
    assert listed == [], f"{box.backend}/{tree}: reset() left {len(listed)} entries, e.g. {listed[:3]}"
    check = bounded(box, 30, lambda: box.run(["sh", "-c", "ls -A | wc -l"], timeout=10))
    assert check.stdout.strip() == b"0", f"{box.backend}/{tree}: the job still sees {check.stdout!r} entries"
