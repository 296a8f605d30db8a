"""gymhub groups as ART (openpipe-art) trajectory groups, validated by ART's own types."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

import gymhub

if importlib.util.find_spec("art") is None:  # found, not imported: import_art imports it safely
    pytest.skip("openpipe-art is not installed", allow_module_level=True)

from openai.types.chat.chat_completion import Choice

from gymhub.policies.hf_policy import HFPolicy
from gymhub.trainers.art import import_art, to_art_group

art = import_art()


def test_tool_use_group_keeps_messages_rewards_and_rule_metrics() -> None:
    [group] = gymhub.rollout("mcp-tools-v0", "reference:delete-the-customer", tasks=1, group_size=2)
    beta = gymhub.make("mcp-tools-v0").reward_config.beta
    converted = to_art_group(group, reward="combined")
    assert isinstance(converted, art.TrajectoryGroup) and len(converted.trajectories) == 2
    for ours, theirs in zip(group.trajectories, converted.trajectories, strict=True):
        v = ours.verdict
        assert theirs.reward == pytest.approx(v.outcome + beta * v.path_signal) == theirs.metrics["reward"]
        assert theirs.metrics["outcome"] == v.outcome and theirs.metrics["path_signal"] == v.path_signal
        for event in v.path_events:
            assert f"rule/{event.rule}" in theirs.metrics
        assert theirs.metadata["digest"] == v.digest and theirs.metadata["task_id"] == ours.task_id
        # ART's own view of the chat is ours, turn for turn; assistant turns are trainable Choices.
        expected = [m.to_openai() for t in ours.turns for m in t.messages]
        assert len(art.trajectories.get_messages(theirs.messages_and_choices)) == len(expected)
        choices = [c for c in theirs.messages_and_choices if isinstance(c, Choice)]
        assert len(choices) == len(ours.actions())
        for choice, action in zip(choices, ours.actions(), strict=True):
            assert [tc.function.name for tc in choice.message.tool_calls or []] == [
                c.name for c in action.tool_calls
            ]
    outcome_only = to_art_group(group, reward="outcome")
    assert [t.reward for t in outcome_only.trajectories] == [t.verdict.outcome for t in group.trajectories]


def test_arts_own_advantages_are_gymhubs_with_scale_rewards_off(tmp_path: Path) -> None:
    from art.preprocessing.tokenize import tokenize_trajectory_groups
    from tiny_model import CHAT_TEMPLATE, build_tool_calling_model

    # A model that answers "Say a" with one of three replies, each scored differently.
    path = build_tool_calling_model(tmp_path / "letters", ["aaaa", "aazz", "zz"], template=CHAT_TEMPLATE)
    policy = HFPolicy(str(path), max_new_tokens=3)
    [group] = gymhub.rollout("toy-letters-v0", policy, tasks=1, group_size=6, seed=1)
    assert len({t.verdict.outcome for t in group.trajectories}) > 1
    converted = to_art_group(group, tokenizer=policy.tokenizer)  # reward = gymhub's advantage
    assert [t.reward for t in converted.trajectories] == list(group.advantages)
    # ART's preprocessing (what its backends train on) with scale_rewards=False, as documented.
    results = tokenize_trajectory_groups(
        policy.tokenizer,
        [converted],
        allow_training_without_logprobs=True,
        scale_rewards=False,
        shuffle_group_trajectories=False,
        drop_zero_advantage_trajectories=False,
    )
    by_trajectory = {id(r.trajectory): r.advantage for r in results}
    art_advantages = [by_trajectory[id(t)] for t in converted.trajectories]
    assert art_advantages == pytest.approx(list(group.advantages), abs=1e-9)
    _, expected = gymhub.make("toy-letters-v0").reward_config.combine([t.verdict for t in group.trajectories])
    assert art_advantages == pytest.approx(expected, abs=1e-9)


def test_sampler_logprobs_ride_on_the_choices(tiny_model_path: Path) -> None:
    policy = HFPolicy(str(tiny_model_path), max_new_tokens=5)
    [group] = gymhub.rollout("toy-letters-v0", policy, tasks=1, group_size=2)
    converted = to_art_group(group, tokenizer=policy.tokenizer)
    for ours, theirs in zip(group.trajectories, converted.trajectories, strict=True):
        [choice] = [c for c in theirs.messages_and_choices if isinstance(c, Choice)]
        turn = ours.turns[1]
        assert [c.logprob for c in choice.logprobs.content] == list(turn.logprobs)
        assert [int(c.token.split(":")[1]) for c in choice.logprobs.content] == list(turn.token_ids)
        assert theirs.tools is None  # toy-letters has no tools


def test_importing_art_leaves_transformers_generation_working(tiny_model_path: Path) -> None:
    import asyncio

    import_art()
    policy = HFPolicy(str(tiny_model_path), max_new_tokens=3)
    reply = asyncio.run(policy.act([gymhub.Message(role="user", content="say a")], [], seed=1))
    assert len(reply.token_ids) > 0
