"""``check_env``: the env contract as a function any env author can run.

It drives the env through its public sync API only (so it works on a remote env too), its
scripted episodes through the one replay path (:func:`gymhub._episodes.replay_actions`, run by
the env's ``run_sync``), and collects every broken promise into one
:class:`~gymhub.errors.EnvContractError`.

One promise is about the verifier rather than the API: no blind policy
(:mod:`gymhub.policies.blind`: empty reply, immediate finish, the most frequent answer, ...)
may average above :data:`~gymhub.policies.blind.BLIND_FLOOR` on either split. It is checked on
a seeded sample of tasks per split, on every env that lists its tasks (``env.all_tasks``; a
remote env is checked where it is served), except one whose spec declares its outcome
``format-only`` (it scores the reply's form, which a fixed reply can have).

Another is about the registry: what the env's spec declares (its ``family``, ``version``,
``verifier`` and whether it runs in a ``sandbox``) must be what the built env does, so
``registry.yaml`` cannot drift from the code (:func:`spec_problems`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from gymhub._episodes import replay_actions
from gymhub.errors import EnvContractError, EpisodeOver, GymhubError
from gymhub.policies.blind import BLIND_FLOOR, blind_floor
from gymhub.registry import EnvSpec, spec
from gymhub.types import Verdict

BAD_ACTIONS: dict[str, Any] = {
    "malformed tool call": {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"id": "call_bad", "type": "function", "function": {"name": "submit", "arguments": "{not json"}}
        ],
    },
    "unknown tool": {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "id": "call_unknown",
                "type": "function",
                "function": {"name": "no_such_tool_xyz", "arguments": "{}"},
            }
        ],
    },
    "non-UTF-8 bytes": b"\xff\xfe\xfa not utf-8 \xc3\x28",
    "10 MB string": "x" * (10 * 1024 * 1024),
}


def _hidden_strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        if len(value) >= 12:
            yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _hidden_strings(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _hidden_strings(v)


def _scripted_actions(task: Any) -> list[Any]:
    solutions = task.hidden.get("solutions") or {}
    return list(solutions.get("reference") or ["done"])


def _replay(env: Any, task_id: str, actions: list[Any]) -> Verdict | None:
    """The scripted episode, through the one replay path, on the env's own event loop."""
    return env.run_sync(replay_actions(env, task_id, actions * 50, seed=None))


def _spec_of(env: Any) -> EnvSpec | None:
    """The spec the env was made from (``make`` sets ``spec_info``), else the one of its id."""
    try:
        return getattr(env, "spec_info", None) or spec(str(getattr(env, "env_id", "")))
    except GymhubError:
        return None


def spec_problems(env: Any) -> list[str]:
    """Every ``family``, ``version``, ``verifier`` or ``sandbox`` the env's spec sets that the
    built env does not have (its class attributes, ``env.verifier.id``, ``env.sandbox_backend``
    or ``none``), as contract problems. A remote env is checked where it is served."""
    found = _spec_of(env)
    if found is None or not hasattr(env, "verifier"):
        return []
    backend = getattr(env, "sandbox_backend", None) or "none"
    if backend != "none" and found.sandbox != "none":
        backend = found.sandbox  # another backend chosen at make time (--sandbox) is no drift
    actual = {"family": env.family, "version": env.version, "verifier": env.verifier.id, "sandbox": backend}
    return [
        f"the spec declares {field} {getattr(found, field)!r}, but the env has {value!r}"
        for field, value in actual.items()
        if field in found.model_fields_set and getattr(found, field) != value
    ]


def blind_floor_problems(env: Any, *, tasks_per_split: int = 20) -> list[str]:
    """Every blind policy that averages above the floor on a split, as contract problems."""
    report = blind_floor(env, tasks_per_split=tasks_per_split)
    return [
        f"the blind policy {s.policy} averages outcome {s.mean_outcome:.3f} on {s.tasks} {s.split} "
        f"tasks (the floor is {BLIND_FLOOR}): the outcome does not depend on doing the task"
        for s in report.above(BLIND_FLOOR)
    ]


