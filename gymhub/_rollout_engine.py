"""The rollout engine: policy × env × G samples per task, streamed as TrajectoryGroups.

``arollout`` runs ``concurrency`` env instances as asyncio workers (env I/O and verification
run in threads / subprocesses, so two workers keep two cores busy). With a store, the run is
recorded before the first episode (:func:`plan_run`) and each finished trajectory is committed
to it at once — a killed run loses nothing, and ``resume=True`` does only what the store lacks.
A trajectory whose policy or env fails is kept as ``status="errored"`` with the reason: never
dropped.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gymhub._episodes import EpisodeBackend, EpisodeRunner, run_episode
from gymhub.env import Env
from gymhub.errors import GymhubError, StoreError
from gymhub.registry import load_part, make
from gymhub.types import RewardConfig, Task, Trajectory, TrajectoryGroup, content_hash

if TYPE_CHECKING:
    from gymhub.policies.base import Policy
    from gymhub.store.store import TrajectoryStore


@dataclass(frozen=True)
class _Job:
    task: Task
    sample_index: int
    seed: int


def episode_seed(run_seed: int, task_id: str, sample_index: int) -> int:
    """A per-episode seed derived from the run seed: stable across machines and resumes."""
    return int(content_hash({"seed": run_seed, "task": task_id, "k": sample_index}, 8), 16)


def select_tasks(env: Env, tasks: int | Iterable[str | Task] | None) -> list[Task]:
    """``None``: every task of the env's split; ``N``: the first N; ids or Task objects."""
    if tasks is None:
        return env.tasks
    if isinstance(tasks, int):
        pool = env.tasks
        if tasks < 1:
            raise GymhubError(f"the number of tasks must be at least 1, not {tasks}")
        if tasks > len(pool):
            raise GymhubError(f"{env.env_id} has {len(pool)} {env.split} tasks; {tasks} were asked for")
        return pool[:tasks]
    chosen = [t if isinstance(t, Task) else env.get_task(t) for t in tasks]
    if not chosen:
        raise GymhubError("the task list is empty: nothing to roll out")
    return chosen


MAX_SEED = 2**63 - 1  # the store keeps seeds as signed 64-bit integers


@dataclass(frozen=True)
class RunPlan:
    """What a rollout will do, settled (and the run recorded) before the first episode."""

    run_id: str
    env_id: str
    policy_id: str
    split: str
    group_size: int
    seed: int
    tasks: list[Task]
    env_kwargs: dict[str, Any]
    skip: frozenset[tuple[str, int]]
    reward: RewardConfig
    resumed: bool

    @property
    def todo(self) -> int:
        return len(self.tasks) * self.group_size - len(self.skip)


