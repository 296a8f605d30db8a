from __future__ import annotations

import asyncio

import pytest

import gymhub
from gymhub import Message, PolicyError
from gymhub.policies.base import PolicyReply
from gymhub.rollout_engine import arollout, episode_seed
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
