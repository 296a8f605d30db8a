"""scaffolded-env-v0: a gymhub search environment (scaffolded by `gymhub new-env`).

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

from gymhub.envs.search import SearchEnv

DOCS = json.loads((Path(__file__).parent / "tasks.json").read_text())["documents"]
TASKS = json.loads((Path(__file__).parent / "tasks.json").read_text())["questions"]


class Env(SearchEnv):
    """scaffolded-env: a search environment. Describe the tasks here."""

    registry_spec: ClassVar[dict[str, Any]] = {"family": "search", "rules": {"evidence-retrieved": 0.5}}

    def corpus(self) -> list[dict[str, str]]:
        return DOCS

    def load_tasks(self) -> list[Task]:
        tasks = []
        for t in TASKS:
            reference = _calls([("search", {"query": t["question"], "k": 3}),
                                *[("open", {"doc_id": d}) for d in t["gold_docs"]], ("answer", {"text": t["answer"]})])
            hidden = {"answer": t["answer"], "gold_docs": t["gold_docs"],
                      "solutions": {"reference": reference, "wrong": _calls([("answer", {"text": "no idea"})])}}
            tasks.append(Task.create(self.env_id, content_split(hidden), t["question"], hidden))
        return tasks
