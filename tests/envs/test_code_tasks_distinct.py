"""No code task can be solved by replaying another task's answer: within a template, no
variant's reference passes another variant's hidden tests (a blind policy that replays the
most frequent gold answer of a task type would otherwise score on the eval split)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from gymhub.envs.code.tasks import build_code_tasks
from gymhub.types import canonical_json
from gymhub.verifiers.checkers.function_tests import encode_expected


def reference_function(task: Any) -> Any:
    code = task.hidden["solutions"]["reference"][0]["content"].split("```python\n", 1)[1].rsplit("```", 1)[0]
    namespace: dict[str, Any] = {}
    exec(compile(code, "<reference>", "exec"), namespace)
    return namespace[task.metadata["entry_point"]]


def passes(function: Any, task: Any) -> bool:
    for test in task.hidden["tests"]:
        try:
            got = canonical_json(encode_expected(function(*test["args"])))
        except Exception:
            return False
        if got != canonical_json(test["expected"]):
            return False
    return True


def test_no_variant_passes_a_sibling_variants_hidden_tests() -> None:
    by_template: dict[str, list[Any]] = defaultdict(list)
    for task in build_code_tasks("code-python-v0"):
        by_template[task.metadata["template"]].append(task)
    confusions = []
    for template, tasks in by_template.items():
        functions = [reference_function(t) for t in tasks]
        for i, task in enumerate(tasks):
            assert passes(functions[i], task), f"{template}: the reference fails its own tests"
            confusions += [(template, i, j) for j, f in enumerate(functions) if j != i and passes(f, task)]
    assert confusions == []
