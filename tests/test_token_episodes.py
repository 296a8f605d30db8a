"""Token in, token out: the token-level record of a multi-turn episode is exactly what was
sampled, with the env's replies tokenised through the chat template between the replies."""

from __future__ import annotations

from pathlib import Path

import pytest

import gymhub
from gymhub._token_episodes import token_episode
from gymhub.errors import GymhubError
from gymhub.policies.hf_policy import HFPolicy

torch = pytest.importorskip("torch")


def _multiturn_trajectories(tiny_model_path: Path) -> tuple[HFPolicy, list[gymhub.Trajectory]]:
    policy = HFPolicy(str(tiny_model_path), max_new_tokens=6)
    groups = gymhub.rollout(
        "search-v0", policy, tasks=2, group_size=2, env_kwargs={"max_turns": 3}, concurrency=2
    )
    return policy, [t for g in groups for t in g.trajectories]


def test_ids_decode_to_the_trajectory_text_and_the_mask_marks_env_tokens(tiny_model_path: Path) -> None:
    policy, trajectories = _multiturn_trajectories(tiny_model_path)
    tok = policy.tokenizer
    for t in trajectories:
        assert t.status == "ok", t.error
        record = token_episode(t)
        policy_turns = [turn for turn in t.turns if turn.source == "policy"]
        assert len(policy_turns) == 3  # three turns: the record spans env replies between them
        # The record is the turns' ids in order; mask 1 exactly on the sampled ids.
        position = 0
        for turn in t.turns[1:-1]:
            n = len(turn.token_ids)
            assert n > 0
            assert record.completion_ids[position : position + n] == list(turn.token_ids)
            expected = 1 if turn.source == "policy" else 0
            assert record.loss_mask[position : position + n] == [expected] * n
            if turn.source == "policy":
                assert record.logprobs[position : position + n] == list(turn.logprobs)
            position += n
        assert position == len(record.completion_ids)
        # Each policy turn's sampler context is exactly prompt + record so far: nothing was
        # re-rendered from text.
        ids = record.prompt_ids + record.completion_ids
        for turn in policy_turns:
            assert list(turn.prompt_token_ids) == ids[: len(turn.prompt_token_ids)]
        # Decoding gives back the trajectory's text: the chat template's rendering of the
        # messages, with each reply as sampled.
        messages = [m.to_openai() for turn in t.turns[:-1] for m in turn.messages]
        for m, turn in zip([m for m in messages if m["role"] == "assistant"], policy_turns, strict=True):
            m["content"] = tok.decode(list(turn.token_ids), skip_special_tokens=False)
            m["content"] = m["content"].removesuffix(tok.eos_token)
        rendered = tok.apply_chat_template(messages, tokenize=False)
        decoded = tok.decode(ids, skip_special_tokens=False)
        # The record ends with the last sampled token; the template would close that turn.
        assert rendered.startswith(decoded) and rendered[len(decoded) :] in ("<|im_end|>\n", "\n")


def test_a_policy_without_token_ids_has_no_record() -> None:
    [group] = gymhub.rollout("toy-letters-v0", "reference", tasks=1)
    with pytest.raises(GymhubError, match="no token-level record"):
        token_episode(group.trajectories[0])


def test_single_turn_record_is_prompt_plus_sampled_ids(tiny_model_path: Path) -> None:
    policy = HFPolicy(str(tiny_model_path), max_new_tokens=5)
    [group] = gymhub.rollout("toy-letters-v0", policy, tasks=1)
    t = group.trajectories[0]
    record = token_episode(t)
    assert record.prompt_ids == list(t.turns[1].prompt_token_ids)
    assert record.completion_ids == list(t.turns[1].token_ids)
    assert record.loss_mask == [1] * len(record.completion_ids)