def plan_run(
    env_id: str,
    policy: Policy | str,
    *,
    tasks: int | Iterable[str | Task] | None = None,
    group_size: int | None = None,
    concurrency: int = 1,
    split: str | None = None,
    seed: int | None = None,
    env_kwargs: dict[str, Any] | None = None,
    store: TrajectoryStore | None = None,
    run_id: str | None = None,
    resume: bool = False,
    skip: Iterable[tuple[str, int]] = (),
) -> RunPlan:
    """Check every argument, pick the tasks, and record the run in ``store`` (when new).

    A run id the store already has is continued only with ``resume=True`` (its env kwargs,
    split, G, seed and tasks are the run's; what is stored is skipped) — or used as it is when
    it holds no trajectory yet (a run made with ``store.create_run``). Everything a user can
    get wrong is raised here, before any episode runs.
    """
    run_id = run_id or uuid.uuid4().hex[:12]
    if env_kwargs is not None and "split" in env_kwargs:  # the split given as an env kwarg
        env_kwargs = dict(env_kwargs)
        given_split = env_kwargs.pop("split")
        if split is not None and given_split != split:
            raise GymhubError(f"split={split!r} and env_kwargs split={given_split!r} disagree")
        split = given_split
    existing = store.find_run(run_id) if store is not None else None
    if resume and store is None:
        raise GymhubError("resume=True continues a stored run: pass store= and run_id=")
    if resume and existing is None:
        assert store is not None
        store.get_run(run_id)  # raises: no such run, with the runs the store has
    skipped = set(skip)
    if existing is not None:
        assert store is not None
        if existing.env_id != env_id:
            raise StoreError(
                f"run {run_id!r} rolls out {existing.env_id}, not {env_id}: resume it with its own env"
            )
        stored = store.stored_keys(run_id)
        if stored and not resume:
            raise StoreError(
                f"run {run_id!r} already holds {len(stored)} trajectories: continue it with resume=True "
                f"(`gymhub rollout {env_id} --resume {run_id}`), or name a new run"
            )
        recorded = {"split": existing.split, "group_size": existing.group_size, "seed": existing.seed}
        for name, given in (("split", split), ("group_size", group_size), ("seed", seed)):
            if given is not None and given != recorded[name]:
                raise StoreError(f"run {run_id!r} was recorded with {name}={recorded[name]!r}, not {given!r}")
        split, group_size, seed = existing.split, existing.group_size, existing.seed
        if env_kwargs is None:
            env_kwargs = dict(existing.config.get("env_kwargs", {}))
        if tasks is None:
            tasks = existing.task_ids
        skipped |= stored
    split = "train" if split is None else split
    group_size = 1 if group_size is None else group_size
    seed = 0 if seed is None else seed
    if split not in ("train", "eval"):
        raise GymhubError(f"split must be train or eval, not {split!r}")
    if group_size < 1 or concurrency < 1:
        raise GymhubError("group_size and concurrency must be at least 1")
    if not 0 <= seed <= MAX_SEED:
        raise GymhubError(f"seed must be between 0 and 2**63-1, not {seed}")
    env_kwargs = dict(env_kwargs or {})
    check_sandbox_backend(env_kwargs.get("sandbox"))
    probe = make(env_id, split=split, **env_kwargs)
    try:
        chosen = select_tasks(probe, tasks)
        reward: RewardConfig = probe.reward_config
    finally:
        probe.close()
    if existing is not None and [t.id for t in chosen] != existing.task_ids:
        raise StoreError(f"run {run_id!r} was recorded with other tasks: resume it without naming tasks")
    _check_policy(policy, chosen[0])
    policy_id = policy if isinstance(policy, str) else str(getattr(policy, "id", type(policy).__name__))
    if store is not None and existing is None:
        store.create_run(
            run_id,
            env_id=env_id,
            policy=policy_id,
            split=split,
            group_size=group_size,
            seed=seed,
            tasks=chosen,
            config={"concurrency": concurrency, "env_kwargs": env_kwargs},
        )
    return RunPlan(
        run_id=run_id,
        env_id=env_id,
        policy_id=policy_id,
        split=split,
        group_size=group_size,
        seed=seed,
        tasks=chosen,
        env_kwargs=env_kwargs,
        skip=frozenset(skipped),
        reward=reward,
        resumed=existing is not None and resume,
    )


def check_sandbox_backend(backend: str | None) -> None:
    if backend is None:
        return
    known = load_part("gymhub.sandboxes:BACKENDS")
    if backend not in known:
        raise GymhubError(f"unknown sandbox backend {backend!r}: use one of {', '.join(sorted(known))}")


def _check_policy(policy: Policy | str, task: Task) -> None:
    """An unknown scheme or reference variant fails here, not as N errored trajectories."""
    if not isinstance(policy, str):
        return
    from gymhub.policies import POLICY_SCHEMES, make_policy

    scheme = policy.partition(":")[0]
    if scheme not in POLICY_SCHEMES:
        make_policy(policy)  # raises, naming the schemes
    if scheme == "reference":
        make_policy(policy).for_episode(task)  # raises for a variant the task does not have


