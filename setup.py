"""Only what pyproject.toml cannot say: the wheel ships ``gymhub-gymnasium.pth`` at the root of
site-packages, so ``gymnasium.make("gymhub/<id>")`` works without importing gymhub first
(see ``_gymhub_gymnasium_hook.py``)."""

from __future__ import annotations

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

PTH_NAME = "gymhub-gymnasium.pth"
PTH_LINE = "import _gymhub_gymnasium_hook\n"


class BuildPyWithGymnasiumHook(build_py):
    def run(self) -> None:
        super().run()
        target = Path(self.build_lib) / PTH_NAME
        target.write_text(PTH_LINE, encoding="utf-8")

    def get_outputs(self, include_bytecode: bool = True) -> list[str]:
        return [*super().get_outputs(include_bytecode), str(Path(self.build_lib) / PTH_NAME)]


setup(cmdclass={"build_py": BuildPyWithGymnasiumHook})
