"""GRPO with rollouts on an external vLLM server (OpenAI-compatible, CPU build): after each
step the trainer's LoRA adapter is loaded into the server, which then samples from it; the
log-probs it records are those of the distribution it drew from, at any temperature."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import torch
from processes import free_port

import gymhub
from gymhub._token_episodes import token_episode
from gymhub.trainers.grpo import GRPOConfig, GRPOTrainer, token_logprobs


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    from tiny_model import build_tiny_model

    model = build_tiny_model(
        tmp_path_factory.mktemp("served") / "m", hidden=128, layers=2, heads=2, chars=True
    )
    port = free_port()
    env = {**os.environ, "VLLM_ALLOW_RUNTIME_LORA_UPDATING": "True", "VLLM_CPU_KVCACHE_SPACE": "1"}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "vllm.entrypoints.openai.api_server",
            "--model",
            str(model),
            "--port",
            str(port),
            "--dtype",
            "float32",
            "--enforce-eager",
            "--max-model-len",
            "256",
            "--enable-lora",
            "--max-lora-rank",
            "8",
            "--max-loras",
            "2",
            "--seed",
            "0",
            "--logprobs-mode",  # the log-probs of the distribution sampled from (see generators.py)
            "processed_logprobs",
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                break
        except httpx.HTTPError:
            time.sleep(1)
    assert proc.poll() is None, "the vLLM server did not start"
    yield url, model
    proc.terminate()
    proc.wait(30)


def _served_logprobs(url: str, name: str, ids: list[int]) -> list[float]:
    body = {"model": name, "prompt": ids, "max_tokens": 1, "prompt_logprobs": 0, "temperature": 1.0}
    choice = httpx.post(f"{url}/v1/completions", json=body, timeout=120).json()["choices"][0]
    steps = choice["prompt_logprobs"][1:]  # one {token id: {"logprob", ...}} per prompt token after the first
    return [float(step[str(t)]["logprob"]) for step, t in zip(steps, ids[1:], strict=True)]


def _openai_config(url: str, model: Path, tmp_path: Path, **options: Any) -> GRPOConfig:
    """The trainer on toy-letters-v0 with the openai backend against the test's vLLM server."""
    return GRPOConfig(
        env="toy-letters-v0",
        model=str(model),
        backend="openai",
        openai_url=url,
        openai_model=str(model),
        lora_rank=4,
        max_new_tokens=8,
        output_dir=str(tmp_path / "run"),
        console=False,
        **options,
    )


def test_lora_adapters_pushed_to_the_server_are_what_it_samples_from(
    server: tuple[str, Path], tmp_path: Path
) -> None:
    url, model = server
    cfg = _openai_config(url, model, tmp_path, steps=2, tasks_per_step=4, group_size=8, lr=5e-2)
    trainer = GRPOTrainer(cfg)
    history = trainer.train()
    assert max(m["mismatch/abs_logprob_diff_max"] for m in history) < 1e-3  # sampler = trainer
    assert trainer.generator.loaded == "gymhub-step-2"
    fixed = trainer.tok("say c and more", add_special_tokens=False)["input_ids"]
    served = _served_logprobs(url, "gymhub-step-2", fixed)
    base = _served_logprobs(url, str(model), fixed)
    x = torch.tensor([fixed])
    with torch.no_grad():
        ours = token_logprobs(trainer.model, x, torch.ones_like(x), x[:, 1:], 1.0)[0].tolist()
    assert served == pytest.approx(ours, abs=1e-3)
    assert max(abs(a - b) for a, b in zip(served, base, strict=True)) > 1e-3  # the adapter changed it


def test_openai_backend_records_processed_logprobs_at_temperature_0_7(
    server: tuple[str, Path], tmp_path: Path
) -> None:
    """Episodes sampled through the openai backend at temperature 0.7: the recorded log-probs
    of every sampled token are the trainer's own log-probs at 0.7, not the raw ones at 1.0."""
    url, model = server
    cfg = _openai_config(url, model, tmp_path, temperature=0.7)
    trainer = GRPOTrainer(cfg)  # checks that the server's log-probs are processed, loads step 0
    client = trainer.generator.client
    probe = trainer.tok("say c and more", add_special_tokens=False)["input_ids"]
    assert client.run(lambda: client.check_processed_logprobs(probe, 0.7)) is True  # the check can tell
    groups = gymhub.rollout(
        "toy-letters-v0", trainer.generator.policy(), tasks=4, group_size=4, concurrency=8, seed=3
    )
    assert all(t.status == "ok" for g in groups for t in g.trajectories)
    episodes = [token_episode(t) for g in groups for t in g.trajectories]
    sampled = 0
    worst = worst_raw = 0.0
    for episode in episodes:
        ids = episode.prompt_ids + episode.completion_ids
        x = torch.tensor([ids])
        start = len(episode.prompt_ids) - 1  # the position that predicts the first sampled token
        with torch.no_grad():
            ours = token_logprobs(trainer.model, x, torch.ones_like(x), x[:, 1:], 0.7)[0, start:]
            raw = token_logprobs(trainer.model, x, torch.ones_like(x), x[:, 1:], 1.0)[0, start:]
        for recorded, mine, plain, mask in zip(episode.logprobs, ours, raw, episode.loss_mask, strict=True):
            if mask:
                sampled += 1
                worst = max(worst, abs(recorded - float(mine)))
                worst_raw = max(worst_raw, abs(recorded - float(plain)))
    assert sampled >= 16
    assert worst < 1e-3, f"sampler vs trainer at temperature 0.7: max |Δ| = {worst}"
    assert worst_raw > 1e-2  # the raw log-probs (temperature 1.0) would have failed the check above
