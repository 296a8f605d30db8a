"""Attack class 7: the root-run server never follows a path a job can change.

The server (root on every backend) reads and writes the work dir for the host: write_file,
read_file, list_files, snapshot, restore. A job plants symlinks there — to /etc, to /, to a
host folder holding a root-only secret, to the folder where the server's own socket lives —
and the host then works with paths through them. Then the same while a job keeps swapping a
real folder and a symlink under the same name (renameat2 RENAME_EXCHANGE: atomic), so that a
check-then-open finds a folder and opens through a link. Nothing outside the work dir may
change, and no byte or name of it may come back.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gymhub.errors import SandboxError
from gymhub.sandboxes.job_client import JobServerSandbox


class Target:
    """A host folder the job must not reach, with a root-only secret in it."""

    def __init__(self, marker: str) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="gymhub-attack-target-", dir="/tmp"))
        os.chmod(self.folder, 0o755)
        self.secret = f"secret-{marker}"
        (self.folder / "secret").write_text(self.secret)
        os.chmod(self.folder / "secret", 0o600)

    def state(self) -> dict[str, bytes]:
        return {p.name: p.read_bytes() for p in self.folder.iterdir()}


@pytest.fixture
def target(marker: str) -> Iterator[Target]:
    made = Target(marker)
    yield made
    shutil.rmtree(made.folder, ignore_errors=True)


def _inside_targets(box: JobServerSandbox, target: Target) -> list[str]:
    """Places outside the work dir, as a job names them: the host folder (the same path on
    the local backend), system folders, and the server's socket folder under each name a
    backend gives it."""
    return [
        str(target.folder),
        "/etc",
        "/",
        str(box.ipc_dir),
        "/tmp/.gymhub-ipc",
        "/run/gymhub",
        "/opt/gymhub",
    ]


def _outside_state(box: JobServerSandbox, target: Target, name: str) -> dict[str, object]:
    """What the host can see of the places a write could land."""
    return {
        "target": target.state(),
        "ipc_dir": os.path.lexists(box.ipc_dir / name),
        "etc": os.path.lexists(f"/etc/{name}"),
        "root": os.path.lexists(f"/{name}"),
    }


def _cleanup_outside(box: JobServerSandbox, name: str) -> None:
    for path in (f"/etc/{name}", f"/{name}", str(box.ipc_dir / name)):
        if os.path.lexists(path) and not os.path.isdir(path):
            os.unlink(path)


def _plant_links(box: JobServerSandbox, places: list[str]) -> None:
    script = (
        "import os\n"
        f"places = {places!r}\n"
        "for i, place in enumerate(places):\n"
        "    os.symlink(place, f'l{i}')\n"
        "    os.makedirs(f'deep{i}/a', exist_ok=True)\n"
        "    os.symlink(place, f'deep{i}/a/b')\n"
        "    os.symlink(f'chain{i}b', f'chain{i}a')\n"
        "    os.symlink(place, f'chain{i}b')\n"
        "    os.symlink(os.path.join(place, 'secret'), f'file{i}')\n"
    )
    result = box.run(script=script, timeout=10)
    assert result.exit_code == 0, result.stderr[-2000:]


def _try(fn: object, *args: object) -> object:
    try:
        return fn(*args)  # type: ignore[operator]
    except SandboxError as exc:
        return exc


def test_host_file_operations_never_go_through_a_jobs_symlinks(
    box: JobServerSandbox, target: Target, marker: str
) -> None:
    name = f"gymhub-attack-{marker[-12:]}"
    places = _inside_targets(box, target)
    before = _outside_state(box, target, name)
    try:
        _plant_links(box, places)
        read_back: list[bytes] = []
        for i in range(len(places)):
            for via in (f"l{i}", f"deep{i}/a/b", f"chain{i}a"):
                _try(box.write_file, f"{via}/{name}", b"pwned")
                got = _try(box.read_file, f"{via}/secret")
                if isinstance(got, bytes):
                    read_back.append(got)
            _try(box.write_file, f"file{i}", b"pwned")  # the link itself names a file outside
            got = _try(box.read_file, f"file{i}")
            if isinstance(got, bytes):
                read_back.append(got)
        listed = _try(box.list_files)
        snap = _try(box.snapshot)
        if isinstance(snap, str):
            _try(box.restore, snap)
        after = _outside_state(box, target, name)
        assert after == before, f"{box.backend}: a host file operation changed something outside the work dir"
        assert not any(target.secret.encode() in data for data in read_back), (
            f"{box.backend}: read the secret"
        )
        if isinstance(listed, list):
            links = [
                link
                for i in range(len(places))
                for link in (f"l{i}", f"chain{i}a", f"chain{i}b", f"deep{i}/a/b")
            ]
            through = [e.path for e in listed if any(e.path.startswith(link + "/") for link in links)]
            assert through == [], f"{box.backend}: list_files walked through a symlink: {through[:5]}"
        everything = box.run(["sh", "-c", "cat $(find . -type f) 2>/dev/null; true"], timeout=10)
        assert target.secret.encode() not in everything.stdout, f"{box.backend}: the secret was copied in"
    finally:
        _cleanup_outside(box, name)


SWAPPER = r"""
import ctypes, os, subprocess, sys, time
place = PLACE
code = '''
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
os.makedirs('swap_dir', exist_ok=True)
if not os.path.lexists('swap_link'):
    os.symlink(sys.argv[1], 'swap_link')
os.makedirs('d', exist_ok=True)
end = time.monotonic() + float(sys.argv[2])
AT_FDCWD, RENAME_EXCHANGE, SYS_renameat2 = -100, 2, 316
while time.monotonic() < end:
    libc.syscall(SYS_renameat2, AT_FDCWD, b'd', AT_FDCWD, b'swap_link', RENAME_EXCHANGE)
'''
# the swapper runs in the job and, detached, after it (if the sandbox lets it live on)
subprocess.Popen([sys.executable or 'python3', '-c', code, place, '8'], start_new_session=True,
                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
time.sleep(4)
"""


def test_a_folder_swapped_for_a_symlink_mid_operation_leads_nowhere(
    box: JobServerSandbox, target: Target, marker: str
) -> None:
    name = f"gymhub-attack-{marker[-12:]}"
    before = _outside_state(box, target, name)
    job = threading.Thread(
        target=lambda: box.run(script=SWAPPER.replace("PLACE", repr(str(target.folder))), timeout=6),
        daemon=True,
    )
    read_back: list[bytes] = []
    listed_names: set[str] = set()
    try:
        job.start()
        time.sleep(0.5)
        end = time.monotonic() + 7
        while time.monotonic() < end:
            _try(box.write_file, f"d/{name}", b"pwned")
            got = _try(box.read_file, "d/secret")
            if isinstance(got, bytes):
                read_back.append(got)
            listed = _try(box.list_files)
            if isinstance(listed, list):
                listed_names |= {os.path.basename(entry.path) for entry in listed}
            snap = _try(box.snapshot)
            if isinstance(snap, str):
                _try(box.restore, snap)
        job.join(30)
        after = _outside_state(box, target, name)
        assert after == before, f"{box.backend}: the race changed something outside the work dir"
        assert not any(target.secret.encode() in data for data in read_back), (
            f"{box.backend}: read the secret"
        )
        assert "secret" not in listed_names, f"{box.backend}: list_files listed the folder outside"
        everything = box.run(["sh", "-c", "cat $(find . -type f) 2>/dev/null; true"], timeout=10)
        assert target.secret.encode() not in everything.stdout, f"{box.backend}: the secret was copied in"
    finally:
        job.join(30)
        _cleanup_outside(box, name)