def check_env(
    env: Any,
    *,
    seed: int = 1234,
    check_bad_actions: bool = True,
    check_blind_floor: bool = True,
    blind_tasks_per_split: int = 20,
) -> None:
    """Check ``env`` against the contract of :class:`gymhub.Env`; return if it holds.

    Args:
        env: an env, driven through its public sync API only (``reset``, ``step``,
            ``run_sync``, ``observation_space``; ``get_task`` and ``all_tasks`` where it has
            them), so a :class:`gymhub.client.RemoteEnv` can be checked too.
        seed: the seed of the reset-determinism checks and of the blind-floor task sample.
        check_bad_actions: answer a malformed tool call, an unknown tool, non-UTF-8 bytes and
            a 10 MB string with an error observation, never an exception.
        check_blind_floor: no blind policy may average above the floor on either split
            (``False`` for a quick API-only check); an env whose spec says
            ``outcome: format-only`` or ``shaped`` is exempt.
        blind_tasks_per_split: how many tasks per split the blind policies play.

    Raises:
        EnvContractError: listing every way ``env`` breaks the contract, not only the first.
    """
    problems: list[str] = []
    obs1, info1 = env.reset(seed=seed)
    obs2, info2 = env.reset(seed=seed)
    if (obs1, info1.get("task_id")) != (obs2, info2.get("task_id")):
        problems.append("reset with the same seed gave different tasks or observations")
    if json.dumps(info1, sort_keys=True, default=str) != json.dumps(info2, sort_keys=True, default=str):
        problems.append("reset with the same seed gave different info")
    task_id = info1.get("task_id")
    if not isinstance(task_id, str):
        raise EnvContractError("reset() info must carry the task id as info['task_id']")
    obs3, _ = env.reset(options={"task_id": task_id})
    if obs3 != obs1:
        problems.append("reset with the same task id gave a different observation")
    if not env.observation_space.contains(obs1):
        problems.append(f"the observation is not in observation_space ({env.observation_space})")
    for key in ("tools", "messages"):
        if key not in info1:
            problems.append(f"reset() info lacks {key!r}")

    task = env.get_task(task_id) if hasattr(env, "get_task") else None
    if task is not None:
        shown = obs1 + json.dumps(info1, default=str)
        public = {t["function"]["name"] for t in info1.get("tools", [])}  # tool names are public
        leaked = [s[:40] for s in _hidden_strings(task.hidden) if s in shown and s not in public]
        if leaked:
            problems.append(f"hidden task material is in the observation/info: {leaked[:3]}")
        states = []
        for _ in range(2):
            env.reset(options={"task_id": task_id})
            states.append(env.initial_state_fingerprint())
        if states[0] != states[1]:
            problems.append("reset to the same task gave a different initial state")

    if check_bad_actions:
        for name, action in BAD_ACTIONS.items():
            env.reset(options={"task_id": task_id})
            try:
                obs, _, terminated, truncated, info = env.step(action)
            except Exception as exc:  # raising is the failure being checked
                problems.append(f"a bad action ({name}) raised {type(exc).__name__}: {exc}")
                continue
            if not isinstance(obs, str) or "error" not in obs.lower():
                problems.append(f"a bad action ({name}) got no error observation: {obs!r:.80}")
            if (terminated or truncated) and not isinstance(info.get("verdict"), Verdict):
                problems.append(f"episode ended on a bad action ({name}) without a verdict")

    actions = _scripted_actions(task) if task is not None else ["done"]
    verdict = _replay(env, task_id, actions)
    if not isinstance(verdict, Verdict):
        problems.append("termination did not carry info['verdict'] as a Verdict")
    else:
        if not 0.0 <= verdict.outcome <= 1.0:
            problems.append(f"verdict outcome {verdict.outcome} is outside [0, 1]")
        if not verdict.digest:
            problems.append("the verdict has no digest")
        try:
            env.step(actions[0])
            problems.append("step() after the end did not raise EpisodeOver")
        except EpisodeOver:
            pass
        again = _replay(env, task_id, actions)
        if again is None or again.model_dump_json() != verdict.model_dump_json():
            problems.append("the same task and actions gave a different verdict or digest")
    problems += spec_problems(env)
    found = _spec_of(env)
    if check_blind_floor and hasattr(env, "all_tasks") and (found is None or found.outcome == "task"):
        problems += blind_floor_problems(env, tasks_per_split=blind_tasks_per_split)
    if problems:
        raise EnvContractError(
            f"{getattr(env, 'env_id', env)} breaks the env contract:\n- " + "\n- ".join(problems)
        )
