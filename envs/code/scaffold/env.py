"""scaffolded-env-v0: a gymhub code environment (scaffolded by `gymhub new-env`).

Add tasks to tasks.json; change the rules in ``registry_spec``; see gymhub's docs/new-env.md.
"""

import json
from pathlib import Path
from typing import Any, ClassVar

from gymhub.types import Task, content_split

TASKS = json.loads((Path(__file__).parent / "tasks.json").read_text())


def _calls(calls: list) -> list:
    return [{"role": "assistant", "content": "", "tool_calls": [
        {"id": f"c{i}", "function": {"name": n, "arguments": json.dumps(a)}}]} for i, (n, a) in enumerate(calls)]

from gymhub.envs.code import CodePythonEnv
from gymhub.verifiers.checkers.function_harness import encode_value


class Env(CodePythonEnv):
    """scaffolded-env: a code environment. Describe the tasks here."""

    registry_spec: ClassVar[dict[str, Any]] = {"family": "code", "sandbox": "local", "rules": {"exit-call": 1.0}}

    def load_tasks(self) -> list[Task]:
        tasks = []
        for t in TASKS:
            fenced = lambda code: [{"role": "assistant", "content": f"```python\n{code}```"}]  # noqa: E731
            hidden = {"tests": [{"args": c["args"], "expected": encode_value(c["expected"])} for c in t["tests"]],
                      "solutions": {"reference": fenced(t["reference"]),
                                    "wrong": fenced(f"def {t['entry_point']}(*a):\n    return None\n")}}
            metadata = {"visible_tests": [], "entry_point": t["entry_point"]}
            tasks.append(Task.create(self.env_id, content_split(hidden), t["prompt"], hidden, metadata))
        return tasks
