"""The rollout engine: policy × env × G samples per task, streamed as TrajectoryGroups.

``arollout`` runs ``concurrency`` env instances as asyncio workers (env I/O and verification
run in threads / subprocesses, so two workers keep two cores busy). Each finished trajectory
is committed to the store at once — a killed run loses nothing, and ``skip`` (what the store
already has) makes a resumed run do only the rest. A trajectory whose policy or env fails is
kept as ``status="errored"`` with the reason: never dropped.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from gymhub.env import Env, message_from_openai
from gymhub.errors import GymhubError
from gymhub.registry import make
from gymhub.types import RewardConfig, Task, Trajectory, TrajectoryGroup, Turn, content_hash

if TYPE_CHECKING:
    from gymhub.policies.base import Policy, PolicyReply
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
        if tasks > len(pool):
            raise GymhubError(f"{env.env_id} has {len(pool)} {env.split} tasks; {tasks} were asked for")
        return pool[:tasks]
    return [t if isinstance(t, Task) else env.get_task(t) for t in tasks]


async def arollout(
    env_id: str,
    policy: Policy | str,
    *,
    tasks: int | Iterable[str | Task] | None = None,
    group_size: int = 1,
    concurrency: int = 1,
    store: TrajectoryStore | None = None,
    run_id: str | None = None,
    split: str = "train",
    seed: int = 0,
    env_kwargs: dict[str, Any] | None = None,
    skip: set[tuple[str, int]] | None = None,
    on_trajectory: Callable[[Trajectory], None] | None = None,
    backend: str | EpisodeBackend = "local",
) -> AsyncIterator[TrajectoryGroup]:
    """Yield one TrajectoryGroup per task as soon as its G trajectories are done.

    ``backend`` runs the episodes: ``"local"`` (env instances in this process) or ``"ray"`` /
    a :class:`gymhub.ray_backend.RayBackend` (env workers as Ray actors). Either way the
    trajectories come back here, where they are stored and grouped.
    """
    if group_size < 1 or concurrency < 1:
        raise GymhubError("group_size and concurrency must be at least 1")
    env_kwargs = {"split": split, **(env_kwargs or {})}
    if backend == "ray":
        from gymhub.ray_backend import RayBackend

        backend = RayBackend()
    episode_backend = backend if not isinstance(backend, str) else LocalBackend()
    if isinstance(backend, str) and backend != "local":
        raise GymhubError(f"unknown rollout backend {backend!r}: use local or ray")
    probe = make(env_id, **env_kwargs)
    reward: RewardConfig = probe.reward_config
    chosen = select_tasks(probe, tasks)
    runners = await episode_backend.start(env_id, env_kwargs, policy, concurrency)
    run_id = run_id or uuid.uuid4().hex[:12]
    skip = skip or set()
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
        await probe.aclose()


class EpisodeRunner(Protocol):
    """Plays episodes one at a time: one env instance (local) or one env worker (Ray)."""

    async def run(self, task: Task, sample_index: int, seed: int, run_id: str) -> Trajectory: ...

    async def aclose(self) -> None: ...


class EpisodeBackend(Protocol):
    """Where episodes run; the engine stores and groups what comes back."""

    async def start(
        self, env_id: str, env_kwargs: dict[str, Any], policy: Policy | str, concurrency: int
    ) -> list[EpisodeRunner]: ...

    async def stop(self, runners: list[EpisodeRunner]) -> None: ...


@dataclass
class LocalRunner:
    env: Env
    policy: Policy

    async def run(self, task: Task, sample_index: int, seed: int, run_id: str) -> Trajectory:
        return await run_episode(self.env, self.policy, task, sample_index, seed, run_id)

    async def aclose(self) -> None:
        await self.env.aclose()


class LocalBackend:
    """``concurrency`` env instances in this process, driven by asyncio workers."""

    def __init__(self) -> None:
        self._policy: Policy | None = None

    async def start(
        self, env_id: str, env_kwargs: dict[str, Any], policy: Policy | str, concurrency: int
    ) -> list[EpisodeRunner]:
        from gymhub.policies import make_policy

        self._policy = make_policy(policy)
        return [LocalRunner(make(env_id, **env_kwargs), self._policy) for _ in range(concurrency)]

    async def stop(self, runners: list[EpisodeRunner]) -> None:
        for runner in runners:
            await runner.aclose()
        if self._policy is not None:
            await self._policy.aclose()


async def _next_result(done: asyncio.Queue[Trajectory], workers: list[asyncio.Task[None]]) -> Trajectory:
    """The next finished trajectory; re-raises a worker's crash instead of hanging."""
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


