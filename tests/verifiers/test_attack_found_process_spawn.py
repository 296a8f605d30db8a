"""Found by attacking the code verifier: a process spawned with no audit event.

``_posixsubprocess.fork_exec`` raises no PEP 578 event, and the program it starts runs
without the harness's hook, so the candidate could run a shell (read any file, open sockets)
and the RLVP rules saw nothing. The harness now forbids new processes and threads outright
(RLIMIT_NPROC 0): a child never runs, whatever made it, and the audited ways still report.
"""

from __future__ import annotations

import pytest
from backends import BACKENDS, require

from gymhub.verifiers.checkers.function_tests import FunctionTest, run_function_tests

# The name is built at run time (the AST rule is dodged); the child's output proves it ran.
FORK_EXEC_SPAWN = r"""
import os, sys
spawn = getattr(__import__("_posix" + "subprocess"), "fork" + "_exec")
out_r, out_w = os.pipe()
err_r, err_w = os.pipe()
try:
    pid = spawn([b"/bin/sh", b"-c", b"echo ran"], [b"/bin/sh"], True, (out_w,), None, None,
                -1, -1, -1, out_w, -1, -1, err_r, err_w, True, False, -1, None, None, None, -1,
                None, False)
    os.close(out_w)
    RAN = os.read(out_r, 100) == b"ran\n"
    os.waitpid(pid, 0)
except OSError:
    RAN = False

def add(a, b):
    return a + b if RAN else None
"""

HONEST = "def add(a, b):\n    return a + b\n"
TESTS = [FunctionTest(args=[1, 2], expected=3), FunctionTest(args=[20, 22], expected=42)]


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_process_spawned_without_an_audit_event_never_runs(backend: str) -> None:
    require(backend)
    report = run_function_tests(FORK_EXEC_SPAWN, "add", TESTS, backend=backend)
    unseen = not any(e.rule == "process-spawn" for e in report.events)
    assert not (report.passed and unseen), report  # the child ran and nothing reported it


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_audited_fork_still_reports_and_honest_code_still_passes(backend: str) -> None:
    require(backend)
    forked = "import os\ntry:\n    os.fork()\nexcept OSError:\n    pass\n" + HONEST
    report = run_function_tests(forked, "add", TESTS, backend=backend)
    assert [e.event for e in report.events] == ["os.fork"]
    assert run_function_tests(HONEST, "add", TESTS, backend=backend).passed == len(TESTS)