async def arollout(
    env_id: str,
    policy: Policy | str,
    *,
    tasks: int | Iterable[str | Task] | None = None,
    group_size: int | None = None,
    concurrency: int = 1,
    store: TrajectoryStore | None = None,
    run_id: str | None = None,
    split: str | None = None,
    seed: int | None = None,
    env_kwargs: dict[str, Any] | None = None,
    skip: set[tuple[str, int]] | None = None,
    on_trajectory: Callable[[Trajectory], None] | None = None,
    backend: str | EpisodeBackend = "local",
    resume: bool = False,
    plan: RunPlan | None = None,
) -> AsyncIterator[TrajectoryGroup]:
    """Yield one TrajectoryGroup per task as soon as its G trajectories are done; the
    arguments are :func:`rollout`'s.

    With ``store``, the run is recorded before the first episode (:func:`plan_run`) and each
    trajectory is committed as it finishes. Whatever the backend, the trajectories come back
    here, where they are stored and grouped.
    """
    episode_backend = rollout_backend(backend) if isinstance(backend, str) else backend
    if plan is None:
        plan = plan_run(
            env_id,
            policy,
            tasks=tasks,
            group_size=group_size,
            concurrency=concurrency,
            split=split,
            seed=seed,
            env_kwargs=env_kwargs,
            store=store,
            run_id=run_id,
            resume=resume,
            skip=skip or (),
        )
    env_kwargs = {"split": plan.split, **plan.env_kwargs}
    reward, chosen, run_id, group_size, seed = (
        plan.reward,
        plan.tasks,
        plan.run_id,
        plan.group_size,
        plan.seed,
    )
    skip = set(plan.skip)
    runners = await episode_backend.start(env_id, env_kwargs, policy, concurrency)
    jobs: asyncio.Queue[_Job | None] = asyncio.Queue()
    pending: dict[str, int] = {}
    for task in chosen:
        todo = [k for k in range(group_size) if (task.id, k) not in skip]
        if todo:
            pending[task.id] = len(todo)
        for k in todo:
            jobs.put_nowait(_Job(task, k, episode_seed(seed, task.id, k)))
    for _ in runners:
        jobs.put_nowait(None)
    done: asyncio.Queue[Trajectory] = asyncio.Queue()
    store_lock = asyncio.Lock()

    async def worker(runner: EpisodeRunner) -> None:
        while (job := await jobs.get()) is not None:
            trajectory = await runner.run(job.task, job.sample_index, job.seed, run_id)
            if store is not None:
                async with store_lock:
                    await asyncio.to_thread(store.add_trajectory, run_id, trajectory)
            if on_trajectory is not None:
                on_trajectory(trajectory)
            await done.put(trajectory)

    workers = [asyncio.create_task(worker(runner)) for runner in runners]
    collected: dict[str, list[Trajectory]] = {}
    try:
        for _ in range(sum(pending.values())):
            trajectory = await _next_result(done, workers)
            group = collected.setdefault(trajectory.task_id, [])
            group.append(trajectory)
            pending[trajectory.task_id] -= 1
            if pending[trajectory.task_id] == 0:
                if store is not None and len(group) < group_size:  # resumed: add stored ones
                    group = await asyncio.to_thread(store.load_group, run_id, trajectory.task_id)
                yield TrajectoryGroup.build(group, reward)
                del collected[trajectory.task_id]
        await asyncio.gather(*workers)
    finally:
        for w in workers:
            w.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
        await episode_backend.stop(runners)


@dataclass
class LocalRunner:
    env: Env
    policy: Policy
    healthy: bool = True  # its last episode ended without an error (a kept env must be)

    async def run(self, task: Task, sample_index: int, seed: int, run_id: str) -> Trajectory:
        trajectory = await run_episode(self.env, self.policy, task, sample_index, seed, run_id)
        self.healthy = trajectory.error is None
        return trajectory

    async def aclose(self) -> None:
        await self.env.aclose()


class LocalBackend:
    """``concurrency`` env instances in this process, driven by asyncio workers.

    With ``keep_workers`` the envs (and their sandboxes) outlive a rollout and serve the next
    one of the same env and arguments, as a trainer's steps do; every episode starts with a
    reset either way, and an env whose last episode failed is closed, not kept. :meth:`close`
    ends the kept ones.
    """

    def __init__(self, keep_workers: bool = False) -> None:
        self.keep_workers = keep_workers
        self._policy: Policy | None = None
        self._kept: dict[str, list[Env]] = {}  # env id and arguments -> idle envs
        self._key: dict[int, str] = {}  # id(runner) -> its env's key in _kept

    async def start(
        self, env_id: str, env_kwargs: dict[str, Any], policy: Policy | str, concurrency: int
    ) -> list[EpisodeRunner]:
        from gymhub.policies import make_policy

        self._policy = make_policy(policy)
        key = repr((env_id, sorted(env_kwargs.items())))
        idle = self._kept.setdefault(key, [])
        runners = [
            LocalRunner(idle.pop() if idle else make(env_id, **env_kwargs), self._policy)
            for _ in range(concurrency)
        ]
        self._key.update((id(r), key) for r in runners)
        return list(runners)

    async def stop(self, runners: list[EpisodeRunner]) -> None:
        for runner in runners:
            key = self._key.pop(id(runner), None)
            if self.keep_workers and key is not None and isinstance(runner, LocalRunner) and runner.healthy:
                self._kept[key].append(runner.env)
            else:
                await runner.aclose()
        if self._policy is not None:
            await self._policy.aclose()

    def close(self) -> None:
        """Close the envs kept between rollouts (``keep_workers=True``)."""
        for envs in self._kept.values():
            for env in envs:
                env.close()
        self._kept.clear()


