"""The code family's templates: typed specs whose reference solutions are real functions
(envs/code/references.py), rendered with each variant's values into the source a task ships."""

from __future__ import annotations

import ast
import inspect
from typing import Any

import pytest
from pydantic import ValidationError

from gymhub.envs.code import references
from gymhub.envs.code.tasks import build_code_tasks
from gymhub.envs.code.templates import TEMPLATES, Template, render_reference
from gymhub.types import canonical_json
from gymhub.verifiers.checkers.function_tests import encode_expected

PARAMETER_NAMES = {name for name, value in vars(references).items() if name.isupper()}

SIZE = 2


def sample(items: list[int]) -> list[Any]:  # a function with a parameter in a string and an attribute
    return [items[:SIZE], "SIZE", items.SIZE if SIZE < 0 else None]  # type: ignore[attr-defined]


def test_render_replaces_names_only_and_keeps_the_layout() -> None:
    rendered = render_reference(sample, "take", {"size": "a\tb"})
    expected = inspect.getsource(sample).replace("def sample(", "def take(")
    expected = expected.replace("[:SIZE]", "[:'a\\tb']").replace("if SIZE < 0", "if 'a\\tb' < 0")
    assert rendered == expected  # the strings and the attribute `items.SIZE` are left as written


def every_variant() -> list[tuple[Template, int]]:
    return [(t, v) for t in TEMPLATES for v in range(len(t.params))]


@pytest.mark.parametrize(("template", "variant"), every_variant(), ids=lambda x: getattr(x, "name", str(x)))
def test_every_rendered_reference_is_python_defining_its_entry_point(
    template: Template, variant: int
) -> None:
    source = template.reference_source(variant)
    module = ast.parse(source)
    assert [type(node) for node in module.body] == [ast.FunctionDef]
    assert module.body[0].name == template.name
    loaded = {n.id for n in ast.walk(module) if isinstance(n, ast.Name)}
    assert not loaded & PARAMETER_NAMES, "a parameter was left unreplaced"
    namespace: dict[str, Any] = {}
    exec(compile(source, "<reference>", "exec"), namespace)
    assert callable(namespace[template.name])


def test_every_reference_function_belongs_to_a_template() -> None:
    used = {f for t in TEMPLATES for f in (t.reference if isinstance(t.reference, list) else [t.reference])}
    defined = {f for f in vars(references).values() if inspect.isfunction(f)}
    assert defined == used


def test_every_task_ships_its_rendered_reference_and_it_passes_the_hidden_tests() -> None:
    by_name = {t.name: t for t in TEMPLATES}
    tasks = build_code_tasks("code-python-v0")
    assert len(tasks) >= 200
    for task in tasks:
        template = by_name[task.metadata["template"]]
        source = template.reference_source(task.metadata["variant"])
        assert task.hidden["solutions"]["reference"][0]["content"] == f"```python\n{source}```"
        assert task.metadata["difficulty"] == template.difficulty
        namespace: dict[str, Any] = {}
        exec(compile(source, "<reference>", "exec"), namespace)
        for test in task.hidden["tests"]:
            got = namespace[template.name](*test["args"])
            assert canonical_json(encode_expected(got)) == canonical_json(test["expected"]), task.id


def test_the_module_functions_run_as_written() -> None:
    """The references are real code: with the module's own values they compute what the rendered
    source computes with the same values."""
    assert references.sum_powers([1, 2, 3]) == 1 + 4 + 9  # K = 2
    assert references.fizz_words(5) == ["1", "2", "Fizz", "4", "Buzz"]
    assert references.bits_longest_run(0b1101110) == 3
    assert references.to_camel_case("max_http_value") == "maxHttpValue"


def test_a_template_needs_a_difficulty_and_one_reference_per_variant() -> None:
    spec: dict[str, Any] = {
        "name": "word_stat",
        "signature": "word_stat(text: str) -> int",
        "description": "Count the words.",
        "reference": [references.word_stat_count],
        "params": [{}, {}],
        "inputs": lambda rng, p: [],
    }
    with pytest.raises(ValidationError, match="difficulty"):
        Template(**spec)
    with pytest.raises(ValidationError, match="1 references for 2 variants"):
        Template(**spec, difficulty=1)
    with pytest.raises(ValidationError):
        Template(**{**spec, "params": [{}]}, difficulty=4)
    assert Template(**{**spec, "params": [{}]}, difficulty=1).reference_source(0).startswith("def word_stat(")
