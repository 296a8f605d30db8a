"""DESIGN.md's dependency rule: core (gymhub/) never imports a part; parts are found by strings."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PARTS = ("gymhub.envs", "gymhub.verifiers", "gymhub.sandboxes", "gymhub.trainers")


def imported_modules(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.append(node.module)
    return names


def test_core_never_imports_a_part() -> None:
    offenders = [
        f"{path.relative_to(ROOT)}: {name}"
        for path in sorted((ROOT / "gymhub").rglob("*.py"))
        for name in imported_modules(path)
        if name.startswith(PARTS)
    ]
    assert offenders == []


def test_verifiers_and_sandboxes_never_import_envs() -> None:
    offenders = [
        f"{path.relative_to(ROOT)}: {name}"
        for folder in ("verifiers", "sandboxes")
        for path in sorted((ROOT / folder).rglob("*.py"))
        for name in imported_modules(path)
        if name.startswith(("gymhub.envs", "gymhub.trainers"))
    ]
    assert offenders == []
