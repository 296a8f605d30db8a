"""Unit tests for function-level code tasks, with results that the candidate cannot forge.

The hidden tests are ``(inputs, expected)`` pairs. Only the inputs go into the sandbox, after
the agent is done, together with the trusted harness (:mod:`function_harness`); the harness
reports each return value on a side channel (fd 3), and the host compares it to the expected
value, which never leaves the host. Stdout is ignored.
"""

from __future__ import annotations

import json
import marshal
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gymhub.sandboxes import Limits
from gymhub.sandboxes.warm_pool import shared_pool
from gymhub.types import canonical_json
from gymhub.verifiers.checkers.function_harness import encode_value

_HARNESS = Path(__file__).with_name("function_harness.py").read_text(encoding="utf-8")


@dataclass(frozen=True)
class FunctionTest:
    args: list[Any]
    expected: Any  # encoded with encode_value


@dataclass
class TestReport:
    passed: int
    total: int
    status: str  # "ok" | "load-error" | "timeout" | "crashed" | "tampered" | "no-code"
    failures: list[int] = field(default_factory=list)

    def as_details(self) -> dict[str, Any]:
        return {
            "passed": self.passed,
            "total": self.total,
            "status": self.status,
            "failures": self.failures[:10],
        }


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
            script=_HARNESS, stdin=marshal.dumps(request), timeout=timeout, side_channel=True, limits=limits
        )
    outputs, status = _parse_channel(result.channel, total)
    if status == "crashed" and result.timed_out:
        status = "timeout"
    failures = [
        i for i, t in enumerate(tests) if i not in outputs or outputs[i] != canonical_json(t.expected)
    ]
    if status in ("tampered", "load-error"):
        failures = list(range(total))
    return TestReport(total - len(failures), total, status, failures)


def _parse_channel(raw: bytes, total: int) -> tuple[dict[int, str], str]:
    """Map test index -> canonical JSON of the returned value; status of the run."""
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
        if not isinstance(record, dict) or done:
            return {}, "tampered"
        if "load_error" in record:
            return {}, "load-error"
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
