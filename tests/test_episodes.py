"""gymhub._episodes.replay_actions: the one replay path behind ``gymhub verify``, the server's
``/verify`` and the trainer adapters' scorer."""

from __future__ import annotations

import asyncio

import gymhub
from gymhub._episodes import replay_actions
from gymhub._reverify import replay
from gymhub._scoring import CompletionScorer

ENV = "toy-protected-v0"  # two turns: the route, then the answer


def test_a_stored_trajectory_and_the_same_completion_replay_to_one_verdict() -> None:
    [group] = gymhub.rollout(ENV, "reference", tasks=1, seed=5)
    stored = group.trajectories[0]
    assert stored.status == "ok" and stored.verdict is not None
    env = gymhub.make(ENV)
    scorer = CompletionScorer(ENV)
    try:
        audited = asyncio.run(replay(env, stored))
        scored = scorer.score(stored.task_id, stored.actions())
    finally:
        env.close()
        scorer.close()
    assert audited is not None
    assert audited.model_dump_json() == scored.model_dump_json() == stored.verdict.model_dump_json()


def test_only_end_with_last_ends_an_unfinished_episode() -> None:
    env = gymhub.make(ENV)
    task = env.tasks[0]
    route, answer = task.hidden["solutions"]["reference"]

    async def play(actions: list, end_with_last: bool = False) -> gymhub.Verdict | None:
        return await replay_actions(env, task.id, actions, seed=0, end_with_last=end_with_last)

    try:
        assert asyncio.run(play([route])) is None  # an audit does not end what the env did not
        cut_short = asyncio.run(play([route], end_with_last=True))
        full = asyncio.run(play([route, answer]))
        with_extra = asyncio.run(play([route, answer, "played after the end?"]))
    finally:
        env.close()
    assert cut_short is not None and cut_short.outcome == 0.0  # no answer was given
    assert full is not None and full.outcome == 1.0
    assert with_extra == full  # the episode ended at the answer: later actions are not played
