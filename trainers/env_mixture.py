"""Which tasks a GRPO step trains on: one env, or a weighted mixture of envs.

``GRPOConfig.env`` is an env id (``"toy-letters-v0"``) or a mapping of env ids to weights
(``{"code-python-v0": 0.5, "terminal-v0": 0.3, "search-v0": 0.2}``). Each task slot of a step
picks its env with probability weight / Σ weights; within an env, the task pool is walked in
a fresh shuffle per epoch, so no task repeats before the pool is used up. Every draw advances
the walk: a dynamic-sampling refill gets tasks no step has had yet, and the next step carries
on after them. The sampler's state (its RNG and how far each env's walk has got) goes into the
checkpoint, so a resumed run draws what the uninterrupted run would have drawn.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

from gymhub.errors import GymhubError
from gymhub.registry import make
from gymhub.types import RewardConfig, Task


def env_weights(env: str | Mapping[str, float]) -> dict[str, float]:
    """``env`` as ``{env_id: probability}``; a plain id is ``{id: 1.0}``."""
    if isinstance(env, str):
        return {env: 1.0}
    weights = {str(k): float(v) for k, v in dict(env).items()}
    if not weights:
        raise GymhubError("env: an empty mixture; give an env id or {env_id: weight}")
    bad = {k: v for k, v in weights.items() if not v > 0}
    if bad:
        raise GymhubError(f"env mixture weights must be > 0, got {bad}")
    total = sum(weights.values())
    return {k: v / total for k, v in weights.items()}


class EnvMixture:
    """The envs of a run: their weights, task pools (one split) and reward configs."""

    def __init__(
        self,
        env: str | Mapping[str, float],
        *,
        split: str,
        seed: int,
        env_kwargs: dict[str, Any],
        reward_overrides: Mapping[str, Any],
    ) -> None:
        self.weights = env_weights(env)
        self.seed = seed
        self.pools: dict[str, list[Task]] = {}
        self.rewards: dict[str, RewardConfig] = {}
        for env_id in self.weights:
            probe = make(env_id, **{**env_kwargs, "split": split})
            self.pools[env_id] = list(probe.tasks)
            base = probe.reward_config.model_dump()
            probe.close()
            if not self.pools[env_id]:
                raise GymhubError(f"env {env_id!r} has no tasks in split {split!r}")
            self.rewards[env_id] = RewardConfig(**{**base, **reward_overrides})
        self._rng = random.Random(seed)
        self._drawn = dict.fromkeys(self.weights, 0)  # tasks drawn from each env so far

    @property
    def env_ids(self) -> list[str]:
        return list(self.weights)

    def draw(self, n: int) -> list[tuple[str, Task]]:
        """The next ``n`` (env id, task) pairs: env by weight, then the env's next task."""
        ids = self.env_ids
        picked = self._rng.choices(ids, weights=[self.weights[e] for e in ids], k=n) if n else []
        return [(env_id, self._next_task(env_id)) for env_id in picked]

    def _next_task(self, env_id: str) -> Task:
        pool, k = self.pools[env_id], self._drawn[env_id]
        epoch, index = divmod(k, len(pool))
        order = list(range(len(pool)))
        # each env its own shuffle per epoch; the first env's is the one single-env runs always had
        env_index = self.env_ids.index(env_id)
        random.Random(self.seed * 1_000_003 + epoch + 7_919 * env_index).shuffle(order)
        self._drawn[env_id] = k + 1
        return pool[order[index]]

    def state_dict(self) -> dict[str, Any]:
        return {"rng": self._rng.getstate(), "drawn": dict(self._drawn)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self._rng.setstate(state["rng"])
        self._drawn = {**dict.fromkeys(self.weights, 0), **state["drawn"]}
