"""Unit tests for function-level code tasks, with results that the candidate cannot forge.

The hidden tests are ``(inputs, expected)`` pairs. Only the inputs go into the sandbox, after
the agent is done, together with the trusted harness (:mod:`function_harness`); the harness
reports each return value on a side channel (fd 3), and the host compares it to the expected
value, which never leaves the host. Stdout is ignored.

The harness also reports, on the same channel, the audited operations the candidate performed
(files, sockets, processes, native code, interpreter introspection: see
:data:`~gymhub.verifiers.checkers.function_harness.AUDIT_RULES`); they come back as
:class:`RuntimeEvent` s, which the code rules turn into RLVP penalties. The rule an event feeds
is looked up here, never read from the line: the candidate can write lines too.
"""

from __future__ import annotations

import json
import marshal
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from gymhub.sandboxes import Limits
from gymhub.sandboxes.warm_pool import shared_pool
from gymhub.types import canonical_json
from gymhub.verifiers.checkers.function_harness import (
    AUDIT_RULES,
    BOOTSTRAP,
    CHANNEL_BROKEN_EXIT,
    encode_value,
)

_HARNESS = Path(__file__).with_name("function_harness.py").read_text(encoding="utf-8")
# Compiled once here: compiling it in every job would cost more than the tests themselves.
# dont_inherit: this module's ``from __future__ import annotations`` must not leak into the
# harness, nor through it into the candidate's code.
_HARNESS_CODE = marshal.dumps(compile(_HARNESS, "function_harness.py", "exec", dont_inherit=True))


def harness_stdin(request: dict[str, Any]) -> bytes:
    """What :data:`BOOTSTRAP` reads: the harness (compiled, and as source) and the request."""
    return marshal.dumps((sys.implementation.cache_tag, _HARNESS_CODE, _HARNESS, request))


@dataclass(frozen=True)
class FunctionTest:
    args: list[Any]
    expected: Any  # encoded with encode_value


@dataclass(frozen=True, order=True)
class RuntimeEvent:
    """An audited operation the candidate's code performed while the tests ran."""

    rule: str  # the RLVP rule it feeds (AUDIT_RULES)
    event: str  # the audit event, e.g. "open", "socket.connect"
    detail: str  # evidence: a path (relative to the work dir when inside it), a host, ...

    def as_dict(self) -> dict[str, str]:
        return {"rule": self.rule, "event": self.event, "detail": self.detail}


MAX_RUNTIME_EVENTS = 20  # distinct events kept in a report (a loop may repeat one forever)


@dataclass
class TestReport:
    __test__: ClassVar[bool] = False  # not a pytest test class, despite the name
    passed: int
    total: int
    status: str  # "ok" | "load-error" | "missing-function" | "timeout" | "crashed" | "tampered" | "no-code"
    failures: list[int] = field(default_factory=list)
    events: list[RuntimeEvent] = field(default_factory=list)  # distinct, sorted

    def as_details(self) -> dict[str, Any]:
        details: dict[str, Any] = {
            "passed": self.passed,
            "total": self.total,
            "status": self.status,
            "failures": self.failures[:10],
        }
        if self.events:  # absent when clean, so clean verdicts keep their digests
            details["runtime_events"] = [e.as_dict() for e in self.events]
        return details


def encode_expected(value: Any) -> Any:
    """Encode a reference output exactly as the harness encodes a candidate's."""
    return encode_value(value)


def run_function_tests(
    source: str | None,
    entry_point: str,
    tests: list[FunctionTest],
    *,
    timeout: float = 5.0,
    backend: str = "local",
    limits: Limits | None = None,
) -> TestReport:
    """Run ``tests`` against ``source`` in a fresh sandbox and compare on the host."""
    total = len(tests)
    if not source:
        return TestReport(0, total, "no-code", list(range(total)))
    limits = limits or Limits(cpu_seconds=max(1, int(timeout) + 1), memory_mb=512)
    request = {
        "source": source,
        "entry_point": entry_point,
        "inputs": [t.args for t in tests],
        "limits": {"memory_mb": limits.memory_mb},
    }
    with shared_pool(backend).sandbox() as sandbox:  # pristine: reset after every use
        result = sandbox.run(
            script=BOOTSTRAP, stdin=harness_stdin(request), timeout=timeout, side_channel=True, limits=limits
        )
    outputs, status, events = _parse_channel(result.channel, total)
    if status == "crashed" and result.timed_out:
        status = "timeout"
    if result.exit_code == CHANNEL_BROKEN_EXIT:  # the hook found its channel closed or replaced
        status = "tampered"
    failures = [
        i for i, t in enumerate(tests) if i not in outputs or outputs[i] != canonical_json(t.expected)
    ]
    if status in ("tampered", "load-error", "missing-function"):
        failures = list(range(total))
    return TestReport(total - len(failures), total, status, failures, events)


def runtime_events(raw: bytes) -> list[RuntimeEvent]:
    """The distinct audit events on a channel, sorted — whatever else the channel holds, so a
    void run still shows what the candidate did."""
    found: set[RuntimeEvent] = set()
    for line in raw.decode("utf-8", errors="replace").split("\n"):
        if not line.startswith('{"audit":'):
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        event, detail = record.get("audit"), record.get("detail")
        if isinstance(event, str) and isinstance(detail, str) and event in AUDIT_RULES:
            found.add(RuntimeEvent(AUDIT_RULES[event], event, detail))
    return sorted(found)[:MAX_RUNTIME_EVENTS]


def _parse_channel(raw: bytes, total: int) -> tuple[dict[int, str], str, list[RuntimeEvent]]:
    """Map test index -> canonical JSON of the returned value; status; audit events."""
    outputs, status = _parse_results(raw, total)
    return outputs, status, runtime_events(raw)


def _parse_results(raw: bytes, total: int) -> tuple[dict[int, str], str]:
    outputs: dict[int, str] = {}
    done = False
    try:
        text = raw.decode("utf-8", errors="surrogatepass")
    except UnicodeDecodeError:
        return {}, "tampered"
    # split on "\n" only: the harness escapes it, but not U+2028 and friends inside strings
    for line in filter(None, text.split("\n")):
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            return {}, "tampered"
        if not isinstance(record, dict) or done:  # nothing may follow "done", not even an event
            return {}, "tampered"
        if "audit" in record:
            if set(record) != {"audit", "detail"} or record["audit"] not in AUDIT_RULES:
                return {}, "tampered"
            continue
        if "load_error" in record:
            return {}, "load-error"
        if "missing_function" in record:
            return {}, "missing-function"
        if record.get("done") is True:
            done = True
            continue
        index = record.get("i")
        if not isinstance(index, int) or index in outputs or not 0 <= index < total:
            return {}, "tampered"
        if record.get("ok") is True:
            if "value" not in record:  # a pass without a value: a rewritten failure
                return {}, "tampered"
            outputs[index] = canonical_json(record["value"])
        else:
            outputs[index] = "\x00error"
    return outputs, "ok" if done else "crashed"
