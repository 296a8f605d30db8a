"""Rollouts on Ray: env workers as Ray actors, trajectories streamed back to the driver.

``gymhub rollout ENV --backend ray [--address ADDR]``, or ``GRPOConfig(rollout_backend="ray",
ray_address=ADDR)``. Each :class:`EpisodeWorker` actor owns one env instance (with its
sandbox); the actors are spread over the cluster's nodes (Ray's ``SPREAD`` strategy). The
driver — the ordinary rollout engine — stores and groups what comes back, so the store,
``--resume`` and the groups behave exactly as with the local backend. Episode seeds and ids
derive from the run seed, so the same run gives the same verdicts on either backend.

Where the policy runs:

- a policy given as a spec string (``"reference"``, ``"openai:..."``) is built in every worker,
  which plays whole episodes (one remote call per episode);
- a :class:`~gymhub.policies.base.Policy` object stays in the driver (the trainer's generator,
  whose weights change every step): the driver plays the episode and each ``reset`` / ``step``
  is a call to the worker's env.

A worker that dies (its node is lost, its process killed) loses at most the episode it was
playing: that episode is played again, from the start and with the same seed, on a surviving
worker, and a replacement worker is started in the background where the cluster has room. A
trajectory reaches the driver's store only once it is complete, so nothing is lost and
nothing is stored twice. :attr:`RayBackend.episodes` records which node played each episode.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from gymhub.errors import GymhubError
from gymhub.types import Task, Trajectory

if TYPE_CHECKING:
    from gymhub._episodes import EpisodeRunner
    from gymhub.env import Env
    from gymhub.policies.base import Policy

log = logging.getLogger(__name__)


def _actor_errors() -> tuple[type[BaseException], ...]:
    """What Ray raises when the actor behind a call is gone (process killed, node lost)."""
    from ray.exceptions import ActorDiedError, ActorUnavailableError, RayActorError

    return (RayActorError, ActorDiedError, ActorUnavailableError)


class EpisodeWorker:
    """The actor body: one env instance, and the policy when it is given as a spec string."""

    def __init__(self, env_id: str, env_kwargs: dict[str, Any], policy: str | None) -> None:
        from gymhub.policies import make_policy
        from gymhub.registry import make

        self.env = make(env_id, **env_kwargs)
        self.policy = make_policy(policy) if policy is not None else None

    def where(self) -> dict[str, Any]:
        """The node and process this worker lives in, and what the driver needs of its env."""
        import ray

        return {
            "node_id": ray.get_runtime_context().get_node_id(),
            "pid": os.getpid(),
            "env_id": self.env.env_id,
            "env_version": self.env.version,
            "verifier_version": self.env.verifier.version,
        }

    async def run(self, task_json: str, sample_index: int, seed: int, run_id: str) -> str:
        """Play a whole episode with this worker's policy (a policy given as a spec string)."""
        from gymhub._episodes import run_episode

        if self.policy is None:
            raise GymhubError("this worker has no policy: the driver plays its episodes")
        task = Task.model_validate_json(task_json)
        trajectory = await run_episode(self.env, self.policy, task, sample_index, seed, run_id)
        return trajectory.model_dump_json()

    async def reset(self, seed: int | None, options: dict[str, Any] | None) -> tuple[Any, dict[str, Any]]:
        return await self.env.areset(seed=seed, options=options)

    async def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        return await self.env.astep(action)

    async def close_env(self) -> None:
        await self.env.aclose()

    async def close(self) -> None:
        await self.env.aclose()
        if self.policy is not None:
            await self.policy.aclose()


@dataclass(frozen=True)
class _VerifierVersion:
    version: str


