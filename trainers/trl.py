"""gymhub environments in TRL's ``GRPOTrainer`` (TRL >= 1.0; checked against TRL 1.16).

Four pieces, each usable alone::

    from gymhub.trainers import trl as gymhub_trl

    trainer = GRPOTrainer(
        model=...,
        train_dataset=gymhub_trl.dataset("toy-letters-v0"),      # prompt + task_id columns
        reward_funcs=gymhub_trl.reward_funcs("toy-letters-v0"),  # outcome, path signal
    )

* :func:`dataset` — a ``datasets.Dataset`` with the env's tasks: ``prompt`` (the chat the
  policy sees), ``task_id`` and ``env_id`` (TRL forwards extra columns to reward functions).
* :func:`reward_funcs` — two TRL reward functions, ``gymhub_outcome`` and
  ``gymhub_path_signal`` (weight them with ``GRPOConfig.reward_weights``, e.g. ``[1, beta]``).
  They share one verification per completion (a cached :class:`~gymhub.scoring.CompletionScorer`),
  and read the verdict directly when the rollout already produced it (``environments`` from
  :func:`environment_factory`, or ``gymhub_verdict`` from :func:`rollout_func`).
* :func:`environment_factory` — a class for TRL's multi-turn tool loop: one method per env
  tool, ``reset(**row)`` starting the row's task; the final answer is stepped into the env by
  the reward function, so the verdict reads the episode's real final state.
* :func:`rollout_func` — gymhub drives the whole multi-turn episode with the trainer's own
  model (token in, token out) and returns prompt ids, completion ids, the sampler's log-probs
  and ``env_mask`` (0 on env tokens), which TRL uses as the loss mask.
"""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from gymhub.env import Env, message_from_openai
from gymhub.errors import GymhubError
from gymhub.policies.hf_policy import HFPolicy
from gymhub.registry import make
from gymhub.rollout_engine import arollout
from gymhub.scoring import CompletionScorer
from gymhub.token_episodes import token_episode
from gymhub.types import Message, Trajectory, Verdict

if TYPE_CHECKING:
    import datasets

RewardFunc = Callable[..., list[float | None]]


def dataset(env_id: str, split: str = "train", *, limit: int | None = None) -> datasets.Dataset:
    """The env's tasks of ``split`` as a TRL dataset (conversational ``prompt`` column)."""
    import datasets

    env = make(env_id, split=split)
    try:
        rows = [
            {
                "prompt": [m.to_openai() for m in env.initial_messages(task)],
                "task_id": task.id,
                "env_id": env_id,
            }
            for task in env.tasks[:limit]
        ]
    finally:
        env.close()
    if not rows:
        raise GymhubError(f"{env_id} has no {split} tasks")
    return datasets.Dataset.from_list(rows)


def reward_funcs(env_id: str, *, scorer: CompletionScorer | None = None) -> list[RewardFunc]:
    """TRL reward functions for the verifier's two channels: outcome, then path signal."""
    scorer = scorer or CompletionScorer(env_id)

    def verdicts(completions: list[Any], kwargs: dict[str, Any]) -> list[Verdict]:
        if kwargs.get("gymhub_verdict") is not None:  # from rollout_func: already verified
            return [Verdict.model_validate_json(v) for v in kwargs["gymhub_verdict"]]
        environments = kwargs.get("environments")
        if environments and all(isinstance(e, GymhubToolEnvironment) for e in environments):
            return [e._end_episode(c) for e, c in zip(environments, completions, strict=True)]
        task_ids = kwargs.get("task_id")
        if task_ids is None:
            raise GymhubError("the dataset needs a task_id column: build it with gymhub_trl.dataset()")
        return scorer.score_many(list(zip(task_ids, completions, strict=True)))

    def gymhub_outcome(prompts: list[Any], completions: list[Any], **kwargs: Any) -> list[float | None]:
        return [v.outcome for v in verdicts(completions, kwargs)]

    def gymhub_path_signal(prompts: list[Any], completions: list[Any], **kwargs: Any) -> list[float | None]:
        return [v.path_signal for v in verdicts(completions, kwargs)]

    return [gymhub_outcome, gymhub_path_signal]


