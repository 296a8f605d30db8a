"""gymhub in OpenRLHF: the remote reward protocol over real HTTP, and the agent function run by
OpenRLHF's own MultiTurnAgentExecutor (openrlhf 0.11.2, installed without its GPU stack)."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import subprocess
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
import pytest
from processes import free_port, gymhub_cli

import gymhub

agent_api = pytest.importorskip("openrlhf.utils.agent")
torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def reward_server() -> Any:
    port = free_port()
    proc = subprocess.Popen(
        [gymhub_cli(), "serve-reward", "toy-letters-v0", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                break
        except httpx.HTTPError:
            time.sleep(0.2)
    yield url
    proc.terminate()
    proc.wait(10)


def _tokenizer(tiny_model_path: Path) -> Any:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_model_path)


def test_remote_reward_through_openrlhfs_own_http_client(reward_server: str, tiny_model_path: Path) -> None:
    tok = _tokenizer(tiny_model_path)
    env = gymhub.make("toy-letters-v0")
    tasks = env.tasks[:3]
    prompts = [
        tok.apply_chat_template(
            [{"role": "user", "content": t.prompt}], tokenize=False, add_generation_prompt=True
        )
        for t in tasks
    ]
    responses = [tasks[0].hidden["letter"] * 6, "no letters here", tasks[2].hidden["letter"] + "xy"]
    queries = [p + r + "<|im_end|>" for p, r in zip(prompts, responses, strict=True)]
    executor = agent_api.SingleTurnAgentExecutor(f"{reward_server}/get_reward")
    [reply] = asyncio.run(executor._fetch_rewards_via_http(queries, prompts, [t.id for t in tasks]))
    beta = env.reward_config.beta
    for i, (task, response) in enumerate(zip(tasks, responses, strict=True)):
        env.reset(options={"task_id": task.id})
        *_, info = env.step(response)
        verdict = info["verdict"]
        assert reply["extra_logs"]["outcome"][i] == verdict.outcome
        assert reply["extra_logs"]["path_signal"][i] == verdict.path_signal
        assert reply["rewards"][i] == pytest.approx(verdict.outcome + beta * verdict.path_signal)
        assert reply["scores"][i] == reply["rewards"][i]
    assert reply["rewards"][0] > reply["rewards"][1]


def test_remote_reward_rejects_bad_requests_clearly(reward_server: str) -> None:
    url = f"{reward_server}/get_reward"
    assert (
        httpx.post(url, content=b"{not json", headers={"content-type": "application/json"}).status_code == 422
    )
    assert httpx.post(url, json={"query": ["a"], "prompts": [], "labels": []}).status_code == 422
    r = httpx.post(url, json={"query": ["abc"], "prompts": ["zzz"], "labels": ["x"]})
    assert r.status_code == 400 and "does not start with its prompt" in r.text
    r = httpx.post(url, json={"query": ["pa"], "prompts": ["p"], "labels": ["no-such-task"]})
    assert r.status_code == 400 and "no-such-task" in r.text


class ScriptedEngine:
    """Stands in for vLLM's AsyncLLMEngine: replies with fixed texts, tokenised by the model's
    tokenizer, each ending with the EOS token as vLLM reports it (ids with EOS, text without)."""

    def __init__(self, tok: Any, replies: list[str]) -> None:
        self.tok, self.replies = tok, list(replies)

    async def generate(
        self, prompt_ids: list[int], sampling_params: Any, multi_modal_data: Any = None
    ) -> Any:
        text = self.replies.pop(0)
        ids = self.tok(text, add_special_tokens=False)["input_ids"] + [self.tok.eos_token_id]
        logprobs = [{i: SimpleNamespace(logprob=-0.5)} for i in ids]
        out = SimpleNamespace(token_ids=ids, text=text, logprobs=logprobs, finish_reason="stop")
        return SimpleNamespace(outputs=[out])


def _agent_executor(tmp_path: Path, env_id: str, tiny_model_path: Path) -> Any:
    agent_file = tmp_path / "agent.py"
    subprocess.run(
        [
            gymhub_cli(),
            "openrlhf-agent",
            env_id,
            "--tokenizer",
            str(tiny_model_path),
            "-o",
            str(agent_file),
            "--data",
            str(tmp_path / "data.jsonl"),
        ],
        check=True,
        capture_output=True,
    )
    # Load it exactly as OpenRLHF's _load_agent_executor does.
    spec = importlib.util.spec_from_file_location("agent_module", agent_file)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert issubclass(module.AgentExecutor, agent_api.AgentExecutorBase)
    return module.AgentExecutor()


def test_agent_function_plays_a_multi_turn_episode_in_openrlhfs_executor(
    tmp_path: Path, tiny_model_path: Path
) -> None:
    tok = _tokenizer(tiny_model_path)
    executor = _agent_executor(tmp_path, "mcp-tools-v0", tiny_model_path)
    rows = [json.loads(line) for line in (tmp_path / "data.jsonl").read_text().splitlines()]
    env = gymhub.make("mcp-tools-v0")
    task = env.tasks[0]
    row = next(r for r in rows if r["label"] == task.id)
    assert row["prompt"] == [m.to_openai() for m in env.initial_messages(task)]
    # The reference solution, written as text the way a model emits tool calls.
    replies = []
    for message in task.hidden["solutions"]["reference"]:
        calls = message.get("tool_calls") or []
        blocks = [
            "<tool_call>"
            + json.dumps({"name": c["function"]["name"], "arguments": json.loads(c["function"]["arguments"])})
            + "</tool_call>"
            for c in calls
        ]
        replies.append("\n".join(blocks) if blocks else message["content"])
    prompt = tok.apply_chat_template(row["prompt"], tokenize=False, add_generation_prompt=True)
    params = SimpleNamespace(max_tokens=None, logprobs=1)
    result = asyncio.run(
        executor.execute(prompt, task.id, params, 100_000, tok, ScriptedEngine(tok, replies))
    )
    assert result["reward"] == pytest.approx(
        1.0 + env.reward_config.beta * result["extra_logs"]["path_signal"]
    )
    assert result["extra_logs"]["outcome"] == 1.0
    # Token in, token out: the sequence is prompt, then each action's ids and the env's turn
    # rendered by the chat template, so it decodes to the chat the env saw.
    tokens = result["observation_tokens"]
    assert len(result["action_ranges"]) == len(replies)
    for (start, end), text in zip(result["action_ranges"], replies, strict=True):
        assert tok.decode(tokens[start:end], skip_special_tokens=True) == text
    decoded = tok.decode(tokens, skip_special_tokens=False)
    assert decoded.startswith(prompt) and "<|im_start|>tool\n" in decoded[len(prompt) :]
    assert decoded.count("<|im_start|>assistant\n") == len(replies)
    assert "<|im_end|><|im_end|>" not in decoded  # the sampled EOS is not repeated by the glue


def test_agent_function_with_a_claim_scores_zero(tmp_path: Path, tiny_model_path: Path) -> None:
    tok = _tokenizer(tiny_model_path)
    executor = _agent_executor(tmp_path, "mcp-tools-v0", tiny_model_path)
    task = gymhub.make("mcp-tools-v0").tasks[0]
    prompt = tok.apply_chat_template(
        [{"role": "user", "content": task.prompt}], tokenize=False, add_generation_prompt=True
    )
    engine = ScriptedEngine(tok, ['<tool_call>{"name": "finish", "arguments": {}}</tool_call>'])
    result = asyncio.run(
        executor.execute(prompt, task.id, SimpleNamespace(max_tokens=None, logprobs=1), 100_000, tok, engine)
    )
    assert result["extra_logs"]["outcome"] == 0.0 and result["reward"] <= 0.0
