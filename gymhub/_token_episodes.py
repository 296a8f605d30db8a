"""The token-level record of a trajectory: what a trainer needs, exactly as sampled.

``prompt_ids`` are the ids of the first prompt; ``completion_ids`` are every later token of
the episode in order — the policy's sampled ids and, between them, the environment's
replies tokenised through the chat template — never re-tokenised from text. ``loss_mask``
is 1 on sampled tokens and 0 on environment / template tokens, and ``logprobs`` holds the
sampler's log-prob of each sampled token (0.0 where the mask is 0).
"""

from __future__ import annotations

from dataclasses import dataclass

from gymhub.errors import GymhubError
from gymhub.types import Trajectory


@dataclass(frozen=True)
class TokenEpisode:
    prompt_ids: list[int]
    completion_ids: list[int]
    loss_mask: list[int]
    logprobs: list[float]

    @property
    def policy_tokens(self) -> int:
        return sum(self.loss_mask)


def has_token_record(trajectory: Trajectory) -> bool:
    """True when every turn up to the last policy turn carries its token ids."""
    last = max((i for i, t in enumerate(trajectory.turns) if t.source == "policy"), default=-1)
    if last < 0:
        return False
    return all(t.token_ids for t in trajectory.turns[: last + 1])


def token_episode(trajectory: Trajectory) -> TokenEpisode:
    """The trajectory's token-level record; raises if the policy did not provide one.

    The env's final reply (after the last action) is not included: nothing was sampled
    after it, so it carries no learning signal.
    """
    if not has_token_record(trajectory):
        raise GymhubError(
            f"trajectory {trajectory.id} has no token-level record: its policy did not report "
            "token ids, or re-rendered its prompt between turns (use a token-in/token-out policy)"
        )
    turns = trajectory.turns
    last = max(i for i, t in enumerate(turns) if t.source == "policy")
    completion: list[int] = []
    mask: list[int] = []
    logprobs: list[float] = []
    for turn in turns[1 : last + 1]:
        completion.extend(turn.token_ids)
        sampled = turn.source == "policy"
        mask.extend([int(sampled)] * len(turn.token_ids))
        if sampled and turn.logprobs is not None:
            logprobs.extend(turn.logprobs)
        else:
            logprobs.extend([0.0] * len(turn.token_ids))
    return TokenEpisode(list(turns[0].token_ids), completion, mask, logprobs)
