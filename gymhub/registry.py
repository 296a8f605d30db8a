"""Where environments are found: ``registry.yaml``, entry points, and ``register()``.

* ``registry.yaml`` (shipped inside the package) holds the specs of gymhub's own envs; its
  ``families`` section names generated families (``reasoning: module:SPECS``), a data-only
  table of spec dicts read at load time (it must import nothing heavy);
* third-party packages declare ``[project.entry-points."gymhub.envs"]`` with
  ``my-env-v0 = "my_package.envs:MyEnv"``: the name is the env id, the value the class, whose
  ``family`` / ``version`` / ``registry_spec`` class attributes fill the rest of the spec;
* code calls :func:`register` directly.

Every id is also registered with Gymnasium as ``gymhub/<id>`` when ``gymhub`` is imported, and
when ``gymnasium`` is imported in a process that has not imported gymhub: Gymnasium 1.x has no
plugin entry points (0.26-0.29 loaded the ``gymnasium.envs`` group; 1.0 removed it), so the
wheel ships a ``.pth`` import hook (``_gymhub_gymnasium_hook.py``) that calls
:func:`register_gymnasium_envs` right after gymnasium loads. ``gymnasium.make("gymhub:gymhub/<id>")``
(Gymnasium's "import this module first" form) works as well.
"""

from __future__ import annotations

import difflib
import importlib
import threading
from importlib import metadata, resources
from typing import TYPE_CHECKING, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field

from gymhub.errors import GymhubError, UnknownEnv

if TYPE_CHECKING:
    from gymhub.env import Env

ENTRY_POINT_GROUP = "gymhub.envs"
GYM_NAMESPACE = "gymhub"


