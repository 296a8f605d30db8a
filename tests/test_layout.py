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


def every_import(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """The module's imports wherever they stand: at the top, inside a function (run when it is
    called) or under ``if TYPE_CHECKING:`` (read by the type checker). Each is a dependency: a
    lazy import only hides a cycle from Python, not from the reader."""
    return [node for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))]


def import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the modules of ``modules`` it imports (:func:`every_import`).

    ``import a.b.c`` also runs the ``__init__`` of ``a`` and ``a.b``; those count too, except a
    package the importer sits inside (Python has started it before the importer runs)."""
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets = []
        for node in every_import(ast.parse(path.read_text(encoding="utf-8"))):
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
    """An import cycle makes a module's import order matter (half-initialised modules) and two
    modules that cannot be read apart; the core and the parts keep none, not even through a lazy
    or TYPE_CHECKING import. Break one by moving what both need into a module of its own."""
    modules = module_files(ROOT, PACKAGE_OF_FOLDER)
    assert len(modules) > 100  # every folder was read
    graph = import_graph(modules)
    assert "gymhub._episodes" in graph["gymhub._rollout_engine"]  # edges are really found
    assert [" -> ".join(cycle) for cycle in import_cycles(graph)] == []


def test_the_import_graph_finds_cycles_through_lazy_and_type_checking_imports(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("from pkg.first import ONE\n")
    (package / "first.py").write_text("from pkg import second\nONE = 1\n")
    (package / "second.py").write_text("from .third import THREE\n")
    (package / "third.py").write_text("import pkg.first\nTHREE = 3\n")
    (package / "lazy.py").write_text("def f():\n    import pkg.hinted\n")
    (package / "hinted.py").write_text(  # the shape trainers/grpo.py ⇄ generators.py once had
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.lazy import f\n"
    )
    graph = import_graph(module_files(tmp_path, {"pkg": "pkg"}))
    assert graph["pkg.lazy"] == {"pkg.hinted"} and graph["pkg.hinted"] == {"pkg.lazy"}
    assert graph["pkg.first"] == {"pkg.second"}  # the package's own __init__ does not count
    assert sorted(import_cycles(graph)) == [
        ["pkg.first", "pkg.second", "pkg.third", "pkg.first"],
        ["pkg.hinted", "pkg.lazy", "pkg.hinted"],
    ]


PUBLIC_CORE = {"__init__", "__main__", "types", "errors", "env", "registry", "client", "server", "mcp_server"}
PUBLIC_PACKAGES = {"policies", "store", "report", "scaffold_templates"}


def test_core_internals_are_private_modules() -> None:
    """The public API is what ``gymhub/__init__.py`` exports plus the modules named in its
    docstring; every other core module is ``gymhub._*``, so users can tell what may change."""
    import gymhub

    modules = {p.stem for p in (ROOT / "gymhub").glob("*.py")}
    packages = {p.name for p in (ROOT / "gymhub").iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert sorted(m for m in modules - PUBLIC_CORE if not m.startswith("_")) == []
    assert packages == PUBLIC_PACKAGES
    documented = gymhub.__doc__ or ""
    for name in sorted(PUBLIC_CORE - {"__init__", "__main__"}) + sorted(
        PUBLIC_PACKAGES - {"scaffold_templates"}
    ):
        assert f"``{name}``" in documented or f"``gymhub.{name}``" in documented, name
    for name in gymhub.__all__:  # every exported name comes from a real object, with a docstring
        if name != "__version__":
            assert getattr(gymhub, name).__doc__, name
