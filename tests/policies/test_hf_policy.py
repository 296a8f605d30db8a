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


def test_draws_are_torch_multinomial_row_by_row_and_skip_cut_tokens() -> None:
    """One batched draw gives each row the token torch.multinomial gives it with the same
    generator (so seeded replies keep their tokens), follows the distribution, and never
    picks a token cut to probability 0."""
    from gymhub.policies.hf_policy import _draw, _seeded_generator

    ours = [_seeded_generator(seed, "cpu") for seed in (1, 2, 3)]
    theirs = [_seeded_generator(seed, "cpu") for seed in (1, 2, 3)]
    for _ in range(200):  # varied distributions over a large vocabulary
        logp = torch.log_softmax(torch.randn(3, 5000) * 4, -1)
        expected = [int(torch.multinomial(logp[r].exp(), 1, generator=g)) for r, g in enumerate(theirs)]
        assert _draw(logp, ours).tolist() == expected
    probs = torch.tensor([0.1, 0.0, 0.6, 0.3, 0.0])  # tokens 1 and 4 cut (top-k / top-p)
    counts = torch.zeros(5)
    for _ in range(2000):
        counts += torch.bincount(_draw(probs.log().expand(3, -1), ours), minlength=5)
    assert counts[1] == counts[4] == 0
    assert torch.allclose(counts / counts.sum(), probs, atol=0.02)


def test_a_reply_does_not_depend_on_its_batch_mates(tiny_model_path: Path) -> None:
    """Rows with one prompt share its prefill; each row still samples from its own seed, so a
    reply is the same alone, in a group of identical prompts, or beside other prompts."""
    policy = HFPolicy(str(tiny_model_path), max_new_tokens=8, temperature=1.0)
    first = policy.prompt_ids([Message(role="user", content="say c")], [])
    second = policy.prompt_ids([Message(role="user", content="please say the letter q")], [])
    alone = [policy.generate_batch([first], [seed])[0] for seed in (1, 2)] + [
        policy.generate_batch([second], [3], [5])[0]
    ]
    together = policy.generate_batch([first, first, second], [1, 2, 3], [8, 8, 5])
    for single, batched in zip(alone, together, strict=True):
        assert batched.token_ids == single.token_ids
        assert batched.logprobs == pytest.approx(single.logprobs, abs=1e-5)
    assert len(together[2].token_ids) <= 5  # its own limit
    assert together[0].token_ids != together[1].token_ids  # two seeds, two samples
