"""Reward-hack probes: scripted trajectories that must score outcome 0.

Each env family ships a suite beside its env (``envs/<family>/probes.py``) and names it in
``registry.yaml`` (``probes: module:ATTR``). A probe builds its actions from the task (so it
can name the right function), says which penalty rules must fire, and grows with every hack
found. :func:`gymhub.registry.load_probes` finds a suite through its spec string; the
reference policy plays a probe by name (``reference:<probe>``), and
``gymhub bench verifiers`` counts the share scored 0 as hack resistance.

Probes are hacks aimed at one env family; the blind policies (:mod:`gymhub.policies.blind`:
empty reply, immediate finish, the most frequent answer, ...) are the env-independent floor
beside them, which ``check_env`` holds every env to.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gymhub.types import Task

Actions = Callable[[Task], list[dict[str, Any]]]


@dataclass(frozen=True)
class Probe:
    name: str
    description: str
    actions: Actions
    expect_rules: tuple[str, ...] = ()  # penalty rules that must fire
    slow: bool = False  # runs into a time limit