async def run_episode(
    env: Env, policy: Policy, task: Task, sample_index: int, seed: int, run_id: str
) -> Trajectory:
    """Play one episode; failures become an errored trajectory with the reason."""
    start = time.perf_counter()
    turns: list[Turn] = []
    base: dict[str, Any] = {
        "id": content_hash({"run": run_id, "task": task.id, "k": sample_index}),
        "task_id": task.id,
        "env_id": env.env_id,
        "sample_index": sample_index,
        "policy": policy.id,
        "seed": seed,
        "env_version": env.version,
        "verifier_version": env.verifier.version,
    }
    timings = {"policy_s": 0.0, "env_s": 0.0}
    try:
        episode_policy = policy.for_episode(task)
        t0 = time.perf_counter()
        _, info = await env.areset(seed=seed, options={"task_id": task.id})
        timings["env_s"] += time.perf_counter() - t0
        messages = [message_from_openai(m) for m in info["messages"]]
        tools = info["tools"]
        turns.append(Turn(source="env", messages=tuple(messages)))
        context: list[int] | None = []  # the episode's token ids so far; None once inconsistent
        for turn_index in range(10_000):
            t0 = time.perf_counter()
            reply = await episode_policy.act(messages, tools, seed=seed + turn_index)
            timings["policy_s"] += time.perf_counter() - t0
            context = _attach_env_tokens(turns, context, reply)
            turns.append(_policy_turn(reply))
            t0 = time.perf_counter()
            _, _, terminated, truncated, step_info = await env.astep(reply.message)
            timings["env_s"] += time.perf_counter() - t0
            replies = [message_from_openai(m) for m in step_info["messages"]]
            turns.append(Turn(source="env", messages=tuple(replies)))
            messages = [*messages, reply.message, *replies]
            if terminated or truncated:
                timings["total_s"] = time.perf_counter() - start
                return Trajectory(
                    **base,
                    turns=tuple(turns),
                    verdict=step_info["verdict"],
                    truncated=truncated,
                    timings=timings,
                )
        raise GymhubError("episode did not end within 10000 turns")
    except Exception as exc:  # the rollout goes on; the failure is recorded, not dropped
        await _recover(env)
        timings["total_s"] = time.perf_counter() - start
        return Trajectory(
            **base,
            turns=tuple(turns),
            status="errored",
            error=f"{type(exc).__name__}: {exc}"[:2000],
            timings=timings,
        )


def _attach_env_tokens(turns: list[Turn], context: list[int] | None, reply: PolicyReply) -> list[int] | None:
    """Token in, token out: give the env turn before ``reply`` the ids the policy appended.

    A policy that reports its prompt ids and keeps its context (the hf policy) sends, at turn
    k+1, a prompt that starts with turn k's prompt and sampled ids; what follows them is the
    env's reply as tokens. A policy that re-renders its prompt breaks that, and then the
    trajectory simply has no token-level record (``context`` becomes None).
    """
    prompt = reply.prompt_token_ids
    if context is None or prompt is None or not reply.token_ids:
        return None
    if prompt[: len(context)] != tuple(context):
        return None
    delta = prompt[len(context) :]
    turns[-1] = turns[-1].model_copy(update={"token_ids": tuple(delta), "loss_mask": (0,) * len(delta)})
    return [*prompt, *reply.token_ids]


def _policy_turn(reply: PolicyReply) -> Turn:
    ids = reply.token_ids
    return Turn(
        source="policy",
        messages=(reply.message,),
        token_ids=ids,
        logprobs=reply.logprobs,
        prompt_token_ids=reply.prompt_token_ids,
        loss_mask=(1,) * len(ids),
        timings=reply.timings,
    )


async def _recover(env: Env) -> None:
    try:
        await env.aclose()
    except Exception:  # the env is reset on its next episode anyway
        pass


def rollout(env_id: str, policy: Policy | str, **kwargs: Any) -> list[TrajectoryGroup]:
    """Synchronous facade of :func:`arollout`: runs it to the end and returns every group."""

    async def collect() -> list[TrajectoryGroup]:
        return [group async for group in arollout(env_id, policy, **kwargs)]

    return asyncio.run(collect())