# rollout backend name -> factory; "ray" loads only when used (Ray is an extra)
def _local_backend(address: str | None = None, keep_workers: bool = False, **_: Any) -> EpisodeBackend:
    if address is not None:
        raise GymhubError("an address applies to the ray rollout backend only")
    return LocalBackend(keep_workers=keep_workers)


def _ray_backend(address: str | None = None, **options: Any) -> EpisodeBackend:
    backend: EpisodeBackend = load_part("gymhub._ray_backend:RayBackend")(address, **options)
    return backend


# name -> factory(address=None, **backend options): the one map from backend names to backends
ROLLOUT_BACKENDS: dict[str, Callable[..., EpisodeBackend]] = {"local": _local_backend, "ray": _ray_backend}


def rollout_backend(name: str, address: str | None = None, **options: Any) -> EpisodeBackend:
    """A new episode backend of the name registered in :data:`ROLLOUT_BACKENDS`; ``address``
    (a Ray cluster's) and ``options`` go to its constructor."""
    if name not in ROLLOUT_BACKENDS:
        raise GymhubError(f"unknown rollout backend {name!r}: use one of {', '.join(ROLLOUT_BACKENDS)}")
    return ROLLOUT_BACKENDS[name](address, **options)


async def _next_result(done: asyncio.Queue[Trajectory], workers: list[asyncio.Task[None]]) -> Trajectory:
    """The next finished trajectory; re-raises a worker's crash instead of hanging."""
    if not done.empty():  # one is waiting (episodes of a batch end together): no need to watch
        return done.get_nowait()
    getter = asyncio.ensure_future(done.get())
    while True:
        finished, _ = await asyncio.wait([getter, *workers], return_when=asyncio.FIRST_COMPLETED)
        if getter in finished:
            return getter.result()
        for w in finished:
            if w.exception() is not None:
                getter.cancel()
                raise w.exception()  # type: ignore[misc]
        workers = [w for w in workers if not w.done()]


def rollout(
    env_id: str,
    policy: Policy | str,
    *,
    tasks: int | Iterable[str | Task] | None = None,
    group_size: int | None = None,
    concurrency: int = 1,
    store: TrajectoryStore | None = None,
    run_id: str | None = None,
    split: str | None = None,
    seed: int | None = None,
    env_kwargs: dict[str, Any] | None = None,
    skip: set[tuple[str, int]] | None = None,
    on_trajectory: Callable[[Trajectory], None] | None = None,
    backend: str | EpisodeBackend = "local",
    resume: bool = False,
    plan: RunPlan | None = None,
) -> list[TrajectoryGroup]:
    """Roll ``policy`` out on env ``env_id``: G scored trajectories per task, grouped.

    Args:
        env_id: a registered env id (``gymhub.list_envs()``).
        policy: a :class:`~gymhub.policies.base.Policy`, or its spec: ``"reference"``,
            ``"openai:URL#model"``, ``"hf:PATH"``, ``"blind:KIND"``.
        tasks: ``None`` for every task of the split, ``N`` for the first N, or task ids / tasks.
        group_size: G, the samples per task (default 1).
        concurrency: how many episodes run at once (one env instance each).
        store: a :class:`~gymhub.store.store.TrajectoryStore`; every trajectory is committed to
            it as it finishes, under run ``run_id`` (a new id when omitted).
        split: ``"train"`` (default) or ``"eval"``.
        seed: the run seed (default 0); each episode's seed derives from it (:func:`episode_seed`).
        env_kwargs: overrides of the env's spec (e.g. ``{"sandbox": "docker"}``).
        skip: ``(task_id, sample_index)`` pairs not to play.
        on_trajectory: called with each trajectory as it finishes.
        backend: a name in :data:`ROLLOUT_BACKENDS` (``"local"``, ``"ray"``) or an episode backend.
        resume: continue the stored run ``run_id``, playing only what the store lacks.
        plan: a :func:`plan_run` result made beforehand; it replaces the arguments it settles.

    Returns:
        One :class:`~gymhub.types.TrajectoryGroup` per task, with rewards and advantages from
        the env's :class:`~gymhub.types.RewardConfig`. A failed episode is an ``errored``
        trajectory in its group, never dropped. :func:`arollout` streams the same groups.
    """

    groups = arollout(**locals())  # every argument above, passed on as given

    async def collect() -> list[TrajectoryGroup]:
        return [group async for group in groups]

    return asyncio.run(collect())
