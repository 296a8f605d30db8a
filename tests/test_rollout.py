from __future__ import annotations

import asyncio
from typing import ClassVar

import pytest

import gymhub
from gymhub import Message, PolicyError
from gymhub._rollout_engine import arollout, episode_seed
from gymhub.envs.toy.letters_env import LettersEnv, LettersVerifier
from gymhub.policies.base import PolicyReply
from gymhub.store import open_store
from gymhub.types import Task


class Flaky:
    """Fails on every other task: the rollout must keep going and record the failure."""

    id = "flaky"

    def for_episode(self, task: Task) -> Flaky:
        self.fail = int(task.id, 16) % 2 == 0
        return self

    async def act(
        self, messages: list[Message], tools: list[dict], *, seed: int | None = None
    ) -> PolicyReply:
        if self.fail:
            raise PolicyError("backend exploded")
        return PolicyReply(Message(role="assistant", content="a"))

    async def aclose(self) -> None:
        pass


def test_groups_have_g_trajectories_with_verdicts_and_advantages() -> None:
    groups = gymhub.rollout("toy-letters-v0", "reference:half", tasks=6, group_size=4, concurrency=2)
    assert len(groups) == 6
    for group in groups:
        assert [t.sample_index for t in group.trajectories] == [0, 1, 2, 3]
        assert all(t.verdict.outcome == 0.5 for t in group.trajectories)
        assert group.advantages == (0.0, 0.0, 0.0, 0.0)  # constant group: no signal
        assert len({t.seed for t in group.trajectories}) == 4


def test_policy_errors_become_errored_trajectories_not_gaps(tmp_path) -> None:
    store = open_store(str(tmp_path / "s.db"))
    env = gymhub.make("toy-letters-v0")
    tasks = env.tasks[:10]
    store.create_run(
        "r1", env_id="toy-letters-v0", policy="flaky", split="train", group_size=2, seed=0, tasks=tasks
    )
    groups = gymhub.rollout("toy-letters-v0", Flaky(), tasks=tasks, group_size=2, store=store, run_id="r1")
    stored = store.load_trajectories("r1")
    assert len(stored) == 20 == sum(len(g.trajectories) for g in groups)
    errored = [t for t in stored if t.status == "errored"]
    assert errored and all("backend exploded" in (t.error or "") for t in errored)
    assert all(t.verdict is None for t in errored)
    ok = [t for t in stored if t.status == "ok"]
    assert ok and all(t.verdict is not None for t in ok)


def test_stream_yields_groups_as_they_finish_and_closing_early_is_clean() -> None:
    async def first_two() -> list[str]:
        seen = []
        stream = arollout("toy-letters-v0", "reference", tasks=20, concurrency=2)
        async for group in stream:
            seen.append(group.task_id)
            if len(seen) == 2:
                break
        await stream.aclose()
        return seen

    assert len(asyncio.run(first_two())) == 2


def test_same_seed_gives_same_verdicts() -> None:
    a = gymhub.rollout("code-python-v0", "reference", tasks=5, group_size=2, seed=7)
    b = gymhub.rollout("code-python-v0", "reference", tasks=5, group_size=2, seed=7, concurrency=2)
    digests = lambda gs: sorted(t.verdict.digest for g in gs for t in g.trajectories)  # noqa: E731
    assert digests(a) == digests(b)
    assert episode_seed(7, "abc", 0) == episode_seed(7, "abc", 0) != episode_seed(8, "abc", 0)


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(gymhub.GymhubError):
        gymhub.rollout("toy-letters-v0", "reference", group_size=0)
    with pytest.raises(gymhub.GymhubError, match="tasks"):
        gymhub.rollout("toy-letters-v0", "reference", tasks=10_000)
    with pytest.raises(gymhub.GymhubError, match="unknown policy"):
        gymhub.rollout("toy-letters-v0", "gpt5:whatever")
    with pytest.raises(gymhub.GymhubError, match="unknown rollout backend 'vm': use one of local, ray"):
        gymhub.rollout("toy-letters-v0", "reference", backend="vm")


class _CrashingEnv(LettersEnv):
    async def on_action(self, message: Message) -> gymhub.EnvReply:
        if message.content.startswith("b"):
            raise RuntimeError("sandbox died")
        return await super().on_action(message)


class _CrashingVerifier(LettersVerifier):
    def check(self, task: Task, final_state: dict) -> tuple[float, dict]:
        raise ValueError("corrupt state")


class _BadVerifierEnv(LettersEnv):
    def make_verifier(self) -> _CrashingVerifier:
        return _CrashingVerifier(self.rules)


