"""Structured output: extract a JSON value from a reply, validate it with JSON Schema or a
pydantic model."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ValidationError

_FENCED = re.compile(r"```(?:json)?\s*\n(.*?)```", re.DOTALL)


@dataclass(frozen=True)
class StructuredResult:
    ok: bool
    value: Any = None
    errors: list[str] = field(default_factory=list)


def extract_json(text: str) -> tuple[bool, Any]:
    """The last fenced JSON block, else the whole text, parsed; ``(False, None)`` if none parse."""
    candidates = [*reversed(_FENCED.findall(text)), text]
    for candidate in candidates:
        try:
            return True, json.loads(candidate.strip())
        except (json.JSONDecodeError, RecursionError):
            continue
    return False, None


def validate_json_schema(text: str, schema: dict[str, Any]) -> StructuredResult:
    import jsonschema

    found, value = extract_json(text)
    if not found:
        return StructuredResult(False, errors=["no JSON value found"])
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(
        f"{'/'.join(map(str, e.absolute_path)) or '<root>'}: {e.message}"
        for e in validator.iter_errors(value)
    )
    return StructuredResult(not errors, value, errors[:20])


def validate_model(text: str, model: type[BaseModel]) -> StructuredResult:
    found, value = extract_json(text)
    if not found:
        return StructuredResult(False, errors=["no JSON value found"])
    try:
        return StructuredResult(True, model.model_validate(value).model_dump(mode="json"))
    except ValidationError as exc:
        return StructuredResult(
            False, value, [f"{'/'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()][:20]
        )