class EnvSpec(BaseModel):
    """Everything needed to build an env, and what ``gymhub list`` / ``info`` show. The
    ``family``, ``version``, ``verifier`` and ``sandbox`` a spec sets are checked against the
    built env by :func:`gymhub.check_env`, so they cannot drift from the code."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    entry_point: str
    family: str = "generic"
    description: str = ""
    version: str = "0.1.0"
    sandbox: str = "none"
    verifier: str = ""
    task_set: str = ""
    kwargs: dict[str, Any] = Field(default_factory=dict)
    reward: dict[str, Any] = Field(default_factory=dict)
    rules: dict[str, Any] = Field(default_factory=dict)
    probes: str = ""
    # "format-only": the outcome scores the reply's form by design, so check_env's blind floor
    # does not apply (a fixed well-formed reply passes); "shaped": a dense toy score by design
    # (partial credit per character, for learning tests), exempt likewise; "task": it scores
    # doing the task, and a blind policy must stay at the floor.
    outcome: Literal["task", "format-only", "shaped"] = "task"
    source: str = "register()"

    def load_class(self) -> type[Env]:
        try:
            return load_part(self.entry_point)
        except GymhubError as exc:
            raise GymhubError(f"env {self.id!r}: {exc}") from exc


_SPECS: dict[str, EnvSpec] = {}
_LOADED = False
_LOAD_LOCK = threading.RLock()


def _load() -> None:
    """Read registry.yaml and the entry points once. Thread-safe: the rollout engine and the
    HTTP server build envs from worker threads, and none may see a half-filled registry."""
    global _LOADED
    if _LOADED:
        return
    with _LOAD_LOCK:
        if _LOADED:
            return
        text = resources.files("gymhub").joinpath("registry.yaml").read_text(encoding="utf-8")
        document = yaml.safe_load(text) or {}
        for env_id, fields in document.get("envs", {}).items():
            _add(EnvSpec(id=env_id, source="registry.yaml", **fields))
        for family, target in (document.get("families") or {}).items():
            for fields in load_part(target):  # a static table of specs (a light, data-only module)
                _add(EnvSpec(source=f"registry.yaml family {family}", **fields))
        for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
            if ep.name not in _SPECS:
                dist = ep.dist.name if ep.dist is not None else "?"
                _add(EnvSpec(id=ep.name, entry_point=ep.value, source=f"entry point ({dist})"))
        _LOADED = True  # only now: a reader never sees a half-filled registry


def _add(spec: EnvSpec) -> None:
    _SPECS[spec.id] = spec
    _register_with_gymnasium(spec.id)


def _register_with_gymnasium(env_id: str) -> None:
    import gymnasium

    gym_id = f"{GYM_NAMESPACE}/{env_id}"
    if gym_id not in gymnasium.registry:
        gymnasium.register(id=gym_id, entry_point=_GymCreator(env_id), disable_env_checker=True)


class _GymCreator:
    """A picklable creator for ``gymnasium.make("gymhub/<id>")``."""

    def __init__(self, env_id: str) -> None:
        self.env_id = env_id

    def __call__(self, **kwargs: Any) -> Env:
        return make(self.env_id, **kwargs)


def register(id: str, entry_point: str, *, replace: bool = False, **fields: Any) -> EnvSpec:
    """Register an env in this process; ``entry_point`` is ``"module:Class"``."""
    _load()
    if id in _SPECS and not replace:
        raise GymhubError(
            f"env {id!r} is already registered ({_SPECS[id].source}); pass replace=True to override it"
        )
    spec = EnvSpec(id=id, entry_point=entry_point, **fields)
    _add(spec)
    return spec


def unregister(id: str) -> None:
    """Forget an env registered with :func:`register` (mostly for tests)."""
    import gymnasium

    _SPECS.pop(id, None)
    gymnasium.registry.pop(f"{GYM_NAMESPACE}/{id}", None)


def spec(id: str) -> EnvSpec:
    """The full spec of ``id``; for entry-point envs, completed from the class attributes."""
    _load()
    if id not in _SPECS:
        raise UnknownEnv(id, difflib.get_close_matches(id, list(_SPECS), n=3, cutoff=0.4))
    found = _SPECS[id]
    if found.source.startswith("entry point") and not found.description:
        cls = found.load_class()
        extra = dict(getattr(cls, "registry_spec", {}) or {})
        extra.setdefault("family", getattr(cls, "family", "generic"))
        extra.setdefault("version", getattr(cls, "version", "0.1.0"))
        extra.setdefault("description", (cls.__doc__ or "").strip().splitlines()[0] if cls.__doc__ else "")
        found = found.model_copy(update=extra)
        _SPECS[id] = found
    return found


def load_part(target: str) -> Any:
    """Import ``"module:attr"`` (``attr`` may be dotted: ``"module:Class.factory"``) — the one
    loader, how core reaches a part (env, policy, sandbox backend) without importing it by name."""
    module_name, _, attr = target.partition(":")
    if not module_name or not attr:
        raise GymhubError(f"cannot load {target!r}: write it as 'package.module:attribute'")
    try:
        found: Any = importlib.import_module(module_name)
        for name in attr.split("."):
            found = getattr(found, name)
    except (ImportError, AttributeError) as exc:
        raise GymhubError(f"cannot load {target!r} ({exc}); is the part installed?") from exc
    return found


def load_probes(id: str) -> list[Any]:
    """The reward-hack probe suite named by the env's spec (``probes: module:ATTR``), or []."""
    target = spec(id).probes
    return list(load_part(target)) if target else []


def find_probe(id: str, name: str) -> Any | None:
    return next((p for p in load_probes(id) if p.name == name), None)


def list_envs() -> list[EnvSpec]:
    """Every known env spec, sorted by id."""
    _load()
    return [spec(env_id) for env_id in sorted(_SPECS)]


def make(id: str, **overrides: Any) -> Env:
    """Build env ``id`` from its spec; ``overrides`` replace the spec's default kwargs."""
    env_spec = spec(id)
    if "sandbox" in overrides and env_spec.sandbox in ("none", ""):
        raise GymhubError(
            f"env {id!r} runs in memory, with no sandbox: a sandbox backend does not apply to it"
        )
    cls = env_spec.load_class()
    kwargs: dict[str, Any] = {"env_id": id, "reward": env_spec.reward, "rules": env_spec.rules}
    if env_spec.sandbox not in ("none", ""):
        kwargs["sandbox"] = env_spec.sandbox
    kwargs.update(env_spec.kwargs)
    kwargs.update(overrides)
    env = cls(**kwargs)
    env.spec_info = env_spec  # type: ignore[attr-defined]
    return env


def register_gymnasium_envs() -> None:
    """Register every known id with Gymnasium under ``gymhub/`` (reads registry.yaml and the
    entry-point names, imports no env module: about 20 ms)."""
    _load()


register_gymnasium_envs()  # at `import gymhub`: the README's Gymnasium loop needs nothing more
