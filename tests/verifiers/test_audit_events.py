"""RLVP events observed at run time: the function-test harness's audit hook (PEP 578).

Each candidate below runs in a real sandbox through :func:`run_function_tests`, as the code
verifier runs it. The attacks on the hook and its channel come first: each was a clean pass
with no event before the hook existed (the AST rules do not see through these spellings);
now each either shows its event or voids the run.
"""

from __future__ import annotations

import base64

import pytest
from backends import BACKENDS, require

from gymhub.sandboxes.warm_pool import shared_pool
from gymhub.verifiers.checkers.function_tests import (
    FunctionTest,
    TestReport,
    _parse_channel,
    run_function_tests,
)

TESTS = [FunctionTest(args=[i], expected=i + 1) for i in range(3)]
HOSTNAME = ("filesystem-access", "open", "read /etc/hostname")
# Finds the harness's private copies of the channel (fd 3): same pipe, another number.
CHANNEL_COPIES = (
    "import os\n"
    "def _copies():\n"
    "    st = os.fstat(3)\n"
    "    out = []\n"
    "    for fd in range(64):\n"
    "        try:\n"
    "            s = os.fstat(fd)\n"
    "        except OSError:\n"
    "            continue\n"
    "        if fd != 3 and (s.st_dev, s.st_ino) == (st.st_dev, st.st_ino):\n"
    "            out.append(fd)\n"
    "    return out\n"
)


def run(source: str) -> TestReport:
    return run_function_tests(source, "f", TESTS, timeout=10)


def observed(report: TestReport) -> set[tuple[str, str, str]]:
    return {(e.rule, e.event, e.detail) for e in report.events}


def assert_not_hidden(report: TestReport, event: str) -> None:
    """The attack either shows its event or fails the run: never a clean pass."""
    seen = {e.event for e in report.events}
    assert event in seen or (report.status != "ok" and report.passed < report.total), report


# ---------------------------------------------------------------- attacks on the channel


def test_closing_the_hooks_channel_stops_the_operation_and_voids_the_run() -> None:
    source = CHANNEL_COPIES + (
        "for fd in _copies():\n"
        "    os.close(fd)\n"
        "data = open('/etc/hostname').read()\n"
        "def f(x):\n    return x + 1\n"
    )
    report = run(source)
    assert report.status == "tampered" and report.passed == 0


def test_swapping_a_private_pipe_over_the_channel_and_back_voids_the_run() -> None:
    source = CHANNEL_COPIES + (
        "fds = _copies()\n"
        "saved = [os.dup(fd) for fd in fds]\n"
        "r, w = os.pipe()\n"
        "for fd in fds:\n"
        "    os.dup2(w, fd)\n"
        "open('/etc/hostname').read()\n"
        "for fd, old in zip(fds, saved):\n"
        "    os.dup2(old, fd)\n"
        "def f(x):\n    return x + 1\n"
    )
    report = run(source)
    assert report.status == "tampered" and report.passed == 0


def test_forged_complete_report_then_a_silenced_operation_is_void() -> None:
    """Write a full passing report on fd 3, silence the hook, act, exit 0: the hook kills the
    job before the operation and the host reads the exit status."""
    lines = "".join(f'{{"i": {i}, "ok": true, "value": {i + 1}}}\\n' for i in range(3))
    source = CHANNEL_COPIES + (
        f"os.write(3, b'{lines}' + b'{{\"done\": true}}\\n')\n"
        "for fd in _copies():\n"
        "    os.close(fd)\n"
        "open('/etc/hostname').read()\n"
        "os._exit(0)\n"
        "def f(x):\n    return x + 1\n"
    )
    report = run(source)
    assert report.status == "tampered" and report.passed == 0