# ---------------------------------------------------------------- multi-turn tool use

_JSON_TYPES: dict[str, Any] = {
    "string": str,
    "integer": int,
    "number": float,
    "boolean": bool,
    "array": list,
    "object": dict,
}


class GymhubToolEnvironment:
    """Base of the classes :func:`environment_factory` builds; one instance per rollout.

    Only the env's tools are public methods (TRL exposes every public method as a tool).
    """

    env_id: str = ""
    env_kwargs: dict[str, Any] = {}  # noqa: RUF012 - set per generated subclass

    def __init__(self) -> None:
        self.env: Env = make(self.env_id, **self.env_kwargs)
        self.verdict: Verdict | None = None
        self._calls = 0

    def reset(self, **row: Any) -> None:
        """Start the row's task (``task_id`` column); the prompt is already in the row."""
        self.env.reset(options={"task_id": row["task_id"]})
        self.verdict = None
        return None

    def _call(self, name: str, arguments: dict[str, Any]) -> str:
        if self.verdict is not None:
            return "error: the episode is over"
        self._calls += 1
        call = {"id": f"call_{self._calls}", "type": "function"}
        call["function"] = {"name": name, "arguments": json.dumps(arguments)}  # type: ignore[assignment]
        action = {"role": "assistant", "content": "", "tool_calls": [call]}
        observation, _, terminated, truncated, info = self.env.step(action)
        if terminated or truncated:
            self.verdict = info["verdict"]
        return observation

    def _end_episode(self, completion: Any) -> Verdict:
        """Step the final answer (the last assistant message) and return the verdict."""
        if self.verdict is None:
            *_, info = self.env.finish(_last_assistant(completion))  # the agent stopped: the end
            self.verdict = info["verdict"]
        return self.verdict


def _last_assistant(completion: Any) -> Message:
    if isinstance(completion, str):
        return Message(role="assistant", content=completion)
    for m in reversed(completion):
        if m.get("role") == "assistant" and not m.get("tool_calls"):
            return message_from_openai({"role": "assistant", "content": m.get("content") or ""})
    return Message(role="assistant", content="")


def _tool_method(name: str, schema: dict[str, Any]) -> Callable[..., str]:
    """A method with the signature and Google docstring TRL / transformers read the schema from."""
    params = schema.get("parameters", {}).get("properties", {})
    required = set(schema.get("parameters", {}).get("required", []))

    def method(self: GymhubToolEnvironment, **arguments: Any) -> str:
        return self._call(name, arguments)

    parameters = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    annotations: dict[str, Any] = {"return": str}
    for arg, spec in params.items():
        kind = _JSON_TYPES.get(spec.get("type", "string"), str)
        default = inspect.Parameter.empty if arg in required else None
        parameters.append(
            inspect.Parameter(arg, inspect.Parameter.KEYWORD_ONLY, annotation=kind, default=default)
        )
        annotations[arg] = kind if arg in required else kind | None
    method.__name__ = method.__qualname__ = name
    method.__signature__ = inspect.Signature(parameters, return_annotation=str)  # type: ignore[attr-defined]
    method.__annotations__ = annotations
    lines = [schema.get("description") or name, "", "Args:"]
    lines += [f"    {arg}: {spec.get('description') or arg}" for arg, spec in params.items()]
    lines += ["", "Returns:", "    The environment's reply."]
    method.__doc__ = "\n".join(lines)
    return method


