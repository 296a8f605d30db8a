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


# ----------------------------------------------------------------- the import graph
# Where each folder's modules live in the import namespace (pyproject's package-dir).
PACKAGE_OF_FOLDER = {
    "gymhub": "gymhub",
    "envs": "gymhub.envs",
    "verifiers": "gymhub.verifiers",
    "sandboxes": "gymhub.sandboxes",
    "trainers": "gymhub.trainers",
}


def module_files(root: Path, package_of_folder: dict[str, str]) -> dict[str, Path]:
    """Dotted module name -> file, for every ``.py`` file under the folders."""
    found = {}
    for folder, package in package_of_folder.items():
        for path in sorted((root / folder).rglob("*.py")):
            parts = list(path.relative_to(root / folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join([package, *parts])] = path
    return found


def import_time_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """The imports that run when the module is imported: not those inside a function (they run
    when it is called) nor under ``if TYPE_CHECKING:`` (they never run)."""
    found: list[ast.Import | ast.ImportFrom] = []
    pending: list[ast.AST] = list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
        elif isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            pending.extend(node.orelse)
        else:
            pending.extend(ast.iter_child_nodes(node))
    return found


def import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the modules of ``modules`` it imports at import time.

    ``import a.b.c`` also runs the ``__init__`` of ``a`` and ``a.b``; those count too, except a
    package the importer sits inside (Python has started it before the importer runs)."""
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets = []
        for node in import_time_imports(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets += [alias.name for alias in node.names]
                continue
            base = package
            for _ in range(node.level - 1):
                base = base.rpartition(".")[0]
            base = (f"{base}.{node.module}" if node.module else base) if node.level else node.module or ""
            targets += [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
        graph[name] = set()
        for target in targets:
            parts = target.split(".")
            for i in range(1, len(parts) + 1):
                ancestor = ".".join(parts[:i])
                if ancestor in modules and ancestor != name and not name.startswith(ancestor + "."):
                    graph[name].add(ancestor)
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every cycle met by a depth-first walk, as ``[a, b, ..., a]`` (each set of modules once)."""
    cycles: dict[frozenset[str], list[str]] = {}
    done: set[str] = set()

    def walk(module: str, path: list[str]) -> None:
        for target in sorted(graph[module]):
            if target in path:
                cycle = [*path[path.index(target) :], target]
                cycles.setdefault(frozenset(cycle), cycle)
            elif target not in done:
                walk(target, [*path, target])
        done.add(module)

    for module in sorted(graph):
        if module not in done:
            walk(module, [module])
    return list(cycles.values())


def test_no_import_cycle_in_core_or_parts() -> None:
    """An import cycle makes a module's import order matter (half-initialised modules); the core
    and the parts keep none. Break one by importing under TYPE_CHECKING or inside a function."""
    modules = module_files(ROOT, PACKAGE_OF_FOLDER)
    assert len(modules) > 100  # every folder was read
    graph = import_graph(modules)
    assert "gymhub.episodes" in graph["gymhub.rollout_engine"]  # edges are really found
    assert [" -> ".join(cycle) for cycle in import_cycles(graph)] == []


def test_the_import_graph_finds_a_cycle_and_skips_lazy_imports(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("from pkg.first import ONE\n")
    (package / "first.py").write_text("from pkg import second\nONE = 1\n")
    (package / "second.py").write_text("from .third import THREE\n")
    (package / "third.py").write_text("import pkg.first\nTHREE = 3\n")
    (package / "lazy.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import pkg.first\n"
        "def f():\n    import pkg.second\n"
    )
    graph = import_graph(module_files(tmp_path, {"pkg": "pkg"}))
    assert graph["pkg.lazy"] == set()
    assert graph["pkg.first"] == {"pkg.second"}  # the package's own __init__ does not count
    assert import_cycles(graph) == [["pkg.first", "pkg.second", "pkg.third", "pkg.first"]]
