"""Registers gymhub's envs with Gymnasium the moment Gymnasium is imported.

Gymnasium 1.x has no plugin entry point (0.26-0.29 loaded the ``gymnasium.envs`` group at
import; 1.0 removed it), so ``gymnasium.make("gymhub/<id>")`` in a fresh interpreter would say
``NamespaceNotFound`` unless something registers the ids first. The wheel installs
``gymhub-gymnasium.pth``, whose one line imports this module at interpreter start. It costs a
few microseconds: it only puts a watcher on ``sys.meta_path`` and imports nothing. When
``gymnasium`` is imported, the watcher lets the normal finder load it, then calls
:func:`gymhub.registry.register_gymnasium_envs` (reads ``registry.yaml`` and the entry-point
names; imports no env module). If gymhub itself is being imported, it does nothing: gymhub
registers its ids at import.

Set ``GYMHUB_NO_GYMNASIUM_HOOK=1`` to turn it off. A failure here never breaks
``import gymnasium``: it becomes a warning.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from typing import Any

WATCHED = "gymnasium"


class _RegisterAfterExec:
    """Wraps gymnasium's own loader: same module, then gymhub's ids are registered."""

    def __init__(self, loader: Any) -> None:
        self.loader = loader

    def create_module(self, spec: Any) -> Any:
        return self.loader.create_module(spec)

    def exec_module(self, module: Any) -> None:
        self.loader.exec_module(module)
        module.__loader__ = self.loader
        if module.__spec__ is not None:
            module.__spec__.loader = self.loader
        register_gymhub_envs()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.loader, name)


class GymnasiumImportWatcher:
    """A meta-path finder that answers only for ``gymnasium``, once."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname != WATCHED:
            return None
        uninstall()
        spec = importlib.util.find_spec(fullname)  # the finders after this one
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        spec.loader = _RegisterAfterExec(spec.loader)  # type: ignore[assignment]  # duck-typed Loader
        return spec


def register_gymhub_envs() -> None:
    if "gymhub" in sys.modules:  # gymhub imported gymnasium: it registers its own ids
        return
    try:
        from gymhub.registry import register_gymnasium_envs

        register_gymnasium_envs()
    except Exception as exc:  # a broken plugin must not break gymnasium
        import warnings

        warnings.warn(f"gymhub could not register its envs with gymnasium: {exc}", stacklevel=2)


def install() -> None:
    if os.environ.get("GYMHUB_NO_GYMNASIUM_HOOK") or WATCHED in sys.modules:
        return
    if not any(isinstance(finder, GymnasiumImportWatcher) for finder in sys.meta_path):
        sys.meta_path.insert(0, GymnasiumImportWatcher())


def uninstall() -> None:
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, GymnasiumImportWatcher)]


if __name__ != "__main__":
    install()


def write_pth(site_packages: str | None = None) -> str:
    """Write the .pth that the wheel ships (setup.py) into ``site_packages``: editable installs
    (``pip install -e``) do not carry it. ``python -m _gymhub_gymnasium_hook`` calls this."""
    import sysconfig
    from pathlib import Path

    folder = Path(site_packages or sysconfig.get_paths()["purelib"])
    target = folder / "gymhub-gymnasium.pth"
    target.write_text("import _gymhub_gymnasium_hook\n", encoding="utf-8")
    return str(target)


if __name__ == "__main__":
    print(write_pth(sys.argv[1] if len(sys.argv) > 1 else None))
