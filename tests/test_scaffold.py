"""`gymhub new-env` scaffolds packages whose generated tests pass as generated."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

CLI = [sys.executable, "-m", "gymhub"]


@pytest.mark.parametrize("family", ["code", "terminal", "search", "mcp"])
def test_scaffolded_package_passes_its_own_test(family: str, tmp_path: Path) -> None:
    subprocess.run(
        [*CLI, "new-env", f"demo-{family}", "--family", family, "--out", str(tmp_path)],
        check=True,
        capture_output=True,
    )
    root = tmp_path / f"demo-{family}"
    assert {p.name for p in root.iterdir()} >= {"pyproject.toml", "README.md", "tests", f"demo_{family}_env"}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
        cwd=root,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(root)},
    )
    assert result.returncode == 0, result.stdout[-2000:]
    assert "3 passed" in result.stdout


def _install(name: str, family: str, tmp_path: Path) -> dict[str, str]:
    """Scaffold ``name`` and pip-install it into a folder; the environment that imports it."""
    subprocess.run(
        [*CLI, "new-env", name, "--family", family, "--out", str(tmp_path)],
        check=True,
        capture_output=True,
    )
    site = tmp_path / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "--target",
            str(site),
            str(tmp_path / name),
        ],
        check=True,
        capture_output=True,
    )
    return {**os.environ, "PYTHONPATH": str(site)}


def test_scaffolded_package_installs_and_registers_by_entry_point(tmp_path: Path) -> None:
    environ = _install("shop-talk", "code", tmp_path)
    listed = subprocess.run([*CLI, "list", "--json"], capture_output=True, text=True, check=True, env=environ)
    spec = {s["id"]: s for s in json.loads(listed.stdout)}["shop-talk-v0"]
    assert spec["family"] == "code" and spec["rules"] == {"exit-call": 1.0}


# What an installed scaffold's spec says against the env it builds, with and without a
# sandbox backend chosen at make time (bwrap: building the env starts no sandbox).
SPEC_AGAINST_ENV = """
import json, sys
import gymhub
from gymhub._env_checker import spec_problems
from gymhub.errors import GymhubError

env_id = sys.argv[1]
found = gymhub.spec(env_id)
env = gymhub.make(env_id)
report = {"sandbox": found.sandbox, "backend": getattr(env, "sandbox_backend", None),
          "problems": spec_problems(env)}
env.close()
try:
    env = gymhub.make(env_id, sandbox="bwrap")
    report["override"] = {"backend": env.sandbox_backend, "problems": spec_problems(env)}
    env.close()
except GymhubError as exc:
    report["override"] = str(exc)
print(json.dumps(report))
"""


@pytest.mark.parametrize(
    ("family", "sandbox"), [("code", "local"), ("terminal", "local"), ("search", "none"), ("mcp", "none")]
)
def test_an_installed_scaffold_declares_the_sandbox_its_env_runs_in(
    family: str, sandbox: str, tmp_path: Path
) -> None:
    """The spec an installed scaffold registers (from its ``registry_spec``) holds against the
    env it builds, and a sandbox backend can be chosen at make time where the family has one."""
    environ = _install(f"sb-{family}", family, tmp_path)
    result = subprocess.run(
        [sys.executable, "-c", SPEC_AGAINST_ENV, f"sb-{family}-v0"],
        capture_output=True,
        text=True,
        env=environ,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    report = json.loads(result.stdout)
    assert report["sandbox"] == sandbox and report["problems"] == []
    if sandbox == "none":
        assert report["backend"] is None
        assert "runs in memory" in report["override"]  # no backend to choose
    else:
        assert report["backend"] == sandbox
        assert report["override"] == {"backend": "bwrap", "problems": []}


def test_bad_names_and_families_are_refused(tmp_path: Path) -> None:
    bad = subprocess.run(
        [*CLI, "new-env", "Bad Name", "--out", str(tmp_path)], capture_output=True, text=True
    )
    assert bad.returncode == 2 and "lower-case" in bad.stderr
    bad = subprocess.run(
        [*CLI, "new-env", "ok-name", "--family", "robotics", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 2 and "--family" in bad.stderr


def test_templates_are_the_families_own_python_files(tmp_path: Path) -> None:
    """Each family's template is a real module of the family (found through the
    `gymhub.scaffolds` entry points); a scaffolded package is it with the names replaced."""
    import ast
    from importlib import metadata, resources

    scaffolds = {ep.name: ep for ep in metadata.entry_points(group="gymhub.scaffolds")}
    assert set(scaffolds) == {"code", "terminal", "search", "mcp"}
    common = resources.files("gymhub") / "scaffold_templates"
    ast.parse(common.joinpath("package_tests.py").read_text(encoding="utf-8"))
    for family, entry in scaffolds.items():
        template = resources.files(entry.load()).joinpath("env.py").read_text(encoding="utf-8")
        ast.parse(template)
        subprocess.run(
            [*CLI, "new-env", f"t-{family}", "--family", family, "--out", str(tmp_path)],
            check=True,
            capture_output=True,
        )
        written = (tmp_path / f"t-{family}" / f"t_{family}_env" / "__init__.py").read_text(encoding="utf-8")
        assert written == template.replace("scaffolded-env", f"t-{family}")
        assert f"t-{family}-v0" in written
        assert "scaffolded-env" not in written and "scaffolded_env" not in written  # every name replaced
