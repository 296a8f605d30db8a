"""gymhub in verl 0.9.1 (installed without its GPU stack): the reward function, the dataset
through verl's own RLHFDataset, the agent loop and the BaseTool, driven as verl drives them."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import gymhub

pytest.importorskip("verl.experimental.agent_loop.agent_loop")
torch = pytest.importorskip("torch")

from omegaconf import OmegaConf  # noqa: E402
from verl.experimental.agent_loop.agent_loop import DictConfigWrap, _agent_loop_registry  # noqa: E402
from verl.workers.rollout.replica import TokenOutput  # noqa: E402

from gymhub.policies.hf_policy import HFPolicy  # noqa: E402
from gymhub.trainers import verl as gymhub_verl  # noqa: E402
from gymhub.trainers.verl_agent_loop import GymhubAgentLoop, GymhubTool  # noqa: E402


def test_compute_score_is_the_verdict() -> None:
    env = gymhub.make("toy-letters-v0")
    task = env.tasks[5]
    for text in (task.hidden["letter"] * 5, "wrong answer"):
        env.reset(options={"task_id": task.id})
        *_, info = env.step(text)
        v = info["verdict"]
        result = gymhub_verl.compute_score(
            "toy-letters-v0", text, task.id, extra_info={"env_id": "toy-letters-v0"}
        )
        assert result["outcome"] == v.outcome and result["path_signal"] == v.path_signal
        assert result["score"] == pytest.approx(v.outcome + env.reward_config.beta * v.path_signal)


def test_parquet_export_loads_in_verls_rlhf_dataset(tmp_path: Path, tiny_model_path: Path) -> None:
    from transformers import AutoTokenizer
    from verl.utils.dataset.rl_dataset import RLHFDataset

    path = tmp_path / "train.parquet"
    n = gymhub_verl.write_parquet("mcp-tools-v0", path)
    tok = AutoTokenizer.from_pretrained(tiny_model_path)
    config = OmegaConf.create(
        {"max_prompt_length": 4096, "cache_dir": str(tmp_path / "cache"), "filter_overlong_prompts": False}
    )
    data = RLHFDataset(str(path), tok, config)
    assert len(data) == n > 0
    row = data[0]
    task = gymhub.make("mcp-tools-v0").tasks[0]
    assert row["extra_info"]["task_id"] == task.id == row["reward_model"]["ground_truth"]
    assert [m["content"] for m in row["raw_prompt"]][-1] == task.prompt
    assert row["agent_name"] == "gymhub_agent"
    assert row["extra_info"]["tools_kwargs"]["finish"]["create_kwargs"]["task_id"] == task.id


class TinyModelServer:
    """verl's server manager contract (``generate`` → ``TokenOutput``), on a real tiny model."""

    def __init__(self, policy: HFPolicy) -> None:
        self.policy = policy
        self.calls = 0

    async def generate(
        self, request_id: str, prompt_ids: list[int], sampling_params: dict[str, Any], **kw: Any
    ) -> TokenOutput:
        self.calls += 1
        reply = await asyncio.to_thread(self.policy.generate_from_ids, list(prompt_ids), self.calls)
        return TokenOutput(token_ids=list(reply.token_ids), log_probs=list(reply.logprobs))


def _agent_loop(server: Any, tok: Any, response_length: int) -> GymhubAgentLoop:
    config = OmegaConf.create(
        {"actor_rollout_ref": {"rollout": {"prompt_length": 4096, "response_length": response_length}}}
    )
    return GymhubAgentLoop(
        trainer_config=DictConfigWrap(config),
        server_manager=server,
        tokenizer=tok,
        processor=None,
        dataset_cls=None,
        data_config=DictConfigWrap(OmegaConf.create({})),
    )


