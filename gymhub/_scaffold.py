"""``gymhub new-env``: scaffold a working environment package, its test passing as generated.

The package is pip-installable and registers itself through the ``gymhub.envs`` entry point.
Its env subclasses the chosen family's env and reads its tasks from ``tasks.json`` (split by
content: :func:`gymhub.types.content_split`); its verifier is the family's, with one RLVP rule
declared in ``registry_spec``; reference solutions live in the task file; ``tests/`` checks the
whole env contract and that every reference scores 1.

The templates are real files, a working example env named ``scaffolded-env``: each family's
env module and task file in the family's own ``scaffold`` package (found through the
``gymhub.scaffolds`` entry-point group); the test, ``pyproject.toml`` and README in
``gymhub/scaffold_templates/``. Writing a package replaces the name ``scaffolded-env`` and the
package ``scaffolded_env`` (and ``{family}`` in the README), so each template stays valid code.
"""

from __future__ import annotations

import re
from importlib import metadata, resources
from pathlib import Path

from gymhub.errors import GymhubError

SCAFFOLDS = "gymhub.scaffolds"  # entry-point group: family -> the package holding its templates
NAME_PLACEHOLDER, PACKAGE_PLACEHOLDER = "scaffolded-env", "scaffolded_env"  # in every template


def scaffold(name: str, family: str, out: Path) -> Path:
    """Write the package for env ``name`` (``name-v0``) under ``out / name``; return its folder."""
    known = {ep.name: ep for ep in metadata.entry_points(group=SCAFFOLDS)}
    if family not in known:
        raise GymhubError(f"--family must be one of {', '.join(sorted(known))}, not {family!r}")
    if not re.fullmatch(r"[a-z][a-z0-9-]{1,40}", name):
        raise GymhubError(f"env name {name!r}: use lower-case letters, digits and dashes (e.g. my-env)")
    root = out / name
    if root.exists():
        raise GymhubError(f"{root} already exists: choose another name or folder")
    package = name.replace("-", "_") + "_env"
    values = {NAME_PLACEHOLDER: name, PACKAGE_PLACEHOLDER: package, "{family}": family}
    pattern = re.compile("|".join(re.escape(key) for key in values))
    common = resources.files("gymhub") / "scaffold_templates"
    own = resources.files(known[family].load())  # the family's own scaffold package
    written = {
        "pyproject.toml": common / "pyproject.toml",
        "README.md": common / "README.md",
        f"tests/test_{package}.py": common / "package_tests.py",
        f"{package}/__init__.py": own / "env.py",
        f"{package}/tasks.json": own / "tasks.json",
    }
    (root / package).mkdir(parents=True)
    (root / "tests").mkdir()
    for path, template in written.items():
        text = template.read_text(encoding="utf-8")
        (root / path).write_text(pattern.sub(lambda m: values[m.group()], text))
    return root
