"""Attack class 2: a job never inherits memory that held another job's data.

Job 1 writes a marker to stdout, another to stderr, another to the side channel, and is fed a
fourth on stdin. Job 2 (a script: forked, like every script job, from a process of the
sandbox) then reads its whole address space — /proc/self/maps and /proc/self/mem, or the
readable anonymous mappings directly where /proc/self/mem is closed to it — looking for them.
The attack succeeds when any marker is found: job 2 could read job 1's output (a previous
episode's answer, the hidden tests' report on the side channel).

Job 2 must not bring the markers itself: it gets each one as two halves, never joined in its
source or its request, and only a match of both halves side by side counts.
"""

from __future__ import annotations

import shlex
import uuid

import pytest

from gymhub.sandboxes.job_client import JobServerSandbox

STREAMS = ("stdout", "stderr", "channel", "stdin")
COPIES = 20  # each marker is written this many times: a realistic amount of output

SCANNER = r"""
import ctypes, os
pairs = PAIRS
found = set()


def search(data):
    for index, (head, tail) in enumerate(pairs):
        at = data.find(head)
        while at != -1:
            if data[at + len(head) : at + len(head) + len(tail)] == tail:
                found.add(index)
                break
            at = data.find(head, at + 1)


with open('/proc/self/maps') as fh:
    regions = [line.split() for line in fh]
try:
    mem = open('/proc/self/mem', 'rb', buffering=0)
except OSError:
    mem = None
scanned = 0
for fields in regions:
    start, end = (int(x, 16) for x in fields[0].split('-'))
    name = fields[5] if len(fields) > 5 else ''
    if 'r' not in fields[1] or name in ('[vvar]', '[vvar_vclock]', '[vsyscall]'):
        continue
    if mem is not None:
        try:
            mem.seek(start)
            data = mem.read(end - start)
        except (OSError, ValueError, OverflowError):
            continue
    elif name.startswith('/'):
        continue  # a mapped file (a library): no job data lives there
    else:
        data = ctypes.string_at(start, end - start)
    scanned += len(data)
    search(data)
    del data
print('SCANNED', scanned, 'VIA', 'mem' if mem is not None else 'ctypes')
print('FOUND', sorted(found))
"""


def _markers() -> dict[str, tuple[str, str]]:
    return {stream: (uuid.uuid4().hex, uuid.uuid4().hex) for stream in STREAMS}


def _scan(box: JobServerSandbox, markers: dict[str, tuple[str, str]]) -> list[str]:
    pairs = [(head.encode(), tail.encode()) for head, tail in markers.values()]
    result = box.run(script=SCANNER.replace("PAIRS", repr(pairs)), timeout=30)
    assert result.exit_code == 0, result.stderr[-3000:]
    lines = result.stdout.decode().splitlines()
    scanned = int(lines[0].split()[1])
    assert scanned > 1_000_000, f"the scanner read too little to mean anything: {lines}"
    indices = eval(lines[1].removeprefix("FOUND "))  # a list of ints, printed by the scanner
    return [list(markers)[i] for i in indices]


def _first_job(box: JobServerSandbox, markers: dict[str, tuple[str, str]], kind: str) -> None:
    joined = {stream: (head + tail + "\n") * COPIES for stream, (head, tail) in markers.items()}
    if kind == "script":
        script = (
            "import os, sys\n"
            "sys.stdin.buffer.read()\n"
            f"sys.stdout.write({joined['stdout']!r})\n"
            f"sys.stderr.write({joined['stderr']!r})\n"
            f"os.write(3, {joined['channel'].encode()!r})\n"
        )
        first = box.run(script=script, stdin=joined["stdin"].encode(), side_channel=True, timeout=10)
    else:
        command = (
            f"cat >/dev/null; printf %s {shlex.quote(joined['stdout'])}; "
            f"printf %s {shlex.quote(joined['stderr'])} >&2; printf %s {shlex.quote(joined['channel'])} >&3"
        )
        first = box.run(["sh", "-c", command], stdin=joined["stdin"].encode(), side_channel=True, timeout=10)
    assert first.exit_code == 0, first.stderr[-2000:]
    assert first.stdout == joined["stdout"].encode() and first.channel == joined["channel"].encode()


@pytest.mark.parametrize("first_job", ["script", "program"])
def test_the_next_job_finds_nothing_of_the_last_ones_io(box: JobServerSandbox, first_job: str) -> None:
    markers = _markers()
    _first_job(box, markers, first_job)
    found = _scan(box, markers)
    assert found == [], f"{box.backend}: job 2 read job 1's {found} in its own memory"


def test_a_reset_does_not_clear_the_residue_either(box: JobServerSandbox) -> None:
    """Between episodes a pool resets the sandbox: the next episode's job must still find nothing."""
    markers = _markers()
    _first_job(box, markers, "script")
    box.reset()
    found = _scan(box, markers)
    assert found == [], f"{box.backend}: after reset(), a job read the last episode's {found}"
