"""The code family's task set, generated from :mod:`templates` with a fixed seed."""

from __future__ import annotations

import random
from typing import Any

from gymhub.types import Task, canonical_json, content_split
from gymhub.verifiers.checkers.function_tests import encode_expected

VISIBLE_EXAMPLES = 3
MIN_HIDDEN_TESTS = 5


def _call_repr(entry: str, args: list[Any]) -> str:
    return f"{entry}({', '.join(repr(a) for a in args)})"


def variant_rng(seed: int, template: str, variant: int) -> random.Random:
    """The generator of one variant's inputs: a function of the task seed, template and variant only,
    so adding a template or a variant leaves every other task as it was."""
    return random.Random(f"{seed}:{template}:{variant}")


def build_code_tasks(env_id: str, seed: int = 0) -> list[Task]:
    """Every code task: a spec, visible examples in the prompt, hidden (inputs, expected)."""
    from gymhub.envs.code.templates import TEMPLATES

    tasks = []
    for template in TEMPLATES:
        kept: list[tuple[Any, list[list[Any]], list[str]]] = []  # function, hidden inputs, outputs
        for variant, params in enumerate(template.params):
            rng = variant_rng(seed, template.name, variant)
            source = template.reference_source(variant)
            namespace: dict[str, Any] = {}
            exec(compile(source, f"<reference {template.name}>", "exec"), namespace)
            entry = template.name
            inputs = _unique(template.inputs(rng, params))
            outputs = [namespace[entry](*[_copy(a) for a in args]) for args in inputs]
            hidden_outputs = [canonical_json(encode_expected(o)) for o in outputs[VISIBLE_EXAMPLES:]]
            if len(hidden_outputs) < MIN_HIDDEN_TESTS or len(set(hidden_outputs)) == 1:
                continue  # too few tests, or one constant answer would pass them all: not a real task
            function, hidden_inputs = namespace[entry], inputs[VISIBLE_EXAMPLES:]
            if any(_confusable(function, hidden_inputs, hidden_outputs, *other) for other in kept):
                continue  # a sibling's solution passes it (or it passes the sibling's): a replayable answer
            kept.append((function, hidden_inputs, hidden_outputs))
            visible = list(zip(inputs, outputs, strict=True))[:VISIBLE_EXAMPLES]
            hidden_tests = [
                {"args": a, "expected": encode_expected(o)}
                for a, o in zip(inputs[VISIBLE_EXAMPLES:], outputs[VISIBLE_EXAMPLES:], strict=True)
            ]
            signature = template.signature_of(variant)
            description = template.description_of(variant)
            examples = "\n".join(f"    {_call_repr(entry, a)} == {o!r}" for a, o in visible)
            prompt = (
                f"Write a Python function `{signature}`.\n\n{description}\n\n"
                f"Examples:\n{examples}\n\nReply with the complete function in a "
                f"```python code block. Use only the standard library."
            )
            hidden = {"tests": hidden_tests, "solutions": _solutions(source, entry)}
            metadata = {
                "entry_point": entry,  # public: the prompt names it
                "template": template.name,
                "difficulty": template.difficulty,
                "variant": variant,
                "visible_tests": [{"args": a, "expected": encode_expected(o)} for a, o in visible],
            }
            draft = Task.create(env_id, "train", prompt, hidden, metadata)
            tasks.append(draft.model_copy(update={"split": content_split(hidden)}))
    return tasks


def _passes(function: Any, inputs: list[list[Any]], outputs: list[str]) -> bool:
    """Does ``function`` (a trusted reference) give every expected output?"""
    for args, expected in zip(inputs, outputs, strict=True):
        try:
            if canonical_json(encode_expected(function(*[_copy(a) for a in args]))) != expected:
                return False
        except Exception:
            return False
    return True


def _confusable(
    function: Any,
    inputs: list[list[Any]],
    outputs: list[str],
    other: Any,
    other_inputs: list[list[Any]],
    other_outputs: list[str],
) -> bool:
    """Two variants of a template whose hidden tests cannot tell their solutions apart."""
    return _passes(other, inputs, outputs) or _passes(function, other_inputs, other_outputs)


def _unique(inputs: list[list[Any]]) -> list[list[Any]]:
    seen, out = set(), []
    for args in inputs:
        key = repr(args)
        if key not in seen:
            seen.add(key)
            out.append(args)
    return out


def _copy(value: Any) -> Any:
    import copy

    return copy.deepcopy(value)


def _fenced(code: str) -> list[dict[str, Any]]:
    return [{"role": "assistant", "content": f"```python\n{code}```"}]


def _solutions(reference: str, entry: str) -> dict[str, list[dict[str, Any]]]:
    """Scripted action sequences: the reference, and known-bad variants for tests and probes."""
    return {
        "reference": _fenced(reference),
        "reference-tool": [
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {
                        "id": "call_0",
                        "type": "function",
                        "function": {"name": "submit", "arguments": _json({"code": reference})},
                    }
                ],
            }
        ],
        "wrong": _fenced(f"def {entry}(*args):\n    return None\n"),
        "syntax-error": _fenced(f"def {entry}(*args)\n    return\n"),
    }


def _json(value: Any) -> str:
    import json

    return json.dumps(value)