def test_agent_loop_plays_a_multi_turn_episode_token_in_token_out(tiny_model_path: Path) -> None:
    # Registered under the dataset's agent_name, as verl's AgentLoopWorker looks it up.
    assert _agent_loop_registry["gymhub_agent"]["_target_"].endswith("GymhubAgentLoop")
    policy = HFPolicy(str(tiny_model_path), max_new_tokens=6)
    tok = policy.tokenizer
    [row] = [r for r in gymhub_verl.dataset_rows("search-v0")[:1]]

    async def main() -> Any:
        loop = _agent_loop(TinyModelServer(policy), tok, response_length=400)
        return await loop.run(
            {"temperature": 1.0},
            raw_prompt=row["prompt"],
            **{k: row[k] for k in ("data_source", "extra_info")},
        )

    out = asyncio.run(main())
    n = len(out.response_ids)
    assert len(out.response_mask) == len(out.response_logprobs) == n > 0
    assert 0 in out.response_mask and 1 in out.response_mask  # env turns between replies
    # Segments: mask-1 runs are what the model sampled, mask-0 runs are template + env text.
    ids = out.prompt_ids + out.response_ids
    decoded = tok.decode(ids, skip_special_tokens=False)
    assert decoded.count("<|im_start|>assistant\n") == out.num_turns // 2
    assert all(lp == 0.0 for lp, m in zip(out.response_logprobs, out.response_mask, strict=True) if m == 0)
    # The reward is the verdict of the same actions replayed in a fresh env.
    actions, run = [], []
    for token, m in zip(out.response_ids, out.response_mask, strict=True):
        if m:
            run.append(token)
        elif run:
            actions.append(tok.decode(run, skip_special_tokens=True))
            run = []
    if run:
        actions.append(tok.decode(run, skip_special_tokens=True))
    env = gymhub.make("search-v0")
    env.reset(options={"task_id": row["extra_info"]["task_id"]})
    for i, a in enumerate(actions):
        result = env.finish(a) if i == len(actions) - 1 else env.step(a)
    verdict = result[-1]["verdict"]
    assert out.reward_score == pytest.approx(verdict.outcome + env.reward_config.beta * verdict.path_signal)
    assert out.extra_fields["reward_extra_info"]["outcome"] == verdict.outcome


def test_base_tool_shares_one_episode_per_rollout_and_rewards_at_the_end() -> None:
    from types import SimpleNamespace

    from verl.tools.schemas import OpenAIFunctionToolSchema

    config = gymhub_verl.tool_config("mcp-tools-v0")
    tools = {
        spec["tool_schema"]["function"]["name"]: GymhubTool(
            spec["config"], OpenAIFunctionToolSchema.model_validate(spec["tool_schema"])
        )
        for spec in config["tools"]
    }
    task = gymhub.make("mcp-tools-v0").tasks[0]
    row = next(r for r in gymhub_verl.dataset_rows("mcp-tools-v0") if r["extra_info"]["task_id"] == task.id)
    agent_data = SimpleNamespace(request_id="rollout-1", tools_kwargs=row["extra_info"]["tools_kwargs"])

    async def main() -> list[tuple[Any, float, dict]]:
        results = []
        for message in task.hidden["solutions"]["reference"]:
            for call in message.get("tool_calls") or []:
                tool = tools[call["function"]["name"]]
                instance_id, _ = await tool.create(create_kwargs={"task_id": task.id})
                results.append(
                    await tool.execute(
                        instance_id, json.loads(call["function"]["arguments"]), agent_data=agent_data
                    )
                )
                await tool.release(instance_id)
        return results

    results = asyncio.run(main())
    assert all(r[1] == 0.0 for r in results[:-1])
    _, reward, metrics = results[-1]
    beta = gymhub.make("mcp-tools-v0").reward_config.beta
    assert metrics["outcome"] == 1.0 and reward == pytest.approx(1.0 + beta * metrics["path_signal"])
    assert "rollout-1" not in GymhubTool._episodes  # released when the episode ended


def test_gdpo_overrides_make_verl_normalise_each_channel_as_gymhub_does() -> None:
    """verl's own gdpo estimator, configured by gdpo_overrides, on one group of real verdicts."""
    from omegaconf import OmegaConf
    from verl.trainer.ppo.core_algos import get_adv_estimator_fn

    overrides = gymhub_verl.gdpo_overrides("toy-letters-v0")
    algorithm = OmegaConf.from_dotlist([o.removeprefix("algorithm.") for o in overrides])
    env = gymhub.make("toy-letters-v0")
    task = env.tasks[0]
    replies = ["aaaa", "aazz", "zz", "", "azzz", "aaaa"]
    scores = [gymhub_verl.compute_score("toy-letters-v0", r, task.id) for r in replies]
    _, gymhub_advantages = env.reward_config.combine(
        [gymhub_verl._scorer("toy-letters-v0").score(task.id, r) for r in replies]
    )
    n, length = len(replies), 3  # every response 3 tokens long
    estimator = get_adv_estimator_fn(algorithm.adv_estimator)
    advantages, _ = estimator(
        token_level_rewards=torch.zeros(n, length),
        response_mask=torch.ones(n, length),
        index=np.array(["group-0"] * n, dtype=object),
        config=algorithm,
        non_tensor_batch={key: np.array([s[key] for s in scores]) for key in ("outcome", "path_signal")},
        batch={"prompts": torch.zeros(n, 2), "attention_mask": torch.ones(n, 2 + length, dtype=torch.long)},
    )
    verl_advantages = advantages[:, 0].tolist()
    assert len(set(gymhub_advantages)) > 2
    # With equal lengths, verl's batch whitening leaves a scale: verl's advantage = c · gymhub's.
    scale = verl_advantages[0] / gymhub_advantages[0]
    assert scale > 0
    assert verl_advantages == pytest.approx([scale * a for a in gymhub_advantages], rel=1e-4, abs=1e-5)
