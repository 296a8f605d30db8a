"""Attack class 5: nothing a job leaves survives a reset, and nothing of a sandbox its close().

An episode's job leaves things behind everywhere it can write — files in every writable
folder it finds, SysV shared memory / semaphores / message queues, POSIX message queues and
shared memory, Unix sockets (path and abstract) held by a background process, processes — and
after ``reset()`` the next episode's job looks for each. The attack succeeds when anything is
found. After ``close()``, the host must hold nothing of the sandbox: no process of its uid, no
mount, no file of its uid in the shared scratch folders, no IPC object, no container.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import json
import os
import subprocess
import zlib
from collections.abc import Callable
from pathlib import Path

from gymhub.sandboxes import create_sandbox
from gymhub.sandboxes.job_client import JobServerSandbox

# Folders a job might write to besides the ones it finds by walking (a fixed list, so that
# the walk's depth bound does not hide the usual places).
USUAL = ["/tmp", "/var/tmp", "/dev/shm", "/dev/mqueue", "/run/lock", "/var/lock", "/run/user"]

LEAVE_FILES = r"""
import json, os
marker = MARKER
usual = USUAL
found = []
for top in usual + ['/']:
    for root, dirs, files in os.walk(top):
        depth = root.count('/')
        if root.startswith(('/proc', '/sys')) or depth > 4:
            dirs[:] = []
            continue
        if os.access(root, os.W_OK | os.X_OK) and root not in found:
            found.append(root)
for extra in (os.getcwd(), os.path.expanduser('~')):
    if os.path.isdir(extra) and os.access(extra, os.W_OK) and extra not in found:
        found.append(extra)
left = []
for folder in found:
    path = os.path.join(folder, '.' + marker)
    try:
        with open(path, 'w') as fh:
            fh.write(marker)
        left.append(path)
    except OSError:
        pass
print(json.dumps(left))
"""

FIND_FILES = r"""
import json, os
left = LEFT
print(json.dumps([path for path in left if os.path.lexists(path)]))
"""


def _host_cleanup(paths: list[str], marker: str) -> None:
    """Where a backend shares a folder with the host, the attack's files land on the host."""
    for path in paths:
        if path.endswith("." + marker):
            Path(path).unlink(missing_ok=True)


def test_files_in_any_writable_place_are_gone_after_reset(box: JobServerSandbox, marker: str) -> None:
    script = LEAVE_FILES.replace("MARKER", repr(marker)).replace("USUAL", repr(USUAL))
    left: list[str] = []
    try:
        result = box.run(script=script, timeout=30)
        assert result.exit_code == 0, result.stderr[-2000:]
        left = json.loads(result.stdout)
        assert left, "the job could write nowhere, not even its work dir"
        box.reset()
        check = box.run(script=FIND_FILES.replace("LEFT", repr(left)), timeout=20)
        survivors = json.loads(check.stdout)
        assert survivors == [], f"{box.backend}: files outlived reset(): {survivors}"
    finally:
        _host_cleanup(left, marker)


# ------------------------------------------------------------------ IPC
LEAVE_IPC = r"""
import ctypes, ctypes.util, os
key = KEY
name = NAME
libc = ctypes.CDLL(None, use_errno=True)
IPC_CREAT = 0o1000
print('shm', libc.shmget(key, 4096, IPC_CREAT | 0o666))
print('sem', libc.semget(key, 1, IPC_CREAT | 0o666))
print('msg', libc.msgget(key, IPC_CREAT | 0o666))
rt = ctypes.CDLL(ctypes.util.find_library('rt') or 'librt.so.1', use_errno=True)
rt.mq_open.restype = ctypes.c_int
print('mq', rt.mq_open(('/' + name).encode(), os.O_CREAT | os.O_RDWR, 0o666, None))
import _posixshmem
try:
    fd = _posixshmem.shm_open('/' + name, os.O_CREAT | os.O_RDWR, 0o666)
    os.ftruncate(fd, 4096)
    print('posix_shm', fd)
except OSError as exc:
    print('posix_shm', -1, exc.errno)
"""