def test_patching_os_write_does_not_silence_the_hook() -> None:
    source = (
        "import os\n_w = os.write\n"
        "def _quiet(fd, data):\n"
        "    return len(data) if b'audit' in bytes(data) else _w(fd, data)\n"
        "os.write = _quiet\n"
        "def f(x):\n    open('/etc/hostname').read()\n    return x + 1\n"
    )
    report = run(source)
    assert report.status == "ok" and report.passed == 3
    assert ("filesystem-access", "open", "read /etc/hostname") in observed(report)


def test_patching_builtins_does_not_silence_or_reword_the_hook() -> None:
    source = (
        "import builtins, os\n"
        "_open = builtins.open\n"
        "builtins.len = lambda *a: 0\n"
        "builtins.str = lambda *a: 'x'\n"
        "builtins.OSError = KeyError\n"
        "def f(x):\n    _open('/etc/hostname').read()\n    return x + 1\n"
    )
    report = run(source)
    assert ("filesystem-access", "open", "read /etc/hostname") in observed(report)


def test_a_partial_line_cannot_swallow_an_event() -> None:
    """An unterminated prefix on fd 3 would glue the hook's line to the candidate's text; the
    hook's leading newline leaves the prefix a malformed line of its own instead."""
    source = (
        "import os\n"
        'os.write(3, b\'{"i": 0, "ok": false, "error": "\')\n'
        "open('/etc/hostname').read()\n"
        "def f(x):\n    return x + 1\n"
    )
    report = run(source)
    assert report.status == "tampered"
    assert ("filesystem-access", "open", "read /etc/hostname") in observed(report)


def test_an_early_forged_done_voids_the_run() -> None:
    report = run("import os\nos.write(3, b'{\"done\": true}\\n')\ndef f(x):\n    return x + 1\n")
    assert report.status == "tampered" and report.passed == 0


def test_an_event_after_the_report_is_complete_voids_it() -> None:
    """The job ends right after ``done`` (a candidate thread or finaliser has no time to act),
    but were an operation to slip in there, its event would come after ``done``: void."""
    done = b'{"i":0,"ok":true,"value":1}\n{"done":true}\n'
    late = b'\n{"audit":"open","detail":"read /etc/hostname"}\n'
    outputs, status, events = _parse_channel(done + late, 1)
    assert status == "tampered" and not outputs
    assert [(e.rule, e.event, e.detail) for e in events] == [HOSTNAME]
    assert _parse_channel(late + done, 1)[1] == "ok"


def test_forged_event_lines_only_add_penalties_and_unknown_ones_void() -> None:
    fake = run(
        'import os\nos.write(3, b\'{"audit":"os.system","detail":"x"}\\n\')\ndef f(x):\n    return x + 1\n'
    )
    assert fake.status == "ok" and ("process-spawn", "os.system", "x") in observed(fake)
    unknown = run(
        'import os\nos.write(3, b\'{"audit":"harmless","detail":""}\\n\')\ndef f(x):\n    return x + 1\n'
    )
    assert unknown.status == "tampered" and unknown.passed == 0


def test_sys_audit_by_the_candidate_can_only_add_events() -> None:
    """``sys.audit`` hands hooks a plain copy of the name: a str subclass runs no code in the
    hook, and a made-up event is one more penalty for its author."""
    source = (
        "import sys\n"
        "class S(str):\n"
        "    def __hash__(self):\n        raise RuntimeError('boom')\n"
        "sys.audit(S('os.system'), b'fake')\n"
        "def f(x):\n    open('/etc/hostname').read()\n    return x + 1\n"
    )
    report = run(source)
    assert report.status == "ok" and report.passed == 3
    assert observed(report) == {HOSTNAME, ("process-spawn", "os.system", "fake")}


def test_exhausting_the_stack_cannot_open_a_file_unseen() -> None:
    """Near the recursion limit the hook itself may fail: then the audited open fails too."""
    source = (
        "import sys\n"
        "def _deep(n):\n"
        "    if n:\n        return _deep(n - 1)\n"
        "    try:\n        return open('/etc/hostname').read() is not None\n"
        "    except BaseException:\n        return False\n"
        "def _probe():\n"
        "    opened = False\n"
        "    for depth in range(sys.getrecursionlimit() - 40, sys.getrecursionlimit()):\n"
        "        try:\n            opened = _deep(depth) or opened\n"
        "        except RecursionError:\n            pass\n"
        "    return opened\n"
        "def f(x):\n    return x + 1 if _probe() else -1\n"
    )
    report = run(source)
    if report.passed:  # some open succeeded: then it was reported
        assert ("filesystem-access", "open", "read /etc/hostname") in observed(report)


