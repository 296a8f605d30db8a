"""``code-python-multiturn-v0``: the same tasks, worked on like a developer would.

The workspace holds ``solution.py`` (a stub) and ``tests/test_visible.py`` (the visible
examples). Tools: ``read_file``, ``write_file``, ``run_tests`` (the visible tests, executed in
the sandbox; the env writes the summary itself, so nothing the candidate prints can fake it)
and ``submit``. At the end the hidden tests decide, exactly as in ``code-python-v0``. The
pristine visible tests are what ``run_tests`` runs: editing the test file changes nothing but
the path signal (``protected-paths``).
"""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar

from gymhub._tool_calls import scripted_tool_calls, tool_schema
from gymhub.env import Env, EnvReply
from gymhub.envs.code.tasks import build_code_tasks
from gymhub.envs.code.verifier import CodeUnitTestVerifier
from gymhub.types import Message, Task, ToolCall
from gymhub.verifiers.checkers.function_tests import FunctionTest, run_function_tests

TEST_FILE = "tests/test_visible.py"
NUDGE = "Use the tools: write_file, run_tests, submit."


_tool = tool_schema


TOOLS = [
    _tool("read_file", "Read a file of the workspace.", {"path": {"type": "string"}}, ["path"]),
    _tool(
        "write_file",
        "Write (replace) a file of the workspace.",
        {"path": {"type": "string"}, "content": {"type": "string"}},
        ["path", "content"],
    ),
    _tool("run_tests", "Run the visible tests against solution.py; returns how many pass.", {}, []),
    _tool("submit", "Submit solution.py as your final answer.", {}, []),
]


def visible_test_file(task: Task) -> str:
    entry = task.metadata["entry_point"]
    lines = [f"from solution import {entry}", ""]
    for i, case in enumerate(task.metadata["visible_tests"]):
        args = ", ".join(repr(a) for a in case["args"])
        lines += [
            f"def test_example_{i}():",
            f"    assert {entry}({args}) == {_decoded(case['expected'])!r}",
            "",
        ]
    return "\n".join(lines)


def _decoded(value: Any) -> Any:
    """Undo the harness's type tags for display in the visible test file."""
    if isinstance(value, list):
        return [_decoded(v) for v in value]
    if isinstance(value, dict):
        if "__tuple__" in value:
            return tuple(_decoded(v) for v in value["__tuple__"])
        if "__float__" in value:
            return float(value["__float__"])
        if "__map__" in value:
            return {k: _decoded(v) for k, v in value["__map__"].items()}
    return value


class CodePythonMultiturnEnv(Env):
    family: ClassVar[str] = "code"
    version: ClassVar[str] = "0.1.0"
    default_max_turns: ClassVar[int] = 12
    system_prompt: ClassVar[str | None] = (
        "You are a careful Python developer. Use the tools: write solution.py, run the tests, then submit."
    )

    def __init__(self, *, test_timeout: float = 5.0, sandbox: str = "local", **kwargs: Any) -> None:
        self.test_timeout = test_timeout
        self.sandbox_backend = sandbox
        self._files: dict[str, str] = {}
        self._task: Task | None = None
        self._runtime_events: list[dict[str, Any]] = []
        super().__init__(**kwargs)

    def load_tasks(self) -> list[Task]:
        tasks = []
        for base in build_code_tasks(self.env_id, self.task_seed):
            entry = base.metadata["entry_point"]
            prompt = base.prompt.split("\n\nReply with")[0] + (
                f"\n\nThe workspace has solution.py (implement `{entry}` there) and {TEST_FILE}. "
                "Use write_file, run_tests and submit."
            )
            reference = (
                base.hidden["solutions"]["reference"][0]["content"].strip("`").removeprefix("python\n")
            )
            hidden = {
                **base.hidden,
                "solutions": {
                    "reference": _script(
                        [
                            ("write_file", {"path": "solution.py", "content": reference}),
                            ("run_tests", {}),
                            ("submit", {}),
                        ]
                    ),
                    "wrong": _script(
                        [
                            (
                                "write_file",
                                {"path": "solution.py", "content": f"def {entry}(*args):\n    return None\n"},
                            ),
                            ("run_tests", {}),
                            ("submit", {}),
                        ]
                    ),
                },
            }
            task = Task.create(self.env_id, "train", prompt, hidden, base.metadata)
            tasks.append(task.model_copy(update={"split": base.split}))
        return tasks

    def tools(self) -> list[dict[str, Any]]:
        return TOOLS

    def make_verifier(self) -> CodeUnitTestVerifier:
        return CodeUnitTestVerifier(self.rules, timeout=self.test_timeout, backend=self.sandbox_backend)

    async def start_episode(self, task: Task) -> None:
        self._task = task
        entry = task.metadata["entry_point"]
        self._files = {
            "solution.py": f"def {entry}(*args):\n    raise NotImplementedError\n",
            TEST_FILE: visible_test_file(task),
        }
        self._pristine_tests = self._files[TEST_FILE]
        self._runtime_events = []

    async def on_action(self, message: Message) -> EnvReply:
        return await self.answer_tool_calls(
            message, self._acall, "Use the tools: write_file, run_tests, submit."
        )

    async def _acall(self, call: ToolCall) -> tuple[str, bool]:
        return await asyncio.to_thread(self._call, call)

    def _call(self, call: ToolCall) -> tuple[str, bool]:
        args = call.parsed_arguments()
        if call.name == "read_file":
            path = str(args.get("path", ""))
            return (self._files[path], False) if path in self._files else (f"error: no file {path!r}", False)
        if call.name == "write_file":
            target, content = args.get("path"), args.get("content")
            if not isinstance(target, str) or not isinstance(content, str):
                return "error: write_file needs string 'path' and 'content'", False
            self._files[target] = content
            return f"wrote {len(content)} characters to {target}", False
        if call.name == "run_tests":
            return self._run_visible_tests(), False
        return "submitted", True  # submit

    def _run_visible_tests(self) -> str:
        assert self._task is not None
        cases = self._task.metadata["visible_tests"]
        tests = [FunctionTest(args=c["args"], expected=c["expected"]) for c in cases]
        report = run_function_tests(
            self._files.get("solution.py"),
            self._task.metadata["entry_point"],
            tests,
            timeout=self.test_timeout,
            backend=self.sandbox_backend,
        )
        step = self._episode.step_index if self._episode else 0
        for event in report.events:
            record = {"step": step, **event.as_dict()}
            if record not in self._runtime_events:
                self._runtime_events.append(record)
        failing = [f"test_example_{i}" for i in report.failures]
        summary = f"{report.passed}/{report.total} tests passed"
        return summary + (f" (status {report.status}); failing: {', '.join(failing)}" if failing else "")

    async def final_state(self) -> dict[str, Any]:
        changed = [TEST_FILE] if self._files.get(TEST_FILE) != getattr(self, "_pristine_tests", None) else []
        state: dict[str, Any] = {
            "code": self._files.get("solution.py"),
            "bad_action_steps": self.bad_action_steps,
            "protected_changed": changed,
        }
        if self._runtime_events:  # absent when clean, so clean states keep their fingerprints
            state["runtime_events"] = list(self._runtime_events)
        return state


_script = scripted_tool_calls
