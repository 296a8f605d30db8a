"""Attack class 10: the kernel's wide doors are shut (a seccomp filter, or Docker's default one).

Each probe makes one system call a job has no use for and that has a history of kernel
exploits — a new user namespace, mount (inside a user namespace, where it would otherwise
succeed), keyctl/add_key, bpf, perf_event_open, ptrace of another process of the job — with
arguments under which it would succeed if allowed. The attack succeeds when the call does;
a refusal (EPERM, ENOSYS, EACCES) holds. Each probe runs as a forked script and as an exec'd
program, since a filter installed on one path only is a filter with a hole.
"""

from __future__ import annotations

import pytest

from gymhub.sandboxes.job_client import JobServerSandbox

PRELUDE = r"""
import ctypes, os, struct, sys, time
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long


def report(result):
    err = ctypes.get_errno() if result < 0 else 0
    print('RESULT', 'ok' if result >= 0 else 'refused', err, os.strerror(err) if err else '')
"""

PROBES = {
    "new_user_namespace": "report(libc.unshare(0x10000000))\n",
    "mount_in_a_user_namespace": (
        "uid = os.getuid()\n"
        "libc.prctl(4, 1, 0, 0, 0)  # PR_SET_DUMPABLE: a forked job may write its own uid_map\n"
        "if libc.unshare(0x10000000 | 0x00020000) != 0:\n"
        "    report(-1)\n"
        "else:\n"
        "    open('/proc/self/setgroups', 'w').write('deny')\n"
        "    open('/proc/self/uid_map', 'w').write(f'0 {uid} 1')\n"
        "    os.makedirs('mnt', exist_ok=True)\n"
        "    report(libc.mount(b'none', b'mnt', b'tmpfs', 0, None))\n"
    ),
    "keyctl": (
        # add_key(2) = 248, keyctl(2) = 250 on x86_64; KEYCTL_JOIN_SESSION_KEYRING = 1
        "joined = libc.syscall(250, 1, b'gymhub-attack')\n"
        "added = libc.syscall(248, b'user', b'gymhub-attack', b'x', 1, -3)  # session keyring\n"
        "report(max(joined, added))\n"
    ),
    "bpf": (
        # BPF_MAP_CREATE of a 1-entry array map: allowed to anyone when unprivileged bpf is on
        "attr = struct.pack('IIII', 2, 4, 4, 1) + bytes(112)\n"
        "buf = ctypes.create_string_buffer(attr, len(attr))\n"
        "report(libc.syscall(321, 0, buf, len(attr)))\n"
    ),
    "perf_event_open": (
        # a software CPU clock on this process only, user space only: paranoid <= 2 allows it
        "attr = bytearray(128)\n"
        "struct.pack_into('IIQ', attr, 0, 1, 128, 0)  # PERF_TYPE_SOFTWARE, size, PERF_COUNT_SW_CPU_CLOCK\n"
        "struct.pack_into('Q', attr, 40, (1 << 0) | (1 << 5) | (1 << 6))  # disabled, exclude_kernel/hv\n"
        "buf = ctypes.create_string_buffer(bytes(attr), 128)\n"
        "report(libc.syscall(298, buf, 0, -1, -1, 0))\n"
    ),
    "ptrace_another_process": (
        # the victim is exec'd (dumpable), of the same uid: only a filter stops the attach
        "import subprocess\n"
        "victim = subprocess.Popen(['sleep', '5'])\n"
        "time.sleep(0.2)\n"
        "result = libc.ptrace(16, victim.pid, None, None)  # PTRACE_ATTACH\n"
        "report(result)\n"
        "victim.kill()\n"
    ),
}


@pytest.mark.parametrize("probe", sorted(PROBES))
@pytest.mark.parametrize("mode", ["script", "program"])
def test_the_call_is_refused(box: JobServerSandbox, probe: str, mode: str) -> None:
    source = PRELUDE + PROBES[probe]
    if mode == "script":
        result = box.run(script=source, timeout=15)
    else:
        result = box.run(["python3", "-c", source], timeout=15)
    lines = [line for line in result.stdout.decode().splitlines() if line.startswith("RESULT")]
    assert lines, f"{box.backend}/{probe}: the probe did not report: {result.stderr[-1500:]!r}"
    assert lines[-1].split()[1] == "refused", f"{box.backend}/{probe} ({mode}) succeeded: {lines[-1]}"