def test_an_env_crash_is_an_errored_trajectory_and_the_rollout_goes_on() -> None:
    gymhub.register("crashing-test-v0", "test_rollout:_CrashingEnv", replace=True)
    try:
        groups = gymhub.rollout("crashing-test-v0", "reference", tasks=8, concurrency=2)
    finally:
        gymhub.unregister("crashing-test-v0")
    trajectories = [t for g in groups for t in g.trajectories]
    assert len(trajectories) == 8
    errored = [t for t in trajectories if t.status == "errored"]
    assert [t.error for t in errored] == ["RuntimeError: sandbox died"] * len(errored)
    assert 0 < len(errored) < 8  # the tasks whose letter is "b" only


def test_a_verifier_crash_is_an_errored_verdict_with_no_credit() -> None:
    gymhub.register("badverifier-test-v0", "test_rollout:_BadVerifierEnv", replace=True)
    try:
        [group] = gymhub.rollout("badverifier-test-v0", "reference", tasks=1)
    finally:
        gymhub.unregister("badverifier-test-v0")
    verdict = group.trajectories[0].verdict
    assert group.trajectories[0].status == "ok"
    assert verdict.errored and verdict.error == "ValueError: corrupt state"
    assert verdict.outcome == 0.0 and verdict.path_signal == 0.0 and verdict.digest


class _HangingVerifier(LettersVerifier):
    def check(self, task: Task, final_state: dict) -> tuple[float, dict]:
        import time

        time.sleep(3)
        return 1.0, {}


class _HangingVerifierEnv(LettersEnv):
    verify_timeout_s = 0.3

    def make_verifier(self) -> _HangingVerifier:
        return _HangingVerifier(self.rules)


def test_a_hanging_verifier_times_out_into_an_errored_verdict() -> None:
    gymhub.register("hanging-test-v0", "test_rollout:_HangingVerifierEnv", replace=True)
    try:
        [group] = gymhub.rollout("hanging-test-v0", "reference", tasks=1)
    finally:
        gymhub.unregister("hanging-test-v0")
    verdict = group.trajectories[0].verdict
    assert verdict.error == "verifier timed out after 0.3 s" and verdict.outcome == 0.0


class _CountedEnv(LettersEnv):
    """The letters env, counting the instances built and closed; every episode crashes while
    ``crash`` is set."""

    crash = False
    built: ClassVar[list[_CountedEnv]] = []
    closed: ClassVar[list[_CountedEnv]] = []

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)
        _CountedEnv.built.append(self)

    async def on_action(self, message: Message) -> gymhub.EnvReply:
        if self.crash:
            raise RuntimeError("sandbox died")
        return await super().on_action(message)

    async def aclose(self) -> None:  # the engine closes an env it drops this way
        _CountedEnv.closed.append(self)
        await super().aclose()

    def close(self) -> None:
        _CountedEnv.closed.append(self)
        super().close()


def test_a_kept_local_backend_reuses_healthy_envs_across_rollouts_and_closes_them() -> None:
    """A trainer's backend (keep_workers=True) serves every step with the same env instances,
    with the verdicts fresh envs give; an env whose episode failed is closed, not kept; and
    close() ends the rest."""
    from gymhub._rollout_engine import rollout_backend

    def digests(groups: list[gymhub.TrajectoryGroup]) -> list[str | None]:
        return [t.verdict.digest if t.verdict else t.error for g in groups for t in g.trajectories]

    gymhub.register("counted-test-v0", "test_rollout:_CountedEnv", replace=True)
    _CountedEnv.built.clear()
    _CountedEnv.closed.clear()
    backend = rollout_backend("local", keep_workers=True)
    play = dict(tasks=8, concurrency=2, seed=3)
    try:
        runs = [gymhub.rollout("counted-test-v0", "reference", backend=backend, **play) for _ in range(3)]
        # two envs served all three rollouts; the rest are each rollout's probe (task list), closed
        serving = [e for e in _CountedEnv.built if e not in _CountedEnv.closed]
        assert len(serving) == 2 and len(_CountedEnv.built) == 2 + 3
        fresh = gymhub.rollout("counted-test-v0", "reference", **play)
        assert digests(runs[0]) == digests(runs[1]) == digests(runs[2]) == digests(fresh)
        _CountedEnv.crash = True
        gymhub.rollout("counted-test-v0", "reference", backend=backend, **play)
    finally:
        _CountedEnv.crash = False
        gymhub.unregister("counted-test-v0")
    # an env whose last episode crashed is closed (one that ran no episode this time may stay)
    assert any(e in _CountedEnv.closed for e in serving)
    [kept] = backend._kept.values()  # the rest are kept, none leaked
    assert {id(e) for e in serving if e not in _CountedEnv.closed} == {id(e) for e in kept}
    backend.close()
    assert all(e in _CountedEnv.closed for e in _CountedEnv.built)
