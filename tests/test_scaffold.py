"""`gymhub new-env` scaffolds packages whose generated tests pass as generated."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

CLI = [sys.executable, "-m", "gymhub.cli"]


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


def test_scaffolded_package_installs_and_registers_by_entry_point(tmp_path: Path) -> None:
    subprocess.run(
        [*CLI, "new-env", "shop-talk", "--family", "code", "--out", str(tmp_path)],
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
            str(tmp_path / "shop-talk"),
        ],
        check=True,
        capture_output=True,
    )
    listed = subprocess.run(
        [*CLI, "list", "--json"],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(site)},
    )
    spec = {s["id"]: s for s in json.loads(listed.stdout)}["shop-talk-v0"]
    assert spec["family"] == "code" and spec["rules"] == {"exit-call": 1.0}


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
