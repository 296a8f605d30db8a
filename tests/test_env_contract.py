"""The env contract, checked on every registered env, and its sharp edges one by one."""

from __future__ import annotations

import json

import gymnasium
import pytest

import gymhub
from gymhub import EpisodeOver, Message, Verdict
from gymhub.errors import EnvContractError
from gymhub.policies.base import PolicyReply
from gymhub.types import Task

ALL_ENVS = [s.id for s in gymhub.list_envs()]


@pytest.mark.parametrize("env_id", ALL_ENVS)
def test_check_env_passes_on_every_registered_env(env_id: str) -> None:
    env = gymhub.make(env_id)
    gymhub.check_env(env)
    env.close()


@pytest.mark.parametrize("env_id", ALL_ENVS)
def test_gymnasium_make_works(env_id: str) -> None:
    env = gymnasium.make(f"gymhub/{env_id}")
    obs, info = env.reset(seed=0)
    assert isinstance(obs, str) and obs
    assert info["task_id"]
    env.close()


def test_check_env_catches_a_nondeterministic_env() -> None:
    from gymhub.envs.toy.letters_env import LettersEnv

    class Flaky(LettersEnv):
        calls = 0

        async def final_state(self) -> dict:
            Flaky.calls += 1
            return {"reply": self._reply, "noise": Flaky.calls}

    gymhub.register("flaky-test-v0", "test_env_contract:Flaky", replace=True)
    try:
        with pytest.raises(EnvContractError, match="different"):
            gymhub.check_env(Flaky(env_id="flaky-test-v0"))
    finally:
        gymhub.unregister("flaky-test-v0")


def _gullible_env(env_id: str) -> gymhub.Env:
    """toy-letters with a verifier that passes any non-empty reply: a blind policy beats it."""
    from gymhub.envs.toy.letters_env import LettersEnv, LettersVerifier

    class GullibleVerifier(LettersVerifier):
        def check(self, task: Task, final_state: dict) -> tuple[float, dict]:
            return float(bool(final_state.get("reply"))), {}

    class Gullible(LettersEnv):
        def make_verifier(self) -> GullibleVerifier:
            return GullibleVerifier(self.rules)

    return Gullible(env_id=env_id)


def test_check_env_fails_an_env_a_blind_policy_beats() -> None:
    with pytest.raises(
        EnvContractError, match=r"blind policy blind:echo averages outcome 1\.000 on \d+ eval"
    ):
        gymhub.check_env(_gullible_env("gullible-test-v0"))
    gymhub.check_env(_gullible_env("gullible-test-v0"), check_blind_floor=False)  # all else holds


def test_an_env_whose_spec_says_format_only_is_exempt_from_the_floor() -> None:
    gymhub.register("gullible-format-v0", "test_env_contract:unused", outcome="format-only", replace=True)
    try:
        gymhub.check_env(_gullible_env("gullible-format-v0"))
    finally:
        gymhub.unregister("gullible-format-v0")
    with pytest.raises(ValueError, match="outcome"):
        gymhub.register("bad-outcome-v0", "x:y", outcome="vibes")


def test_bad_actions_get_error_observations_and_a_penalty() -> None:
    env = gymhub.make("code-python-v0")
    obs, info = env.reset(seed=5)
    task = env.get_task(info["task_id"])
    for bad in (
        b"\xff\xfe",
        "y" * 10_000_001,
        {"role": "assistant", "tool_calls": [{"id": "c1", "function": {"name": "rm_rf", "arguments": "{}"}}]},
        42,
    ):
        obs, _, terminated, _, _ = env.step(bad)
        assert obs.startswith("error") and not terminated
        env.reset(options={"task_id": task.id})
    env.step(
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": "c1", "function": {"name": "submit", "arguments": "{oops"}}],
        }
    )
    _, _, terminated, _, info = env.step(task.hidden["solutions"]["reference"][0])
    verdict: Verdict = info["verdict"]
    assert terminated and verdict.outcome == 1.0
    assert [e.rule for e in verdict.path_events if e.kind == "penalty"] == ["invalid-action"]
    assert verdict.details["bad_action_steps"] == [1]


def test_max_turns_truncates_with_a_verdict() -> None:
    env = gymhub.make("code-python-v0", max_turns=2)
    env.reset(seed=1)
    bad = {"role": "assistant", "tool_calls": [{"id": "c", "function": {"name": "nope"}}]}
    assert env.step(bad)[3] is False
    _, _, terminated, truncated, info = env.step(bad)
    assert truncated and not terminated
    assert info["verdict"].outcome == 0.0
    with pytest.raises(EpisodeOver):
        env.step("more")


def test_step_before_reset_raises_clearly() -> None:
    env = gymhub.make("toy-letters-v0")
    with pytest.raises(EpisodeOver, match="reset"):
        env.step("a")


def test_hidden_never_reaches_a_model_policy() -> None:
    seen: list[str] = []

    class Recorder:
        id = "recorder"

        def for_episode(self, task: Task) -> Recorder:
            return self

        async def act(
            self, messages: list[Message], tools: list[dict], *, seed: int | None = None
        ) -> PolicyReply:
            seen.append(json.dumps([m.model_dump() for m in messages]) + json.dumps(tools))
            return PolicyReply(Message(role="assistant", content="def f():\n    return 1\n"))

        async def aclose(self) -> None:
            pass

    groups = gymhub.rollout("code-python-v0", Recorder(), tasks=10)
    env = gymhub.make("code-python-v0")
    for group in groups:
        task = env.get_task(group.task_id)
        hidden_args = [json.dumps(t["args"]) for t in task.hidden["tests"]]
        for leak in (
            json.dumps(task.hidden["tests"]),
            " ".join(hidden_args),
            task.hidden["solutions"]["reference"][0]["content"],
        ):
            assert all(leak not in s for s in seen)
    assert len(seen) == 10


def test_each_env_gets_its_own_space_and_random_generator() -> None:
    """Spaces are copies of one built per length: seeding one env's space leaves the others
    alone, and a seeded space samples what a freshly built TextSpace samples."""
    from gymhub.env import TextSpace

    first, second = gymhub.make("toy-letters-v0"), gymhub.make("toy-letters-v0")
    assert first.action_space is not second.action_space
    first.action_space.seed(7)
    fresh = TextSpace(first.action_space.max_length)
    fresh.seed(7)
    assert first.action_space.sample() == fresh.sample()
    second.action_space.seed(8)
    assert first.action_space.sample() == fresh.sample()  # the other env's seed changed nothing
    first.close()
    second.close()
