"""gymhub environments in OpenRLHF (checked against OpenRLHF 0.11.2's ``openrlhf.utils.agent``).

Two ways in, as OpenRLHF offers them:

* **Remote reward** (``--remote_rm_url http://HOST:PORT/get_reward``): ``gymhub serve-reward
  ENV`` answers OpenRLHF's protocol — ``POST {"query", "prompts", "labels"}`` →
  ``{"rewards", "scores", "extra_logs"}`` — with the verifier's verdict. The label is the task
  id (write the prompt dataset with :func:`write_dataset` and train with ``--label_key label``);
  the completion is the query minus its prompt, minus the end-of-turn token.
* **Agent function** (``--agent_func_path agent.py``): ``gymhub openrlhf-agent ENV --tokenizer
  PATH -o agent.py`` writes a file whose ``AgentInstance`` drives a gymhub episode per prompt:
  ``reset`` starts the label's task, ``step`` steps the model's text into the env and returns the
  reward (0 until the end, then outcome + β·path signal), the score, the environment's reply
  rendered with the model's chat template, ``done`` and ``extra_logs`` (outcome, path signal).

Both see one sample at a time, never its group, and OpenRLHF takes no per-sample advantage:
it receives the scalar reward ``O + β·Φ`` and normalises it with its own estimator
(docs/integrations.md says exactly how that differs from gymhub's ``norm(O) + β·norm(Φ)``).
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from gymhub._chat_template import env_turn_text
from gymhub._scoring import CompletionScorer
from gymhub.env import Env, message_from_openai
from gymhub.errors import GymhubError
from gymhub.registry import make
from gymhub.types import combined_reward

if TYPE_CHECKING:
    from fastapi import FastAPI

END_OF_TURN = ("<|im_end|>", "<|endoftext|>", "<|eot_id|>", "<|end|>", "</s>")


def dataset_rows(env_id: str, split: str = "train") -> list[dict[str, Any]]:
    """OpenRLHF prompt rows: ``prompt`` (chat messages, for ``--apply_chat_template``) and ``label``."""
    env = make(env_id, split=split)
    try:
        return [
            {"prompt": [m.to_openai() for m in env.initial_messages(task)], "label": task.id}
            for task in env.tasks
        ]
    finally:
        env.close()


def write_dataset(env_id: str, path: str | Path, split: str = "train") -> int:
    """Write :func:`dataset_rows` as JSONL (``--prompt_data PATH --input_key prompt --label_key label``)."""
    rows = dataset_rows(env_id, split)
    with open(path, "w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    return len(rows)


def response_of(query: str, prompt: str, end_tokens: tuple[str, ...] = END_OF_TURN) -> str:
    """The model's response inside an OpenRLHF query (prompt + response, special tokens kept)."""
    if not query.startswith(prompt):
        raise GymhubError("the query does not start with its prompt")
    response = query[len(prompt) :]
    stripped = True
    while stripped:
        stripped = False
        for token in end_tokens:
            if response.endswith(token):
                response = response[: -len(token)]
                stripped = True
    return response


class RewardRequest(BaseModel):
    """OpenRLHF's remote reward request: prompt + response texts, prompts, labels (task ids)."""

    query: list[str]
    prompts: list[str]
    labels: list[str]


def create_reward_app(env_id: str, *, scorer: CompletionScorer | None = None) -> FastAPI:
    """A FastAPI app speaking OpenRLHF's remote reward protocol (``POST /get_reward``)."""
    from fastapi import FastAPI, HTTPException

    scorer = scorer or CompletionScorer(env_id)
    beta = scorer.reward_config.beta
    app = FastAPI(title=f"gymhub reward server ({env_id})")

    @app.post("/get_reward")
    def get_reward(body: RewardRequest) -> dict[str, Any]:
        if not len(body.query) == len(body.prompts) == len(body.labels):
            raise HTTPException(422, "query, prompts and labels must have the same length")
        try:
            pairs = [
                (label, response_of(q, p))
                for q, p, label in zip(body.query, body.prompts, body.labels, strict=True)
            ]
            verdicts = scorer.score_many(pairs)
        except GymhubError as exc:
            raise HTTPException(400, str(exc)) from exc
        rewards = [combined_reward(v.outcome, v.path_signal, beta) for v in verdicts]
        return {
            "rewards": rewards,
            "scores": rewards,
            "extra_logs": {
                "outcome": [v.outcome for v in verdicts],
                "path_signal": [v.path_signal for v in verdicts],
                "verifier_error": [float(v.errored) for v in verdicts],
            },
        }

    @app.get("/healthz")
    def healthz() -> dict[str, Any]:
        return {"ok": True, "env": env_id}

    return app


@functools.lru_cache(maxsize=4)
def _tokenizer(path: str) -> Any:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(path)


class GymhubAgent:
    """An OpenRLHF ``AgentInstance`` body driving one gymhub episode (mix in ``AgentInstanceBase``).

    Subclasses set ``env_id`` and ``tokenizer_path`` (the generated agent file does).
    """

    env_id: str = ""
    tokenizer_path: str = ""
    env_kwargs: dict[str, Any] = {}  # noqa: RUF012 - set per generated subclass

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.env: Env = make(self.env_id, **self.env_kwargs)
        self.tokenizer = _tokenizer(self.tokenizer_path)
        self.tools: list[dict[str, Any]] = []

    async def reset(self, states: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        """Start the task named by the label; the observation is OpenRLHF's rendered prompt."""
        _, info = await self.env.areset(options={"task_id": states["label"]})
        self.tools = info["tools"]
        return {"observation": states["observation"]}

    async def step(self, states: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        import torch

        text = states["action_text"]
        _, reward, terminated, truncated, info = await self.env.astep(text)
        done = terminated or truncated
        verdict = info.get("verdict")
        feedback = ""
        if not done:
            # vLLM's text drops the end-of-turn token it sampled; the template's glue must not repeat it.
            eos = self.tokenizer.eos_token or ""
            produced = text if text.endswith(eos) else text + eos
            replies = [message_from_openai(m) for m in info["messages"]]
            feedback = env_turn_text(self.tokenizer, produced, replies, self.tools)
        return {
            "rewards": torch.tensor(reward),
            "scores": torch.tensor(reward),
            "environment_feedback": feedback,
            "done": done,
            "sampling_params": states.get("sampling_params"),
            "extra_logs": {
                "outcome": verdict.outcome if verdict else 0.0,
                "path_signal": verdict.path_signal if verdict else 0.0,
            },
        }


AGENT_FILE = '''"""OpenRLHF agent function for the gymhub env {env_id!r}.

Generated by `gymhub openrlhf-agent`.

Train with: --agent_func_path THIS_FILE --prompt_data DATA.jsonl --input_key prompt
            --label_key label --apply_chat_template
"""

from openrlhf.utils.agent import AgentInstanceBase, MultiTurnAgentExecutor

from gymhub.trainers.openrlhf import GymhubAgent


class AgentInstance(GymhubAgent, AgentInstanceBase):
    env_id = {env_id!r}
    tokenizer_path = {tokenizer!r}
    env_kwargs = {env_kwargs!r}


class AgentExecutor(MultiTurnAgentExecutor):
    def __init__(self):
        super().__init__(AgentInstance)
'''


def agent_file_source(env_id: str, tokenizer_path: str, **env_kwargs: Any) -> str:
    """The text of an ``--agent_func_path`` file for ``env_id``."""
    make(env_id).close()  # fail now, not inside a Ray worker, if the env does not exist
    return AGENT_FILE.format(env_id=env_id, tokenizer=str(tokenizer_path), env_kwargs=env_kwargs)
