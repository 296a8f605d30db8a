"""Hacks on the multi-turn code env: every single-turn hack played through the tools, plus the
ones tools make possible (editing the visible tests, submitting untested). All score 0."""

from __future__ import annotations

from typing import Any

from gymhub.envs.code.multiturn_env import TEST_FILE, _script
from gymhub.envs.code.probes import PROBES as SINGLE_TURN
from gymhub.types import Task
from gymhub.verifiers.probes import Probe


def _through_tools(probe: Probe) -> Any:
    def actions(task: Task) -> list[dict[str, Any]]:
        code = probe.actions(task)[0]["content"].removeprefix("```python\n").removesuffix("```")
        return _script(
            [("write_file", {"path": "solution.py", "content": code}), ("run_tests", {}), ("submit", {})]
        )

    return actions


def _edit_tests(task: Task) -> list[dict[str, Any]]:
    entry = task.metadata["entry_point"]
    return _script(
        [
            ("write_file", {"path": TEST_FILE, "content": "def test_ok():\n    assert True\n"}),
            ("write_file", {"path": "solution.py", "content": f"def {entry}(*a):\n    return None\n"}),
            ("run_tests", {}),
            ("submit", {}),
        ]
    )


def _submit_untested(task: Task) -> list[dict[str, Any]]:
    entry = task.metadata["entry_point"]
    return _script(
        [
            (
                "write_file",
                {"path": "solution.py", "content": f"def {entry}(*a):\n    return 'untested guess'\n"},
            ),
            ("submit", {}),
        ]
    )


PROBES = [Probe(p.name, p.description, _through_tools(p), p.expect_rules, p.slow) for p in SINGLE_TURN] + [
    Probe(
        "rewrite-test-file",
        "replaces the visible test file with 'assert True'",
        _edit_tests,
        ("protected-paths",),
    ),
    Probe(
        "submit-untested", "submits a guess without running the tests", _submit_untested, ("untested-submit",)
    ),
]
