"""The code-python verifier: hidden function tests decide the outcome; RLVP rules add Φ."""

from __future__ import annotations

from typing import Any

from gymhub.types import Task
from gymhub.verifiers.base import BaseVerifier
from gymhub.verifiers.checkers.function_tests import FunctionTest, run_function_tests


class CodeUnitTestVerifier(BaseVerifier):
    """Outcome 1 only if every hidden test passes; ``details`` has passed/total and status,
    and ``runtime_events`` when the harness's audit hook saw the code touch files, sockets,
    processes or the interpreter (the code rules turn those into penalties).

    The final state is ``{"code": str | None, "bad_action_steps": [...]}`` (the multi-turn env
    adds the ``runtime_events`` of its ``run_tests`` runs).
    """

    id = "code-unit-tests"
    version = "1.1.0"  # 1.1: penalties from audit events observed at run time

    def __init__(
        self, rules: dict[str, float] | None = None, *, timeout: float = 5.0, backend: str = "local"
    ) -> None:
        super().__init__(rules)
        self.timeout = timeout
        self.backend = backend

    def check(self, task: Task, final_state: Any) -> tuple[float, dict[str, Any]]:
        tests = [FunctionTest(args=t["args"], expected=t["expected"]) for t in task.hidden["tests"]]
        report = run_function_tests(
            final_state.get("code"),
            task.metadata["entry_point"],
            tests,
            timeout=self.timeout,
            backend=self.backend,
        )
        details = report.as_details()
        details["bad_action_steps"] = list(final_state.get("bad_action_steps", []))
        outcome = 1.0 if report.total and report.passed == report.total else 0.0
        return outcome, details