def test_a_hook_frame_leaked_by_a_traceback_gives_nothing_to_rewrite() -> None:
    """Make the hook fail at the recursion limit, take its frame from the traceback and try to
    switch it off through what it holds: closures (``cell_contents``) or mutable state."""
    source = (
        "import sys\n"
        "rewired, reached = [], []\n"
        "def _switch_off(frame):\n"
        "    reached.append(frame.f_code.co_name)\n"
        "    for name, value in frame.f_locals.items():\n"
        "        for cell in getattr(value, '__closure__', None) or ():\n"
        "            try:\n"
        "                cell.cell_contents = (lambda *a, **k: True)\n"
        "                rewired.append(name)\n"
        "            except Exception:\n                pass\n"
        "        for method in ('clear',):\n"
        "            if hasattr(value, method) and not isinstance(value, type):\n"
        "                try:\n"
        "                    getattr(value, method)()\n"
        "                    rewired.append(name)\n"
        "                except Exception:\n                    pass\n"
        "def _deep(n):\n"
        "    if n:\n        return _deep(n - 1)\n"
        "    try:\n        open('/etc/hostname')\n"
        "    except BaseException as e:\n"
        "        tb = e.__traceback__\n"
        "        while tb is not None:\n"
        "            if tb.tb_frame.f_code.co_filename == 'function_harness.py':\n"
        "                _switch_off(tb.tb_frame)\n"
        "            tb = tb.tb_next\n"
        "for d in range(sys.getrecursionlimit() - 60, sys.getrecursionlimit()):\n"
        "    try:\n        _deep(d)\n"
        "    except RecursionError:\n        pass\n"
        "__import__('os').listdir('/')\n"
        "def f(x):\n    return x + 1 if reached else -1\n"
    )
    report = run(source)
    assert report.passed == 3  # the attack did reach the hook's frame (else this proves nothing)
    assert ("filesystem-access", "os.listdir", "/") in observed(report), report


# ---------------------------------------------------------------- indirect access observed

ROOT_LISTING = ("filesystem-access", "os.listdir", "/")
ENCODED = base64.b64encode(b"import os\nos.listdir('/')\n").decode()


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("getattr(__import__('builtins'), 'op' + 'en')('/etc/hostname').read()", HOSTNAME),
        ("__import__('io').open('/etc/hostname').read()", HOSTNAME),
        ("__import__('codecs').open('/etc/hostname').read()", HOSTNAME),
        ("__import__('pathlib').Path('/etc/hostname').read_text()", HOSTNAME),
        (
            "__import__('importlib').import_module('os').listdir('/')",
            ("filesystem-access", "os.listdir", "/"),
        ),
        (f"exec(__import__('base64').b64decode('{ENCODED}'))", ("filesystem-access", "os.listdir", "/")),
        (
            "o = __import__('os'); o.close(o.open('/etc/hostname', o.O_RDONLY))",
            ("filesystem-access", "open", "read /etc/hostname"),
        ),
        ("open('conftest.py', 'w').write('x')", ("filesystem-access", "open", "write conftest.py")),
        (
            "import os; open(os.getcwd() + '/sitecustomize.py', 'w').write('x')",
            ("filesystem-access", "open", "write ./sitecustomize.py"),
        ),
        ("__import__('sqlite3').connect('tests.db')", ("filesystem-access", "sqlite3.connect", "tests.db")),
        (
            "__import__('socket').getaddrinfo('example.com', 80)",
            ("network-access", "socket.getaddrinfo", "example.com"),
        ),
        (
            "__import__('socket').create_connection(('127.0.0.1', 9), timeout=1)",
            ("network-access", "socket.__new__", "family 2"),
        ),
        ("__import__('subprocess').run(['true'])", ("process-spawn", "subprocess.Popen", "true")),
        ("__import__('os').system('true')", ("process-spawn", "os.system", "true")),
        ("__import__('ct' + 'ypes').CDLL(None)", ("runtime-patching", "import", "ctypes")),
        ("__import__('sys').settrace(None)", ("runtime-patching", "sys.settrace", "")),
        ("__import__('gc').get_objects()", ("runtime-patching", "gc.get_objects", "")),
        ("__import__('sys').addaudithook(lambda *a: None)", ("runtime-patching", "sys.addaudithook", "")),
        ("__import__('os').kill(__import__('os').getpid(), 0)", ("exit-call", "os.kill", "")),
    ],
)
def test_indirect_access_is_observed(body: str, expected: tuple[str, str, str]) -> None:
    source = f"def f(x):\n    try:\n        {body}\n    except Exception:\n        pass\n    return x + 1\n"
    report = run(source)
    assert report.passed == 3
    assert expected in observed(report), report.events


