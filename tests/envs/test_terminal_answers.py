"""terminal-v0 answers are spread: no constant answer fits more than 3% of any kind of task."""

from __future__ import annotations

import random
from collections import Counter, defaultdict

import pytest

import gymhub
from gymhub._tool_calls import scripted_tool_calls
from gymhub.env import message_from_openai
from gymhub.envs.terminal.tasks import GENERATORS, build_terminal_tasks, difficulty_of
from gymhub.policies.base import PolicyReply
from gymhub.types import Message

MAX_SHARE = 0.03


def _top_share(answers: list[str]) -> float:
    return Counter(answers).most_common(1)[0][1] / len(answers)


def _gold_goals(task: gymhub.Task) -> str:
    """The expected end state of a task's goals, as one string (its paths, modes, bytes)."""
    goals = [c for c in task.hidden["checks"] if not c.get("invariant")]
    return repr(sorted(repr(sorted(c.items())) for c in goals))


def test_no_gold_answer_fits_more_than_three_percent_of_a_kind() -> None:
    by_kind: dict[str, list[gymhub.Task]] = defaultdict(list)
    for task in gymhub.make("terminal-v0").all_tasks:
        by_kind[task.metadata["kind"]].append(task)
    assert set(by_kind) == set(GENERATORS)
    for kind, tasks in by_kind.items():
        assert _top_share([t.hidden["answer"] for t in tasks]) <= MAX_SHARE, kind
        assert _top_share([_gold_goals(t) for t in tasks]) <= MAX_SHARE, kind
        scripts = [repr(t.hidden["solutions"]["reference"]) for t in tasks]
        assert _top_share(scripts) <= MAX_SHARE, kind  # replaying one task's solution fits one task


@pytest.mark.parametrize("kind", sorted(GENERATORS))
def test_the_generators_spread_answers_before_any_deduplication(kind: str) -> None:
    """Drawn freely (no task-set filter), the most frequent answer is still rare."""
    answers = [GENERATORS[kind](random.Random(f"spread:{i}"), difficulty_of(i)).answer for i in range(600)]
    assert _top_share(answers) <= MAX_SHARE, Counter(answers).most_common(3)


def test_other_seeds_keep_the_spread() -> None:
    for seed in (1, 2):
        by_kind: dict[str, list[str]] = defaultdict(list)
        for task in build_terminal_tasks("terminal-v0", seed=seed):
            by_kind[task.metadata["kind"]].append(task.hidden["answer"])
        assert all(len(a) == 45 and _top_share(a) <= MAX_SHARE for a in by_kind.values())


@pytest.mark.parametrize("kind,output", [("count-errors", "output/count.txt")])
def test_writing_the_most_frequent_answer_scores_at_most_three_percent(kind: str, output: str) -> None:
    tasks = [t for t in gymhub.make("terminal-v0").all_tasks if t.metadata["kind"] == kind]
    answers = Counter(
        next(c["content"] for c in t.hidden["checks"] if c.get("path") == output) for t in tasks
    )
    guess = answers.most_common(1)[0][0].strip()

    script = scripted_tool_calls(
        [("bash", {"command": f"mkdir -p output && echo {guess} > {output}"}), ("submit", {})]
    )

    class ConstantGuess:
        """Blind: the same two calls whatever the task says."""

        id = "constant-guess"

        def for_episode(self, task: gymhub.Task) -> ConstantGuess:
            return self

        async def act(self, messages: list[Message], tools: list, *, seed: int | None = None) -> PolicyReply:
            turn = sum(1 for m in messages if m.role == "assistant")
            return PolicyReply(message_from_openai(script[turn]))

        async def aclose(self) -> None:
            pass

    groups = gymhub.rollout("terminal-v0", ConstantGuess(), tasks=tasks, concurrency=2)
    assert [g.trajectories[0].error for g in groups if g.trajectories[0].error] == []
    outcomes = [g.trajectories[0].verdict.outcome for g in groups]
    assert len(outcomes) == len(tasks)
    assert 0 < sum(outcomes) / len(outcomes) <= MAX_SHARE  # right only where it is the answer