FIND_IPC = r"""
import ctypes, ctypes.util, os
key = KEY
name = NAME
libc = ctypes.CDLL(None, use_errno=True)
found = []
if libc.shmget(key, 0, 0) >= 0:
    found.append('sysv shm')
if libc.semget(key, 0, 0) >= 0:
    found.append('sysv sem')
if libc.msgget(key, 0) >= 0:
    found.append('sysv msg')
rt = ctypes.CDLL(ctypes.util.find_library('rt') or 'librt.so.1', use_errno=True)
if rt.mq_open(('/' + name).encode(), os.O_RDWR) >= 0:
    found.append('posix mq')
import _posixshmem
try:
    _posixshmem.shm_open('/' + name, os.O_RDWR, 0)
    found.append('posix shm')
except OSError:
    pass
print('FOUND', ','.join(found))
"""


def _ipc_names(marker: str) -> tuple[int, str]:
    return zlib.crc32(marker.encode()) & 0x7FFFFFFF or 1, marker


def _remove_host_ipc(key: int, name: str) -> None:
    """On a backend sharing the host's IPC namespace, the objects were made on the host."""
    for flag in ("-M", "-S", "-Q"):
        subprocess.run(["ipcrm", flag, str(key)], capture_output=True)
    librt = ctypes.CDLL(ctypes.util.find_library("rt") or "librt.so.1", use_errno=True)
    librt.mq_unlink(("/" + name).encode())
    Path("/dev/shm", name).unlink(missing_ok=True)


def test_ipc_objects_are_gone_after_reset(box: JobServerSandbox, marker: str) -> None:
    key, name = _ipc_names(marker)
    try:
        made = box.run(script=LEAVE_IPC.replace("KEY", str(key)).replace("NAME", repr(name)), timeout=10)
        assert made.exit_code == 0, made.stderr[-2000:]
        created = [line.split()[0] for line in made.stdout.decode().splitlines() if int(line.split()[1]) >= 0]
        box.reset()
        check = box.run(script=FIND_IPC.replace("KEY", str(key)).replace("NAME", repr(name)), timeout=10)
        assert check.exit_code == 0, check.stderr[-2000:]
        survivors = check.stdout.decode().split("FOUND", 1)[1].strip()
        assert survivors == "", f"{box.backend}: IPC objects outlived reset(): {survivors} (made: {created})"
    finally:
        _remove_host_ipc(key, name)


def test_ipc_objects_are_not_visible_to_the_host(box: JobServerSandbox, marker: str) -> None:
    key, name = _ipc_names(marker)
    try:
        box.run(script=LEAVE_IPC.replace("KEY", str(key)).replace("NAME", repr(name)), timeout=10)
        on_host = [
            line
            for table in ("shm", "sem", "msg")
            for line in Path(f"/proc/sysvipc/{table}").read_text().splitlines()[1:]
            if line.split()[0] == str(key)
        ]
        assert on_host == [], f"{box.backend}: the job's SysV IPC objects are the host's: {on_host}"
    finally:
        _remove_host_ipc(key, name)


# ------------------------------------------------------------------ sockets and processes
LEAVE_LISTENERS = r"""
import os, socket, subprocess, sys
marker = MARKER
code = '''
import os, socket, sys, time
marker = sys.argv[1]
a = socket.socket(socket.AF_UNIX); a.bind(chr(0) + marker); a.listen(1)
p = socket.socket(socket.AF_UNIX); p.bind(os.path.join(sys.argv[2], marker + '.sock')); p.listen(1)
time.sleep(20)
'''
for folder in ('/tmp', os.getcwd()):
    if os.access(folder, os.W_OK):
        subprocess.Popen([sys.executable if sys.executable else 'python3', '-c', code, marker, folder],
                         start_new_session=True, stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
import time; time.sleep(0.5)
print('left')
"""

FIND_LISTENERS = r"""
import os, socket
marker = MARKER
found = []
for address in ['\0' + marker, '/tmp/' + marker + '.sock', os.path.join(os.getcwd(), marker + '.sock')]:
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(1)
    try:
        s.connect(address)
        found.append(repr(address))
    except OSError:
        pass
print('FOUND', ' '.join(found))
"""