def test_same_code_same_events() -> None:
    source = (
        "import os, subprocess\n"
        "def f(x):\n"
        "    open('notes.txt', 'w').write(str(x))\n"
        "    os.listdir('.')\n"
        "    return x + 1\n"
    )
    first, second = run(source), run(source)
    assert first.events and first == second
    assert first.as_details()["runtime_events"] == second.as_details()["runtime_events"]


def test_ordinary_solutions_raise_no_events() -> None:
    """Imports read the standard library; namedtuple, typing, enum, warnings, tracebacks and
    asyncio use frames, exec and socket pairs: none of that is a violation."""
    source = (
        "import asyncio, bisect, collections, copy, dataclasses, datetime, decimal, enum\n"
        "import fractions, functools, heapq, itertools, json, math, operator, random, re\n"
        "import statistics, string, textwrap, traceback, typing, unicodedata, warnings\n"
        "import sqlite3, hashlib, inspect, uuid\n"
        "T = typing.TypeVar('T')\n"
        "Point = collections.namedtuple('Point', 'x y')\n"
        "Color = enum.Enum('Color', 'RED GREEN')\n"
        "@dataclasses.dataclass\nclass Box:\n    v: int\n"
        "def f(x):\n"
        "    warnings.warn('careful')\n"
        "    try:\n        1 / 0\n    except ZeroDivisionError:\n        traceback.format_exc()\n"
        "    async def twice(v):\n        return v * 2\n"
        "    asyncio.run(twice(x))\n"
        "    sqlite3.connect(':memory:').execute('select 1')\n"
        "    json.loads(json.dumps(copy.deepcopy([Point(x, x), Box(x).v])))\n"
        "    return x + 1\n"
    )
    report = run(source)
    assert report.status == "ok" and report.passed == 3
    assert report.events == []
    assert "runtime_events" not in report.as_details()


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_harness_imports_nothing_the_zygote_has_not_loaded(backend: str) -> None:
    """Each job forks from the zygote: a module the harness imports that the zygote has not
    loaded is imported again in every job (``typing`` alone cost 5 ms of CPU per verification).
    A trivial job sees the zygote's modules; a harness job must see exactly the same."""
    require(backend)
    with shared_pool(backend).sandbox() as box:
        result = box.run(script="import sys; print(' '.join(sorted(sys.modules)))", timeout=10)
    zygote_modules = result.stdout.decode().split()
    assert "os" in zygote_modules and "typing" not in zygote_modules
    source = "def f():\n    import sys\n    return sorted(sys.modules)\n"
    report = run_function_tests(
        source, "f", [FunctionTest(args=[], expected=zygote_modules)], backend=backend
    )
    assert report.status == "ok"
    assert report.passed == 1, "the harness loaded modules the zygote had not (or dropped some)"
