"""Rollouts on Ray: env workers as Ray actors, trajectories streamed back to the driver.

``gymhub rollout ENV --backend ray [--address ADDR]``. Each :class:`EpisodeWorker` actor owns
one env instance (with its sandbox) and the policy, and plays the episodes the driver sends
it; the driver — the ordinary rollout engine — stores and groups what comes back, so the
store, ``--resume`` and the groups behave exactly as with the local backend. Episode seeds
and ids derive from the run seed, so the same run gives the same verdicts on either backend.

A worker that dies (its node is lost, its process killed) loses at most the episode it was
playing: that job is sent again to a fresh actor, up to ``max_retries`` times. A trajectory is
stored by the driver only once it has come back, so nothing is lost or duplicated.
"""

from __future__ import annotations

import asyncio
import logging
import os
from typing import TYPE_CHECKING, Any

from gymhub.errors import GymhubError
from gymhub.types import Task, Trajectory

if TYPE_CHECKING:
    from gymhub.rollout_engine import EpisodeRunner

log = logging.getLogger(__name__)


class EpisodeWorker:
    """The actor body: one env and the policy, playing one episode at a time."""

    def __init__(self, env_id: str, env_kwargs: dict[str, Any], policy: Any) -> None:
        from gymhub.policies import make_policy
        from gymhub.registry import make

        self.env = make(env_id, **env_kwargs)
        self.policy = make_policy(policy)

    def pid(self) -> int:
        return os.getpid()

    async def run(self, task_json: str, sample_index: int, seed: int, run_id: str) -> str:
        from gymhub.rollout_engine import run_episode

        task = Task.model_validate_json(task_json)
        trajectory = await run_episode(self.env, self.policy, task, sample_index, seed, run_id)
        return trajectory.model_dump_json()

    async def close(self) -> None:
        await self.env.aclose()
        await self.policy.aclose()


class RayRunner:
    """The driver's side of one worker; replaces the actor if it dies."""

    def __init__(self, backend: RayBackend, make_actor: Any) -> None:
        self.backend = backend
        self.make_actor = make_actor
        self.actor = make_actor()

    async def run(self, task: Task, sample_index: int, seed: int, run_id: str) -> Trajectory:
        from ray.exceptions import ActorDiedError, ActorUnavailableError, RayActorError

        for attempt in range(self.backend.max_retries + 1):
            try:
                payload = await self.actor.run.remote(task.model_dump_json(), sample_index, seed, run_id)
                return Trajectory.model_validate_json(payload)
            except (RayActorError, ActorDiedError, ActorUnavailableError) as exc:
                self.backend.restarts += 1
                log.warning(
                    "env worker died (%s); task %s sample %d goes to a new worker", exc, task.id, sample_index
                )
                if attempt == self.backend.max_retries:
                    raise GymhubError(
                        f"task {task.id} sample {sample_index}: {attempt + 1} env workers died playing it"
                    ) from exc
                self.actor = self.make_actor()
        raise AssertionError("unreachable")  # pragma: no cover

    async def aclose(self) -> None:
        import ray

        try:
            await asyncio.wait_for(self.actor.close.remote(), 30)
        except Exception:  # a dead or stuck actor is killed below anyway
            pass
        ray.kill(self.actor)


class RayBackend:
    """Run episodes on Ray actors (``address=None``: a local Ray instance, started if needed)."""

    def __init__(
        self,
        address: str | None = None,
        *,
        num_cpus_per_worker: float = 1.0,
        max_retries: int = 3,
        init_kwargs: dict[str, Any] | None = None,
    ) -> None:
        self.address = address
        self.num_cpus_per_worker = num_cpus_per_worker
        self.max_retries = max_retries
        self.init_kwargs = dict(init_kwargs or {})
        self.restarts = 0  # workers replaced after dying
        self.runners: list[RayRunner] = []  # the live workers of the current rollout

    def _init(self) -> Any:
        try:
            import ray
        except ImportError as exc:
            raise GymhubError("the ray backend needs Ray: pip install 'gymhub[ray]'") from exc
        if not ray.is_initialized():
            kwargs = {"include_dashboard": False, "log_to_driver": False, **self.init_kwargs}
            ray.init(address=self.address, **kwargs)
        return ray

    async def start(
        self, env_id: str, env_kwargs: dict[str, Any], policy: Any, concurrency: int
    ) -> list[EpisodeRunner]:
        ray = self._init()
        actor_class = ray.remote(num_cpus=self.num_cpus_per_worker, max_restarts=0)(EpisodeWorker)

        def make_actor() -> Any:
            return actor_class.remote(env_id, env_kwargs, policy)

        self.runners = [RayRunner(self, make_actor) for _ in range(concurrency)]
        return list(self.runners)

    async def stop(self, runners: list[EpisodeRunner]) -> None:
        await asyncio.gather(*(r.aclose() for r in runners), return_exceptions=True)
