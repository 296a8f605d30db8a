"""The hf policy on a tiny offline model: real forward passes, recorded log-probs."""

from __future__ import annotations

from pathlib import Path

import pytest

import gymhub
from gymhub.policies.hf_policy import HFPolicy
from gymhub.types import Message

torch = pytest.importorskip("torch")


def test_reply_records_ids_and_the_sampling_logprobs(tiny_model_path: Path) -> None:
    import asyncio

    policy = HFPolicy(str(tiny_model_path), max_new_tokens=12, temperature=0.9)
    messages = [Message(role="user", content="say c")]
    reply = asyncio.run(policy.act(messages, [], seed=3))
    model, tok = policy._load()
    assert reply.token_ids and len(reply.logprobs) == len(reply.token_ids)
    assert tok.decode(list(reply.token_ids), skip_special_tokens=True) == reply.message.content
    # Recompute the log-probs with a forward pass: they match what was recorded.
    ids = torch.tensor([list(reply.prompt_token_ids) + list(reply.token_ids)])
    with torch.no_grad():
        logits = model(ids).logits[0, len(reply.prompt_token_ids) - 1 : -1] / 0.9
    recomputed = torch.log_softmax(logits.float(), -1).gather(1, torch.tensor(reply.token_ids)[:, None])[:, 0]
    assert recomputed.tolist() == pytest.approx(list(reply.logprobs), abs=1e-4)
    again = asyncio.run(policy.act(messages, [], seed=3))
    assert again.token_ids == reply.token_ids  # seeded: reproducible


def test_rollout_with_hf_policy_stores_token_level_turns(tiny_model_path: Path, tmp_path: Path) -> None:
    from gymhub.store import open_store

    store = open_store(str(tmp_path / "hf.db"))
    env = gymhub.make("toy-letters-v0")
    store.create_run(
        "hf", env_id="toy-letters-v0", policy="hf", split="train", group_size=2, seed=0, tasks=env.tasks[:2]
    )
    policy = HFPolicy(str(tiny_model_path), max_new_tokens=8)
    groups = gymhub.rollout(
        "toy-letters-v0", policy, tasks=env.tasks[:2], group_size=2, store=store, run_id="hf"
    )
    stored = {t.id: t for t in store.load_trajectories("hf")}
    for group in groups:
        for t in group.trajectories:
            assert t.status == "ok" and 0.0 <= t.verdict.outcome <= 1.0
            turn = t.turns[1]
            assert turn.source == "policy" and set(turn.loss_mask) == {1}
            assert len(turn.logprobs) == len(turn.token_ids) > 0
            assert stored[t.id] == t  # exact round trip, floats included


def test_missing_model_is_a_clear_policy_error(tmp_path: Path) -> None:
    [group] = gymhub.rollout("toy-letters-v0", f"hf:{tmp_path / 'nope'}", tasks=1)
    assert "cannot load a transformers model" in group.trajectories[0].error
