"""One episode, played by a policy (:func:`run_episode`) or replayed from recorded actions
(:func:`replay_actions`), and the protocols of what plays episodes for the rollout engine.

:func:`run_episode` is what every rollout backend runs (in this process or on a Ray actor);
:func:`replay_actions` is the one way gymhub re-scores actions it did not generate itself: a
stored trajectory (``gymhub verify``, the server's ``/verify``) or a trainer's completion
(:mod:`gymhub._scoring`). Same task, seed and actions: byte-identical verdict and digest.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from gymhub.env import Env, message_from_openai
from gymhub.errors import GymhubError
from gymhub.types import Task, Trajectory, Turn, Verdict, content_hash

if TYPE_CHECKING:
    from gymhub.policies.base import Policy, PolicyReply


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

    def close(self) -> None:
        """End what outlives a rollout: envs or workers kept for the next one."""


async def replay_actions(
    env: Env, task_id: str, actions: Sequence[Any], *, seed: int | None, end_with_last: bool = False
) -> Verdict | None:
    """Play ``actions`` in a fresh episode of ``task_id`` and return its verdict.

    The episode ends where the env ends it; later actions are not played. With
    ``end_with_last`` the last action is stepped with :meth:`~gymhub.env.Env.afinish`, so the
    episode ends there whatever it says (a completion that never submits). Without it, None
    comes back when the actions do not end the episode: a stored trajectory whose env now wants
    more turns has changed, and an audit must say so rather than end it. None too from an env
    that ends the episode without ``info["verdict"]`` (which ``check_env`` reports).
    """
    await env.areset(seed=seed, options={"task_id": task_id})
    for i, action in enumerate(actions):
        last = end_with_last and i == len(actions) - 1
        _, _, terminated, truncated, info = await (env.afinish(action) if last else env.astep(action))
        if terminated or truncated:
            verdict: Verdict | None = info.get("verdict")
            return verdict
    return None


async def run_episode(
    env: Env,
    policy: Policy,
    task: Task,
    sample_index: int,
    seed: int,
    run_id: str,
    *,
    max_replies: int | None = None,
) -> Trajectory:
    """Play one episode; failures become an errored trajectory with the reason. With
    ``max_replies``, the reply at that turn goes through ``env.afinish`` and ends the episode."""
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
        for turn_index in range(max_replies or 10_000):
            t0 = time.perf_counter()
            reply = await episode_policy.act(messages, tools, seed=seed + turn_index)
            timings["policy_s"] += time.perf_counter() - t0
            context = _attach_env_tokens(turns, context, reply)
            turns.append(_policy_turn(reply))
            t0 = time.perf_counter()
            last = turn_index + 1 == max_replies
            _, _, terminated, truncated, step_info = await (env.afinish if last else env.astep)(reply.message)
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