class ActorEnv:
    """The driver's handle on a worker's env: the part of :class:`~gymhub.env.Env` that
    ``run_episode`` uses (``areset``, ``astep``, ``aclose``, ``env_id``, ``version``,
    ``verifier.version``), each call a remote one. ``lost`` holds the error when the worker
    died during a call: ``run_episode`` turns every failure into an errored trajectory, and
    the runner reads ``lost`` to tell a dead worker (play the episode again) from an env error
    (keep the errored trajectory, as the local backend does)."""

    def __init__(self, actor: Any, about: dict[str, Any]) -> None:
        self.actor = actor
        self.env_id: str = about["env_id"]
        self.version: str = about["env_version"]
        self.verifier = _VerifierVersion(about["verifier_version"])
        self.lost: BaseException | None = None

    async def areset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        result: tuple[Any, dict[str, Any]] = await self._call(self.actor.reset.remote(seed, options))
        return result

    async def astep(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        result: tuple[Any, float, bool, bool, dict[str, Any]] = await self._call(
            self.actor.step.remote(action)
        )
        return result

    async def aclose(self) -> None:
        await self._call(self.actor.close_env.remote())

    async def _call(self, ref: Any) -> Any:
        from ray.exceptions import RayTaskError

        try:
            return await ref
        except _actor_errors() as exc:
            self.lost = exc
            raise
        except RayTaskError as exc:  # the env itself raised: the same error as in-process
            raise exc.cause from None


@dataclass
class _Worker:
    actor: Any
    node_id: str
    pid: int
    env: ActorEnv


@dataclass(frozen=True)
class EpisodeRecord:
    """One episode played on a worker: where, and whether it came back (``finished``) or was
    lost with its worker (and played again elsewhere)."""

    task_id: str
    sample_index: int
    node_id: str
    worker_pid: int
    finished: bool


@dataclass
class _KeptWorkers:
    """Workers kept between rollouts (``keep_workers=True``): placed ones, and actors Ray had
    not placed yet when the last rollout ended."""

    ready: list[_Worker] = field(default_factory=list)
    pending: list[Any] = field(default_factory=list)


def _kill_actor(actor: Any) -> None:
    import ray

    try:
        ray.kill(actor)
    except Exception:  # already gone
        pass


@dataclass
class _WorkerPool:
    """The env workers of one rollout. Runners take any idle worker; a dead worker is dropped
    and a replacement is started in the background (it joins once Ray has placed it)."""

    backend: RayBackend
    key: str  # env, env kwargs and worker policy: which kept workers can serve this rollout
    make_actor: Any
    driver_policy: Policy | None  # None: the workers hold the policy
    idle: list[_Worker] = field(default_factory=list)
    live: int = 0  # placed and not dead (idle or busy)
    starting: dict[asyncio.Task[None], Any] = field(default_factory=dict)  # join task -> actor
    actors: list[Any] = field(default_factory=list)  # every actor of this rollout
    start_error: BaseException | None = None  # why the last worker that failed to start failed
    start_failures: int = 0  # workers that died before they started (each is asked for again)
    changed: asyncio.Condition = field(default_factory=asyncio.Condition)

    def spawn(self, actor: Any = None) -> None:
        """Ask Ray for a new worker (or wait for ``actor``, one asked for earlier)."""
        actor = self.make_actor() if actor is None else actor
        self.actors.append(actor)
        self.starting[asyncio.ensure_future(self._join(actor))] = actor

    def adopt(self, kept: _KeptWorkers) -> None:
        for worker in kept.ready:
            self.actors.append(worker.actor)
            self.idle.append(worker)
            self.live += 1
        for actor in kept.pending:
            self.spawn(actor)

    @property
    def size(self) -> int:
        return self.live + len(self.starting)

    async def _join(self, actor: Any) -> None:
        failures: tuple[type[BaseException], ...] = (TimeoutError, *_actor_errors())
        try:
            about = await asyncio.wait_for(actor.where.remote(), self.backend.placement_timeout_s)
        except failures as exc:
            log.warning("an env worker could not be started on the Ray cluster: %r", exc)
            self.start_error = exc
            _kill_actor(actor)
            worker = None
        else:
            worker = _Worker(actor, about["node_id"], about["pid"], ActorEnv(actor, about))
        # a worker that died before it started (a node lost, a transient failure) is asked for
        # again, up to max_retries times per rollout; one never placed in time is not
        died = worker is None and not isinstance(self.start_error, TimeoutError)
        again = died and self.start_failures < self.backend.max_retries
        if again:
            self.start_failures += 1
            await asyncio.sleep(1.0)
        async with self.changed:
            self.starting.pop(cast("asyncio.Task[None]", asyncio.current_task()), None)
            if worker is not None:
                self.live += 1
                self.idle.append(worker)
            elif again:
                self.spawn()
            self.changed.notify_all()

    async def acquire(self) -> _Worker:
        async with self.changed:
            while not self.idle:
                if self.live == 0 and not self.starting:
                    raise GymhubError(
                        "no env worker is left on the Ray cluster and none could be started "
                        f"(placement timeout {self.backend.placement_timeout_s:.0f} s): {self.start_error!r}"
                    ) from self.start_error
                await self.changed.wait()
            return self.idle.pop(0)

    async def release(self, worker: _Worker) -> None:
        async with self.changed:
            self.idle.append(worker)
            self.changed.notify_all()

    async def retire(self, worker: _Worker) -> None:
        """Drop a dead worker (killed, should it only be unreachable, so its CPU is freed) and
        ask Ray for a replacement."""
        _kill_actor(worker.actor)
        async with self.changed:
            self.live -= 1
            self.backend.workers_lost += 1
            self.spawn()
            self.changed.notify_all()

    async def play(
        self, worker: _Worker, task: Task, sample_index: int, seed: int, run_id: str
    ) -> Trajectory:
        """One episode on ``worker``; raises an actor error if the worker died meanwhile."""
        if self.driver_policy is None:
            payload = await worker.actor.run.remote(task.model_dump_json(), sample_index, seed, run_id)
            return Trajectory.model_validate_json(payload)
        from gymhub._episodes import run_episode

        worker.env.lost = None
        env = cast("Env", worker.env)  # run_episode uses only what ActorEnv has
        trajectory = await run_episode(env, self.driver_policy, task, sample_index, seed, run_id)
        if worker.env.lost is not None:
            raise worker.env.lost
        return trajectory

    async def close(self, keep: bool) -> None:
        """End the rollout: the idle workers (and those still being placed) are kept for the
        next rollout with ``keep``, else closed; any other actor is killed."""
        pending = list(self.starting.values())
        joining = list(self.starting)
        for task in joining:
            task.cancel()
        await asyncio.gather(*joining, return_exceptions=True)
        ready = list(self.idle)
        if keep:
            kept = self.backend._kept.setdefault(self.key, _KeptWorkers())
            kept.ready.extend(ready)
            kept.pending.extend(pending)
            keeping = {id(a) for a in pending} | {id(w.actor) for w in ready}
        else:
            await asyncio.gather(
                *(asyncio.wait_for(w.actor.close.remote(), 30) for w in ready), return_exceptions=True
            )
            keeping = set()
        for actor in self.actors:
            if id(actor) not in keeping:
                _kill_actor(actor)
        if self.driver_policy is not None:
            await self.driver_policy.aclose()


class RayRunner:
    """The engine's runner: takes any idle worker of the pool for each episode, and plays the
    episode again on another worker when its worker dies."""

    def __init__(self, pool: _WorkerPool) -> None:
        self.pool = pool

    async def run(self, task: Task, sample_index: int, seed: int, run_id: str) -> Trajectory:
        backend = self.pool.backend
        for attempt in range(backend.max_retries + 1):
            worker = await self.pool.acquire()
            try:
                trajectory = await self.pool.play(worker, task, sample_index, seed, run_id)
            except _actor_errors() as exc:
                backend.episodes.append(
                    EpisodeRecord(task.id, sample_index, worker.node_id, worker.pid, False)
                )
                await self.pool.retire(worker)
                log.warning(
                    "env worker %d on node %s died (%s); task %s sample %d is played again",
                    worker.pid,
                    worker.node_id[:8],
                    type(exc).__name__,
                    task.id,
                    sample_index,
                )
                if attempt == backend.max_retries:
                    raise GymhubError(
                        f"task {task.id} sample {sample_index}: {attempt + 1} env workers died playing it"
                    ) from exc
                continue
            backend.episodes.append(EpisodeRecord(task.id, sample_index, worker.node_id, worker.pid, True))
            await self.pool.release(worker)
            return trajectory
        raise AssertionError("unreachable")  # pragma: no cover

    async def aclose(self) -> None:
        """Nothing of its own: the pool's workers are closed by :meth:`RayBackend.stop`."""


class RayBackend:
    """Run episodes on Ray actors spread over a cluster.

    ``address``: the cluster, as ``ray.init`` takes it (``"host:6379"``, ``"ray://host:10001"``,
    ``"auto"``); ``None``: a local Ray instance, started if needed. A driver already connected
    to Ray keeps its connection (and an ``address`` naming another cluster is refused).
    ``max_retries``: how many times one episode is played again after its worker died.
    ``placement_timeout_s``: how long a new worker may wait for Ray to place it before it is
    given up (the rollout fails only when no worker at all is left).
    ``keep_workers``: the workers outlive a rollout and serve the next one of the same env,
    env kwargs and worker policy (a trainer's steps: no actor start-up per step); a kept
    worker that died meanwhile is found out and replaced like any other. :meth:`close` ends
    them, as does the driver's exit.
    """

    def __init__(
        self,
        address: str | None = None,
        *,
        num_cpus_per_worker: float = 1.0,
        max_retries: int = 3,
        placement_timeout_s: float = 600.0,
        init_kwargs: dict[str, Any] | None = None,
        keep_workers: bool = False,
    ) -> None:
        self.address = address
        self.keep_workers = keep_workers
        self._kept: dict[str, _KeptWorkers] = {}
        self.num_cpus_per_worker = num_cpus_per_worker
        self.max_retries = max_retries
        self.placement_timeout_s = placement_timeout_s
        self.init_kwargs = dict(init_kwargs or {})
        self.workers_lost = 0  # workers that died and were replaced
        self.episodes: list[EpisodeRecord] = []  # every episode played, in the order they ended

    def _init(self) -> Any:
        try:
            import ray
        except ImportError as exc:
            raise GymhubError("the ray backend needs Ray: pip install 'gymhub[ray]'") from exc
        if ray.is_initialized():
            connected = ray.get_runtime_context().gcs_address
            if self.address and not _same_cluster(self.address, connected):
                raise GymhubError(
                    f"this process is already connected to the Ray cluster at {connected}, not "
                    f"{self.address}: call ray.shutdown() first"
                )
            return ray
        kwargs = {"include_dashboard": False, "log_to_driver": False, **self.init_kwargs}
        ray.init(address=self.address, **kwargs)
        return ray

    async def start(
        self, env_id: str, env_kwargs: dict[str, Any], policy: Policy | str, concurrency: int
    ) -> list[EpisodeRunner]:
        """``concurrency`` workers are asked for (fewer may fit the cluster); one runner each."""
        ray = self._init()
        actor_class = ray.remote(num_cpus=self.num_cpus_per_worker, max_restarts=0)(EpisodeWorker)
        worker_policy = policy if isinstance(policy, str) else None
        options = actor_class.options(scheduling_strategy="SPREAD")

        def make_actor() -> Any:
            return options.remote(env_id, env_kwargs, worker_policy)

        key = json.dumps([env_id, env_kwargs, worker_policy], sort_keys=True, default=str)
        pool = _WorkerPool(self, key, make_actor, None if isinstance(policy, str) else policy)
        pool.adopt(self._kept.pop(key, _KeptWorkers()))
        while pool.size < concurrency:
            pool.spawn()
        return [RayRunner(pool) for _ in range(concurrency)]

    async def stop(self, runners: list[EpisodeRunner]) -> None:
        pools = {id(r.pool): r.pool for r in runners if isinstance(r, RayRunner)}
        for pool in pools.values():
            await pool.close(keep=self.keep_workers)

    def close(self) -> None:
        """End the workers kept between rollouts (``keep_workers=True``)."""
        for kept in self._kept.values():
            for actor in [*(w.actor for w in kept.ready), *kept.pending]:
                _kill_actor(actor)
        self._kept.clear()


def _same_cluster(address: str, connected: str) -> bool:
    """Whether ``address`` can name the cluster at ``connected`` (``ip:port``). A Ray Client
    address (``ray://``) or ``auto`` cannot be checked, and is taken as the same."""
    if address == "auto" or address.startswith("ray://"):
        return True
    return address.rpartition(":")[2] == connected.rpartition(":")[2]
