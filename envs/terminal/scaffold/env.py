"""scaffolded-env-v0: a gymhub terminal environment (scaffolded by `gymhub new-env`).

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

from gymhub.envs.terminal import TerminalEnv


class Env(TerminalEnv):
    """scaffolded-env: a terminal environment. Describe the tasks here."""

    registry_spec: ClassVar[dict[str, Any]] = {"family": "terminal", "sandbox": "local", "rules": {"destructive-command": 1.0}}

    def load_tasks(self) -> list[Task]:
        tasks = []
        for t in TASKS:
            script = lambda cmds: _calls([*[("bash", {"command": c}) for c in cmds], ("submit", {})])  # noqa: E731
            hidden = {"checks": t["checks"], "protected": [],
                      "solutions": {"reference": script(t["reference"]), "wrong": script([])}}
            tasks.append(Task.create(self.env_id, content_split(hidden), t["prompt"], hidden, {"files": t["files"]}))
        return tasks
