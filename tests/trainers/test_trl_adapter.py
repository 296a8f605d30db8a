"""gymhub in TRL's real GRPOTrainer, on CPU with a tiny offline model."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

import gymhub
from gymhub.scoring import CompletionScorer
from gymhub.types import Verdict

trl = pytest.importorskip("trl")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

from gymhub.trainers import trl as gymhub_trl  # noqa: E402


def _config(tmp_path: Path, **overrides: Any) -> Any:
    settings: dict[str, Any] = {
        "output_dir": str(tmp_path / "out"),
        "per_device_train_batch_size": 4,
        "num_generations": 4,
        "max_completion_length": 8,
        "max_steps": 2,
        "learning_rate": 1e-3,
        "logging_steps": 1,
        "report_to": "none",
        "use_cpu": True,
        "save_strategy": "no",
        "seed": 0,
        "dataloader_num_workers": 0,
    }
    settings.update(overrides)
    return trl.GRPOConfig(**settings)


def _load(tiny_model_path: Path) -> tuple[Any, Any]:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_model_path)
    tok.padding_side = "left"
    return AutoModelForCausalLM.from_pretrained(tiny_model_path), tok


def test_dataset_has_prompts_and_task_ids() -> None:
    data = gymhub_trl.dataset("toy-letters-v0", limit=5)
    env = gymhub.make("toy-letters-v0")
    assert data.column_names == ["prompt", "task_id", "env_id"] and len(data) == 5
    assert data[0]["task_id"] == env.tasks[0].id
    assert data[0]["prompt"][-1] == {"role": "user", "content": env.tasks[0].prompt}


def test_grpo_trainer_runs_two_steps_and_logs_the_verifiers_rewards(
    tiny_model_path: Path, tmp_path: Path
) -> None:
    seen: list[tuple[str, str, float]] = []
    outcome, path_signal = gymhub_trl.reward_funcs("toy-letters-v0")

    def recorded_outcome(prompts: list[Any], completions: list[Any], **kwargs: Any) -> list[float | None]:
        values = outcome(prompts, completions, **kwargs)
        seen.extend(
            (t, c[-1]["content"], v) for t, c, v in zip(kwargs["task_id"], completions, values, strict=True)
        )
        return values

    recorded_outcome.__name__ = "gymhub_outcome"
    model, tok = _load(tiny_model_path)
    trainer = trl.GRPOTrainer(
        model=model,
        processing_class=tok,
        reward_funcs=[recorded_outcome, path_signal],
        args=_config(tmp_path),
        train_dataset=gymhub_trl.dataset("toy-letters-v0", limit=8),
    )
    trainer.train()
    logged = [h for h in trainer.state.log_history if "rewards/gymhub_outcome/mean" in h]
    assert len(logged) == 2 and len(seen) == 8
    # The logged means are the means of what the verifier said for each completion...
    for step, entry in enumerate(logged):
        batch = [v for _, _, v in seen[4 * step : 4 * step + 4]]
        assert entry["rewards/gymhub_outcome/mean"] == pytest.approx(sum(batch) / 4, abs=1e-6)
    # ...and each value is exactly a fresh episode's verdict on that completion.
    env = gymhub.make("toy-letters-v0")
    for task_id, text, value in seen:
        env.reset(options={"task_id": task_id})
        *_, info = env.step(text)
        assert info["verdict"].outcome == value


def test_two_reward_functions_share_one_verification() -> None:
    scorer = CompletionScorer("toy-letters-v0")
    outcome, path_signal = gymhub_trl.reward_funcs("toy-letters-v0", scorer=scorer)
    task = gymhub.make("toy-letters-v0").tasks[2]
    texts = [task.hidden["letter"] * 4, "zz"]
    completions = [[{"role": "assistant", "content": text}] for text in texts]
    kwargs = {"task_id": [task.id, task.id]}
    outcomes = outcome([None, None], completions, **kwargs)
    signals = path_signal([None, None], completions, **kwargs)
    env = gymhub.make("toy-letters-v0")
    for text, o, p in zip(texts, outcomes, signals, strict=True):
        env.reset(options={"task_id": task.id})
        *_, info = env.step(text)
        assert (o, p) == (info["verdict"].outcome, info["verdict"].path_signal)
    assert outcomes[0] == 1.0
    assert scorer.verifications == 2  # the second function used the cached verdicts


def test_environment_factory_exposes_tools_with_schemas_and_scores_the_final_state() -> None:
    from transformers.utils import get_json_schema

    cls = gymhub_trl.environment_factory("mcp-tools-v0")
    env = cls()
    tools = {t["function"]["name"]: t["function"] for t in env.env.tools()}
    for name, spec in tools.items():
        schema = get_json_schema(getattr(env, name))["function"]
        assert schema["name"] == name
        assert set(schema["parameters"]["properties"]) == set(spec["parameters"].get("properties", {}))
        assert set(schema["parameters"].get("required", [])) == set(spec["parameters"].get("required", []))
    # Drive one task with the reference solution's tool calls through the methods, as TRL does.
    task = env.env.tasks[0]
    env.reset(task_id=task.id, prompt=None)
    solution = task.hidden["solutions"]["reference"]
    import json

    final = None
    for message in solution:
        for call in message.get("tool_calls") or []:
            getattr(env, call["function"]["name"])(**json.loads(call["function"]["arguments"]))
        if not message.get("tool_calls"):
            final = message
    completion = [final] if final else [{"role": "assistant", "content": ""}]
    [verdict] = gymhub_trl.reward_funcs("mcp-tools-v0")[0]([None], [completion], environments=[env])
    assert verdict == 1.0
    # A fresh instance that does nothing scores 0: the reward reads the state, not claims.
    idle = cls()
    idle.reset(task_id=task.id)
    claim = [{"role": "assistant", "content": "Done! Everything is updated."}]
    assert gymhub_trl.reward_funcs("mcp-tools-v0")[0]([None], [claim], environments=[idle]) == [0.0]


def test_rollout_func_feeds_token_level_episodes_to_the_trainer(
    tiny_model_path: Path, tmp_path: Path
) -> None:
    model, tok = _load(tiny_model_path)
    trainer = trl.GRPOTrainer(
        model=model,
        processing_class=tok,
        reward_funcs=gymhub_trl.reward_funcs("toy-letters-v0"),
        args=_config(tmp_path, max_steps=1),
        train_dataset=gymhub_trl.dataset("toy-letters-v0", limit=4),
        rollout_func=gymhub_trl.rollout_func("toy-letters-v0", max_new_tokens=8),
    )
    dataset = gymhub_trl.dataset("toy-letters-v0", limit=1)
    out = gymhub_trl.rollout_func("toy-letters-v0", max_new_tokens=6)([dataset[0]["prompt"]] * 2, trainer)
    assert len(out["completion_ids"]) == 2
    for ids, logprobs, mask, verdict in zip(
        out["completion_ids"], out["logprobs"], out["env_mask"], out["gymhub_verdict"], strict=True
    ):
        assert 0 < len(ids) <= 6 and len(logprobs) == len(ids) and mask == [1] * len(ids)
        text = tok.decode(ids, skip_special_tokens=True)
        env = gymhub.make("toy-letters-v0")
        env.reset(options={"task_id": dataset[0]["task_id"]})
        *_, info = env.step(text)
        assert Verdict.model_validate_json(verdict).outcome == info["verdict"].outcome
    trainer.train()
    assert any("rewards/gymhub_outcome/mean" in h for h in trainer.state.log_history)
