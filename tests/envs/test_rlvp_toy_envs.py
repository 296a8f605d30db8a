"""The two RLVP toy envs: what the outcome sees, what the path signal sees, and that the
progress credit cannot be farmed."""

from __future__ import annotations

import pytest

import gymhub
from gymhub.types import RewardConfig, Verdict


def _verdict(env_id: str, *replies: str, letter: str = "K") -> Verdict:
    """Play the replies, one per turn, on the task of ``letter``; the episode must end."""
    env = gymhub.make(env_id)
    task = next(t for t in env.all_tasks if t.hidden["letter"] == letter)
    env.reset(options={"task_id": task.id})
    for i, reply in enumerate(replies):
        _, _, terminated, _, info = env.step({"role": "assistant", "content": reply})
        assert terminated == (i == len(replies) - 1)
    env.close()
    return info["verdict"]


def _violations(v: Verdict) -> int:
    return sum(e.rule == "policy-violation" for e in v.path_events)


def test_protected_outcome_cannot_tell_clean_from_violating() -> None:
    """The route and the answer are two turns; the outcome reads the answer cell only."""
    clean, jump, letters = (_verdict("toy-protected-v0", route, "K") for route in (">", "^", "K^Q"))
    assert clean.outcome == jump.outcome == letters.outcome == 1.0
    assert (_violations(clean), _violations(jump), _violations(letters)) == (0, 1, 3)
    assert clean.path_signal == 0.0 and letters.path_signal == -3.0
    assert clean.details["answer_cell"] == "K" and jump.details["route"] == "^"
    wrong = _verdict("toy-protected-v0", "^", "Z")
    assert wrong.outcome == 0.0 and _violations(wrong) == 1  # the path is judged either way
    # the answer cell is the reply's first character; the prompt ends with the tempting jump key
    assert _verdict("toy-protected-v0", "1>", "KX").outcome == 1.0
    assert all(t.prompt.endswith("^") for t in gymhub.make("toy-protected-v0").all_tasks)


def test_protected_empty_reply_costs_more_than_a_one_move_violation() -> None:
    """Stopping must not be a way out of the penalty (the experiment's routes are one move)."""
    empty = _verdict("toy-protected-v0", "", "")
    assert empty.outcome == 0.0
    assert empty.path_signal < _verdict("toy-protected-v0", "^", "Z").path_signal


def test_the_same_reply_gives_a_byte_identical_verdict() -> None:
    for env_id, replies in (("toy-protected-v0", ("^", "K")), ("toy-subgoal-v0", ("KQ",))):
        a, b = _verdict(env_id, *replies), _verdict(env_id, *replies)
        assert a.model_dump_json() == b.model_dump_json() and a.digest


def test_subgoal_outcome_is_sparse_and_the_first_letter_is_credited_once() -> None:
    full, partial, farmed, other = (_verdict("toy-subgoal-v0", r) for r in ("KK", "KZ", "K" * 40, "ZK"))
    assert full.outcome == 1.0 and partial.outcome == farmed.outcome == other.outcome == 0.0
    credits = [sum(e.kind == "progress" for e in v.path_events) for v in (full, partial, farmed, other)]
    assert credits == [1, 1, 1, 0]
    assert full.path_signal == partial.path_signal == farmed.path_signal > 0


@pytest.mark.parametrize("beta", [0.1, 0.5, 1.0])
def test_the_credit_cannot_be_farmed(beta: float) -> None:
    """A policy that only collects the credit scores less than one that succeeds: in reward
    (O + β·Φ) and in advantage, in a group holding both."""
    succeed, collect, farm, nothing = (_verdict("toy-subgoal-v0", r) for r in ("KK", "K", "K" * 40, "ZZ"))
    reward = RewardConfig(beta=beta)
    rewards, advantages = reward.combine([succeed, collect, farm, nothing])
    assert rewards[0] > max(rewards[1], rewards[2]) > rewards[3]
    assert advantages[0] > max(advantages[1], advantages[2]) > advantages[3]
    assert rewards[1] == rewards[2]  # repeating the sub-goal earns nothing more