def test_sockets_and_processes_are_gone_after_reset(
    box: JobServerSandbox, marker: str, uid_processes: Callable[..., list[str]]
) -> None:
    try:
        left = box.run(script=LEAVE_LISTENERS.replace("MARKER", repr(marker)), timeout=10)
        assert left.stdout.strip() == b"left", left.stderr[-2000:]
        box.reset()
        assert uid_processes(box.job_uid) == [], f"{box.backend}: processes outlived reset()"
        check = box.run(script=FIND_LISTENERS.replace("MARKER", repr(marker)), timeout=10)
        survivors = check.stdout.decode().split("FOUND", 1)[1].strip()
        assert survivors == "", f"{box.backend}: sockets still answer after reset(): {survivors}"
    finally:
        Path(f"/tmp/{marker}.sock").unlink(missing_ok=True)


# ------------------------------------------------------------------ close()
def _host_mounts() -> set[str]:
    return {" ".join(line.split()[3:5]) for line in Path("/proc/self/mountinfo").read_text().splitlines()}


def _files_of_uid(uid: int, folders: list[str]) -> list[str]:
    found = []
    for folder in folders:
        for root, dirs, files in os.walk(folder):
            if root.count("/") - folder.count("/") >= 2:
                dirs[:] = []
            for name in dirs + files:
                path = os.path.join(root, name)
                try:
                    if os.lstat(path).st_uid == uid:
                        found.append(path)
                except OSError:
                    pass
    return found


def test_nothing_of_a_closed_sandbox_remains_on_the_host(
    backend: str, marker: str, uid_processes: Callable[..., list[str]]
) -> None:
    mounts_before = _host_mounts()
    box = create_sandbox(backend)
    assert isinstance(box, JobServerSandbox)
    uid = box.job_uid
    key, name = _ipc_names(marker)
    left: list[str] = []
    try:
        leave = LEAVE_FILES.replace("MARKER", repr(marker)).replace("USUAL", repr(USUAL))
        left = json.loads(box.run(script=leave, timeout=30).stdout)
        box.run(script=LEAVE_IPC.replace("KEY", str(key)).replace("NAME", repr(name)), timeout=10)
        box.run(script=LEAVE_LISTENERS.replace("MARKER", repr(marker)), timeout=10)
        container = getattr(box, "container", None)
        ipc_dir = box.ipc_dir
        box.close()
        remains = {
            "processes": uid_processes(uid),
            "files": _files_of_uid(uid, ["/tmp", "/var/tmp", "/dev/shm", "/run", "/dev/mqueue"]),
            "mounts": sorted(_host_mounts() - mounts_before),
            "ipc_dir": [str(ipc_dir)] if ipc_dir.exists() else [],
            "sysv_ipc": [
                line
                for table in ("shm", "sem", "msg")
                for line in Path(f"/proc/sysvipc/{table}").read_text().splitlines()[1:]
                if str(uid) in line.split()[3:] or line.split()[0] == str(key)  # uids: >= 200000
            ],
        }
        if container is not None:
            listed = subprocess.run(
                ["docker", "ps", "-aq", "--no-trunc", "--filter", f"id={container.id}"],
                capture_output=True,
                text=True,
            ).stdout.strip()
            remains["container"] = [listed] if listed else []
        remains = {k: v for k, v in remains.items() if v}
        # mounts made meanwhile by other tests' sandboxes are not ours: keep those naming ours
        if "mounts" in remains:
            ours = [m for m in remains["mounts"] if str(ipc_dir) in m or ipc_dir.name in m]
            if container is not None:
                ours += [m for m in remains["mounts"] if container.id[:12] in m]
            remains["mounts"] = ours
            remains = {k: v for k, v in remains.items() if v}
        assert remains == {}, f"{backend}: the closed sandbox left {remains}"
    finally:
        box.close()
        _host_cleanup(left, marker)
        _remove_host_ipc(key, name)
        Path(f"/tmp/{marker}.sock").unlink(missing_ok=True)
