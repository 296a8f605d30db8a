"""gymhub environments in verl (checked against verl 0.9.1). Nothing here imports verl.

* :func:`compute_score` — verl's custom reward function contract
  (``reward.custom_reward_function.path/name``): ``data_source`` is the env id, ``ground_truth``
  the task id, ``solution_str`` the response; returns ``{"score": outcome + β·path signal,
  "outcome": ..., "path_signal": ..., ...}``. One verification per (task, response), cached.
* :func:`write_parquet` — the env's tasks in verl's RLHF dataset format: ``data_source``,
  ``prompt`` (chat messages), ``ability``, ``reward_model`` (``ground_truth`` = task id),
  ``extra_info`` (task id, env id, ``tools_kwargs`` for :class:`GymhubTool`) and ``agent_name``.
* :func:`tool_config` — a verl tool-config document whose tools are the env's, served by
  :class:`gymhub.trainers.verl_agent_loop.GymhubTool` (a ``BaseTool``).
* :class:`gymhub.trainers.verl_agent_loop.GymhubAgentLoop` — an ``AgentLoopBase`` registered as
  ``gymhub_agent`` that plays the whole multi-turn episode, token in / token out, and returns
  prompt / response ids, the response mask, the sampler's log-probs and the verdict's reward.
* :func:`gdpo_overrides` — the algorithm settings under which verl normalises the outcome and
  the path signal separately within each group, as gymhub does (verl's ``gdpo`` estimator).

Advantages: verl computes them itself. A custom estimator (``register_adv_est``) receives only
each response's scalar reward, its group id and the algorithm config; only the built-in
``gdpo`` estimator also reads per-sample fields (the ``outcome`` and ``path_signal`` that every
reward here carries). So gymhub cannot hand verl its own advantages; :func:`gdpo_overrides`
gets the closest verl has — exactly what it computes is in docs/integrations.md.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from gymhub._scoring import CompletionScorer
from gymhub.registry import make
from gymhub.types import combined_reward

AGENT_NAME = "gymhub_agent"
_scorers: dict[str, CompletionScorer] = {}
_scorers_lock = threading.Lock()


def _scorer(env_id: str) -> CompletionScorer:
    with _scorers_lock:
        if env_id not in _scorers:
            _scorers[env_id] = CompletionScorer(env_id)
        return _scorers[env_id]


def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: str,
    extra_info: dict[str, Any] | None = None,
    **kwargs: Any,
) -> dict[str, Any]:
    """verl's reward function: the verifier's verdict on ``solution_str`` for task ``ground_truth``."""
    env_id = (extra_info or {}).get("env_id") or data_source
    scorer = _scorer(env_id)
    verdict = scorer.score(ground_truth, solution_str)
    return {
        "score": combined_reward(verdict.outcome, verdict.path_signal, scorer.reward_config.beta),
        "outcome": verdict.outcome,
        "path_signal": verdict.path_signal,
        "verifier_error": float(verdict.errored),
    }


def dataset_rows(env_id: str, split: str = "train") -> list[dict[str, Any]]:
    """verl RLHF dataset rows for the env's ``split`` tasks."""
    env = make(env_id, split=split)
    try:
        tool_names = [t["function"]["name"] for t in env.tools()]
        return [
            {
                "data_source": env_id,
                "prompt": [m.to_openai() for m in env.initial_messages(task)],
                "ability": env.family,
                "reward_model": {"style": "rule", "ground_truth": task.id},
                "extra_info": {
                    "index": i,
                    "split": split,
                    "env_id": env_id,
                    "task_id": task.id,
                    "tools_kwargs": {name: {"create_kwargs": {"task_id": task.id}} for name in tool_names},
                },
                "agent_name": AGENT_NAME,
            }
            for i, task in enumerate(env.tasks)
        ]
    finally:
        env.close()


def write_parquet(env_id: str, path: str | Path, split: str = "train") -> int:
    """Write :func:`dataset_rows` as Parquet (``data.train_files=PATH``); returns the row count."""
    import datasets

    rows = dataset_rows(env_id, split)
    datasets.Dataset.from_list(rows).to_parquet(str(path))
    return len(rows)


def tool_config(env_id: str) -> dict[str, Any]:
    """A verl tool config (``actor_rollout_ref.rollout.multi_turn.tool_config_path``) for the env."""
    env = make(env_id)
    try:
        tools = env.tools()
    finally:
        env.close()
    return {
        "tools": [
            {
                "class_name": "gymhub.trainers.verl_agent_loop.GymhubTool",
                "config": {"type": "native", "env_id": env_id},
                "tool_schema": tool,
            }
            for tool in tools
        ]
    }


def agent_loop_config() -> list[dict[str, str]]:
    """verl's agent-loop config (``rollout.agent.agent_loop_config_path``) naming our loop."""
    return [{"name": AGENT_NAME, "_target_": "gymhub.trainers.verl_agent_loop.GymhubAgentLoop"}]


def gdpo_overrides(env_id: str) -> list[str]:
    """verl command-line overrides for its ``gdpo`` advantage estimator on gymhub's channels.

    Per group, verl then z-scores ``outcome`` and ``path_signal`` separately and adds them with
    weights ``[1, β]`` (β from the env's reward config): gymhub's ``norm(O) + β·norm(Φ)`` up to
    verl's sample std; then it whitens the result over the batch's tokens.
    """
    env = make(env_id)
    try:
        beta = env.reward_config.beta
    finally:
        env.close()
    return [
        "algorithm.adv_estimator=gdpo",
        "algorithm.gdpo_reward_keys=[outcome,path_signal]",
        f"algorithm.gdpo_reward_weights=[1.0,{beta!r}]",
    ]