def environment_factory(env_id: str, **env_kwargs: Any) -> type[GymhubToolEnvironment]:
    """A class (TRL calls it once per rollout) whose public methods are the env's tools."""
    probe = make(env_id, **env_kwargs)
    try:
        tools = probe.tools()
    finally:
        probe.close()
    methods: dict[str, Any] = {"env_id": env_id, "env_kwargs": dict(env_kwargs)}
    for tool in tools:
        name = tool["function"]["name"]
        if name in ("reset", "get_reward") or name.startswith("_"):
            raise GymhubError(f"tool name {name!r} clashes with TRL's environment protocol")
        methods[name] = _tool_method(name, tool["function"])
    class_name = "".join(part.title() for part in env_id.replace("-", "_").split("_")) + "Environment"
    return type(class_name, (GymhubToolEnvironment,), methods)


# ---------------------------------------------------------------- gymhub drives the rollout


def rollout_func(env_id: str, *, max_new_tokens: int = 256, temperature: float = 1.0) -> Callable[..., Any]:
    """A TRL ``rollout_func``: gymhub plays each episode with the trainer's model.

    For every prompt it runs ``trainer.num_generations`` episodes of the prompt's task through
    the rollout engine with an :class:`~gymhub.policies.hf_policy.HFPolicy` wrapping
    ``trainer.model`` (multi-turn, tool calls, token in / token out). It returns, per episode,
    ``prompt_ids``, ``completion_ids`` (all turns, as sampled), ``logprobs`` (the sampler's,
    0.0 on env tokens), ``env_mask`` (1 on sampled tokens) and ``gymhub_verdict`` (JSON),
    which :func:`reward_funcs` reads instead of verifying again.
    """
    env = make(env_id)
    by_prompt = {_prompt_key([m.to_openai() for m in env.initial_messages(t)]): t for t in env.all_tasks}
    env.close()

    def rollout(prompts: list[Any], trainer: Any) -> dict[str, list[Any]]:
        model = trainer.accelerator.unwrap_model(trainer.model)
        policy = HFPolicy(
            "trainer",
            model=model,
            tokenizer=trainer.processing_class,
            max_new_tokens=max_new_tokens,
            temperature=temperature,
            device=str(next(model.parameters()).device),
        )
        # TRL hands each process its prompts already repeated num_generations times; the
        # engine samples a group per distinct prompt, in the order TRL expects.
        tasks: list[Any] = []
        counts: list[int] = []
        for prompt in prompts:
            task = by_prompt.get(_prompt_key(prompt))
            if task is None:
                raise GymhubError(
                    "a prompt is not one of the env's tasks: build it with gymhub_trl.dataset()"
                )
            if tasks and tasks[-1] is task:
                counts[-1] += 1
            else:
                tasks.append(task)
                counts.append(1)
        was_training = model.training
        model.eval()
        try:
            trajectories = asyncio.run(_play(env_id, policy, tasks, counts, trainer.state.global_step))
        finally:
            model.train(was_training)
        out: dict[str, list[Any]] = {
            "prompt_ids": [],
            "completion_ids": [],
            "logprobs": [],
            "env_mask": [],
            "gymhub_verdict": [],
        }
        for t in trajectories:
            if t.status != "ok" or t.verdict is None:
                raise GymhubError(f"episode of task {t.task_id} failed: {t.error}")
            record = token_episode(t)
            out["prompt_ids"].append(record.prompt_ids)
            out["completion_ids"].append(record.completion_ids)
            out["logprobs"].append(record.logprobs)
            out["env_mask"].append(record.loss_mask)
            out["gymhub_verdict"].append(t.verdict.model_dump_json())
        return out

    return rollout


async def _play(env_id: str, policy: Any, tasks: list[Any], counts: list[int], step: int) -> list[Trajectory]:
    trajectories: list[Trajectory] = []
    for task, count in zip(tasks, counts, strict=True):
        async for group in arollout(env_id, policy, tasks=[task], group_size=count, seed=step):
            trajectories.extend(group.trajectories)
    return trajectories


def _prompt_key(prompt: Any) -> str:
    if isinstance(prompt, str):
        return prompt
    return json.dumps([[m.get("role"), m.get("content")] for m in prompt])
