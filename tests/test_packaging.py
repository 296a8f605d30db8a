"""The wheel installs the parts under gymhub.*, and `import gymhub` stays light."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PARTS = ("envs", "verifiers", "sandboxes", "trainers")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(out), str(ROOT)],
        check=True,
        capture_output=True,
    )
    return next(out.glob("gymhub-*.whl"))


def test_wheel_contains_only_the_gymhub_namespace(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    top = {n.split("/")[0] for n in names}
    # besides the package: the gymnasium hook (a private module and the .pth that imports it)
    hook = {"_gymhub_gymnasium_hook.py", "gymhub-gymnasium.pth"}
    assert top <= {"gymhub", *hook, *(n.split("/")[0] for n in names if ".dist-info" in n)}
    assert hook <= set(names)
    pth = zipfile.ZipFile(wheel).read("gymhub-gymnasium.pth").decode()
    assert pth == "import _gymhub_gymnasium_hook\n"
    for part in PARTS:
        assert any(n.startswith(f"gymhub/{part}/") for n in names), part
    assert "gymhub/registry.yaml" in names
    # every package folder of the source tree is in the wheel (a missing one breaks only installs)
    for part in PARTS:
        for init in (ROOT / part).rglob("__init__.py"):
            rel = init.relative_to(ROOT / part).as_posix()
            assert f"gymhub/{part}/{rel}" in names, f"{part}/{rel} is not packaged: list it in pyproject.toml"


def test_wheel_in_a_fresh_venv_imports_parts_and_no_top_level(wheel: Path, tmp_path: Path) -> None:
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--no-deps", str(wheel)], check=True, capture_output=True
    )
    fresh_site = subprocess.run(
        [str(python), "-c", "import sysconfig;print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    for part in PARTS:
        assert not (Path(fresh_site) / part).exists(), f"top-level {part} installed"
    # Dependencies come from this environment, after the fresh venv's gymhub.
    deps = sysconfig.get_paths()["purelib"]
    code = (
        "import json, importlib.util, gymhub, gymhub.envs, gymhub.verifiers, "
        "gymhub.sandboxes, gymhub.trainers;"
        "print(json.dumps({'file': gymhub.__file__, 'top': [n for n in "
        f"{list(PARTS)!r} if importlib.util.find_spec(n)], "
        "'envs': [s.id for s in gymhub.list_envs()]}))"
    )
    result = subprocess.run(
        [str(python), "-I", "-c", f"import sys; sys.path[:0] = [{fresh_site!r}, {deps!r}]; {code}"],
        check=True,
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    info = json.loads(result.stdout)
    assert info["file"].startswith(fresh_site)
    assert info["top"] == []
    assert "code-python-v0" in info["envs"]
    # a bare gymhub id works with no `import gymhub`: the wheel's .pth hooks gymnasium's import
    bare = (
        "import gymnasium; env = gymnasium.make('gymhub/toy-letters-v0'); env.reset(seed=0);"
        "import sys; print(sys.modules['gymhub'].__file__)"
    )
    result = subprocess.run(
        [str(python), "-I", "-c", f"import sys; sys.path[:0] = [{fresh_site!r}, {deps!r}]; {bare}"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip().startswith(fresh_site)


def test_import_gymhub_is_light() -> None:
    """No heavy module at `import gymhub` (the time itself: benchmarks/import_time.py)."""
    code = (
        "import sys; import gymhub; heavy = [m for m in ('torch', 'transformers', "
        "'docker', 'fastmcp', 'ray', 'vllm', 'sqlalchemy', 'datasets', 'pyarrow') "
        "if m in sys.modules]; print(heavy)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    ).stdout
    assert out.strip() == "[]"
