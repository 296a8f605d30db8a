"""gymhub in TRL's real GRPOTrainer, on CPU with a tiny offline model."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from tiny_model import CHAT_TEMPLATE, build_tool_calling_model

import gymhub
from gymhub._scoring import CompletionScorer
from gymhub._token_episodes import token_episode
from gymhub.policies.hf_policy import HFPolicy
from gymhub.types import Verdict

trl = pytest.importorskip("trl")
torch = pytest.importorskip("torch")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
torch.set_num_threads(1)

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


def _trainer(model_path: Path, **kwargs: Any) -> Any:
    model, tok = _load(model_path)
    return trl.GRPOTrainer(model=model, processing_class=tok, **kwargs)


def _recording(func: Any, seen: list[dict[str, Any]]) -> Any:
    """``func`` under its own name, recording the kwargs TRL calls it with."""

    def recorded(prompts: list[Any], completions: list[Any], **kwargs: Any) -> list[float | None]:
        values = func(prompts, completions, **kwargs)
        seen.append({**kwargs, "completions": completions, "values": values})
        return values

    recorded.__name__ = func.__name__
    return recorded


def test_rollout_func_samples_with_the_trainers_temperature_length_and_seed(
    tiny_model_path: Path, tmp_path: Path
) -> None:
    settings = {"temperature": 0.7, "max_completion_length": 5, "seed": 3}
    args = _config(tmp_path, per_device_train_batch_size=2, num_generations=2, **settings)
    trainer = _trainer(
        tiny_model_path,
        args=args,
        reward_funcs=gymhub_trl.reward_funcs("toy-letters-v0"),
        train_dataset=gymhub_trl.dataset("toy-letters-v0", limit=2),
        rollout_func=gymhub_trl.rollout_func("toy-letters-v0"),
    )
    row = gymhub_trl.dataset("toy-letters-v0", limit=1)[0]
    out = trainer.rollout_func([row["prompt"]] * 2, trainer)
    # The same episodes, played by a policy given the config's values by hand: equal token for
    # token and log-prob for log-prob (log-probs at 0.7, not 1.0; at most 5 tokens; the seed).
    policy = HFPolicy(
        "by-hand", model=trainer.model, tokenizer=trainer.processing_class, temperature=0.7, max_new_tokens=5
    )
    [group] = gymhub.rollout(
        "toy-letters-v0", policy, tasks=[row["task_id"]], group_size=2, seed=gymhub_trl.rollout_seed(trainer)
    )
    expected = [token_episode(t) for t in group.trajectories]
    assert out["completion_ids"] == [e.completion_ids for e in expected]
    for got, want in zip(out["logprobs"], expected, strict=True):  # batched vs alone: float noise only
        assert got == pytest.approx(want.logprobs, abs=1e-5)
    assert all(0 < len(ids) <= 5 for ids in out["completion_ids"])
    # The seed follows args.seed: the same config replays the same episodes, another seed differs.
    assert trainer.rollout_func([row["prompt"]] * 2, trainer)["completion_ids"] == out["completion_ids"]
    seed_3 = gymhub_trl.rollout_seed(trainer)
    trainer.args.seed = 4
    assert gymhub_trl.rollout_seed(trainer) != seed_3
    assert trainer.rollout_func([row["prompt"]] * 2, trainer)["completion_ids"] != out["completion_ids"]
    # Each verdict is the env's verdict on the sampled text.
    env = gymhub.make("toy-letters-v0")
    for ids, mask, verdict in zip(out["completion_ids"], out["env_mask"], out["gymhub_verdict"], strict=True):
        assert mask == [1] * len(ids)
        env.reset(options={"task_id": row["task_id"]})
        *_, info = env.step(trainer.processing_class.decode(ids, skip_special_tokens=True))
        assert Verdict.model_validate_json(verdict).outcome == info["verdict"].outcome


def test_trl_trains_on_gymhubs_advantages_from_rollout_func(tmp_path: Path) -> None:
    # A model that answers "Say a" with one of three replies, each scored differently.
    replies = ["aaaa", "aazz", "zz"]
    model_path = build_tool_calling_model(tmp_path / "letters", replies, template=CHAT_TEMPLATE)
    seen: list[dict[str, Any]] = []
    args = _config(tmp_path, max_steps=1, scale_rewards="none", max_completion_length=4)
    trainer = _trainer(
        model_path,
        args=args,
        reward_funcs=[_recording(gymhub_trl.advantage_func("toy-letters-v0", args), seen)],
        train_dataset=gymhub_trl.dataset("toy-letters-v0", limit=1),  # task 0: "Say a"
        rollout_func=gymhub_trl.rollout_func("toy-letters-v0"),
    )
    trainer.train()
    [call] = seen
    verdicts = [Verdict.model_validate_json(v) for v in call["gymhub_verdict"]]
    assert len({v.outcome for v in verdicts}) > 1  # the group has something to learn from
    _, gymhub_advantages = gymhub.make("toy-letters-v0").reward_config.combine(verdicts)
    trl_advantages = list(trainer._logs["advantages"])
    assert trl_advantages == pytest.approx(gymhub_advantages, abs=1e-6)
    logged = next(h for h in trainer.state.log_history if "gymhub/outcome" in h)
    assert logged["gymhub/outcome"] == pytest.approx(sum(v.outcome for v in verdicts) / 4)


def test_advantage_func_refuses_a_config_that_would_rescale_it(tmp_path: Path) -> None:
    with pytest.raises(gymhub.GymhubError, match="scale_rewards"):
        gymhub_trl.advantage_func("toy-letters-v0", _config(tmp_path))  # TRL's default: "group"
    with pytest.raises(gymhub.GymhubError, match="whole groups"):
        func = gymhub_trl.advantage_func("toy-letters-v0", _config(tmp_path, scale_rewards="none"))
        task = gymhub.make("toy-letters-v0").tasks[0]
        func([None] * 3, [[{"role": "assistant", "content": "a"}]] * 3, task_id=[task.id] * 3)


def test_environment_factory_runs_a_real_grpo_step_with_tool_calls(tmp_path: Path) -> None:
    from trl.chat_template_utils import qwen2_5_chat_template

    env = gymhub.make("search-v0")
    task = env.tasks[0]
    answers = [task.hidden["answer"], "1066"]
    calls = [
        "<tool_call>\n" + json.dumps({"name": "answer", "arguments": {"text": a}}) + "\n</tool_call>"
        for a in answers
    ]
    model_path = build_tool_calling_model(tmp_path / "caller", calls, template=qwen2_5_chat_template)
    seen: list[dict[str, Any]] = []
    args = _config(
        tmp_path, max_steps=1, scale_rewards="none", max_completion_length=64, max_tool_calling_iterations=1
    )
    trainer = _trainer(
        model_path,
        args=args,
        reward_funcs=[_recording(gymhub_trl.advantage_func("search-v0", args), seen)],
        train_dataset=gymhub_trl.dataset("search-v0", limit=1),
        environment_factory=gymhub_trl.environment_factory("search-v0"),
    )
    trainer.train()
    assert trainer.state.global_step == 1
    logged = next(h for h in trainer.state.log_history if "tools/call_frequency" in h)
    assert logged["tools/call_frequency"] == 1.0 and logged["tools/failure_frequency"] == 0.0
    # TRL parsed each tool call and ran it in a gymhub env; the verdict read that env's state.
    [call] = seen
    verdicts = [e.verdict for e in call["environments"]]
    for completion, verdict in zip(call["completions"], verdicts, strict=True):
        [tool_call] = completion[0]["tool_calls"]
        assert tool_call["function"]["name"] == "answer"
        right = tool_call["function"]["arguments"]["text"] == task.hidden["answer"]
        assert verdict.outcome == (1.0 if right else 0.0)
    _, gymhub_advantages = env.reward_config.combine(verdicts)
    assert list(trainer._logs["advantages"]) == pytest.approx(gymhub_advantages, abs=1e-6)
    assert logged["grad_norm"] > 0 or len({v.outcome for v in verdicts}) == 1
