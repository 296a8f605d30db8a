"""gymhub environments in TRL's ``GRPOTrainer`` (TRL >= 1.0; checked against TRL 1.16).

Five pieces, each usable alone::

    from gymhub.trainers import trl as gymhub_trl

    args = GRPOConfig(..., scale_rewards="none")  # TRL then uses gymhub's advantages as they are
    trainer = GRPOTrainer(
        model=...,
        args=args,
        train_dataset=gymhub_trl.dataset("toy-letters-v0"),                 # prompt + task_id columns
        reward_funcs=[gymhub_trl.advantage_func("toy-letters-v0", args)],   # norm(O) + β·norm(Φ)
    )

* :func:`dataset` — a ``datasets.Dataset`` with the env's tasks: ``prompt`` (the chat the
  policy sees), ``task_id`` and ``env_id`` (TRL forwards extra columns to reward functions).
* :func:`advantage_func` — one reward function, ``gymhub_advantage``, whose value is gymhub's
  GRPO advantage of the completion within its group (:meth:`~gymhub.types.RewardConfig.combine`).
  TRL takes rewards, not advantages, and turns them into ``r - mean_group(r)`` (divided by the
  group's std unless ``scale_rewards="none"``); gymhub's advantages have group mean 0, so with
  ``scale_rewards="none"`` TRL's advantage *is* gymhub's (see docs/integrations.md).
* :func:`reward_funcs` — the verifier's two channels as two reward functions,
  ``gymhub_outcome`` and ``gymhub_path_signal`` (weight them with ``reward_weights=[1, β]``);
  TRL then normalises their weighted sum, not each channel (docs/integrations.md says how).
  Every reward function here shares one verification per completion (a cached
  :class:`~gymhub._scoring.CompletionScorer`), and reads the verdict directly when the rollout
  already produced it (``environments`` from :func:`environment_factory`, or ``gymhub_verdict``
  from :func:`rollout_func`).
* :func:`environment_factory` — a class for TRL's multi-turn tool loop: one method per env
  tool, ``reset(**row)`` starting the row's task; the final answer is stepped into the env by
  the reward function, so the verdict reads the episode's real final state.
* :func:`rollout_func` — gymhub drives the whole multi-turn episode with the trainer's own
  model (token in, token out), sampling with the trainer's temperature / top-p / top-k, its
  ``max_completion_length`` as the episode's token budget and seeds that follow ``args.seed``;
  it returns prompt ids, completion ids, the sampler's log-probs and ``env_mask`` (0 on env
  tokens), which TRL uses as the loss mask, plus each episode's verdict and gymhub advantage.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from gymhub._rollout_engine import arollout
from gymhub._scoring import CompletionScorer
from gymhub._token_episodes import token_episode
from gymhub._tool_calls import tool_call_message
from gymhub.env import Env
from gymhub.errors import GymhubError
from gymhub.policies.hf_policy import HFPolicy
from gymhub.registry import make
from gymhub.trainers.grpo import cut_episode
from gymhub.types import Message, RewardConfig, Task, TrajectoryGroup, Verdict, content_hash

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


def _verdicts(scorer: CompletionScorer, completions: list[Any], kwargs: dict[str, Any]) -> list[Verdict]:
    """The verdict of each completion: from the rollout, the tool environment, or one verification."""
    if kwargs.get("gymhub_verdict") is not None:  # from rollout_func: already verified
        return [Verdict.model_validate_json(v) for v in kwargs["gymhub_verdict"]]
    environments = kwargs.get("environments")
    if environments and all(isinstance(e, GymhubToolEnvironment) for e in environments):
        return [e._end_episode(c) for e, c in zip(environments, completions, strict=True)]
    task_ids = kwargs.get("task_id")
    if task_ids is None:
        raise GymhubError("the dataset needs a task_id column: build it with gymhub_trl.dataset()")
    return scorer.score_many(list(zip(task_ids, completions, strict=True)))


def reward_funcs(env_id: str, *, scorer: CompletionScorer | None = None) -> list[RewardFunc]:
    """TRL reward functions for the verifier's two channels: outcome, then path signal."""
    scorer = scorer or CompletionScorer(env_id)

    def gymhub_outcome(prompts: list[Any], completions: list[Any], **kwargs: Any) -> list[float | None]:
        return [v.outcome for v in _verdicts(scorer, completions, kwargs)]

    def gymhub_path_signal(prompts: list[Any], completions: list[Any], **kwargs: Any) -> list[float | None]:
        return [v.path_signal for v in _verdicts(scorer, completions, kwargs)]

    return [gymhub_outcome, gymhub_path_signal]


def advantage_func(env_id: str, args: Any, *, scorer: CompletionScorer | None = None) -> RewardFunc:
    """A TRL reward function, ``gymhub_advantage``: gymhub's GRPO advantage of each completion.

    ``args`` is the trainer's ``GRPOConfig``; it must have ``scale_rewards="none"`` and the
    default ``multi_objective_aggregation`` (``"sum_then_normalize"``), and this must be the
    only reward function, so that TRL's advantage ``r - mean_group(r)`` equals the value given
    here. A group is ``args.num_generations`` consecutive completions of one task, as TRL's
    sampler lays them out; each process must hold whole groups (a group TRL splits across
    processes is refused). The group's verdicts go through the env's
    :meth:`~gymhub.types.RewardConfig.combine`; with :func:`rollout_func` its advantages arrive
    ready (``gymhub_advantage``). The mean outcome and path signal are logged as
    ``gymhub/outcome`` and ``gymhub/path_signal``.
    """
    if getattr(args, "scale_rewards", "none") != "none":
        raise GymhubError(
            "gymhub_advantage needs GRPOConfig(scale_rewards='none'): TRL would divide gymhub's "
            "advantages by their group std a second time"
        )
    if getattr(args, "multi_objective_aggregation", "sum_then_normalize") != "sum_then_normalize":
        raise GymhubError(
            "gymhub_advantage needs GRPOConfig(multi_objective_aggregation='sum_then_normalize')"
        )
    group_size = int(args.num_generations)
    if getattr(args, "num_generations_eval", None) not in (None, group_size):
        raise GymhubError("gymhub_advantage needs num_generations_eval unset or equal to num_generations")
    scorer = scorer or CompletionScorer(env_id)
    reward = scorer.reward_config

    def gymhub_advantage(prompts: list[Any], completions: list[Any], **kwargs: Any) -> list[float | None]:
        verdicts = _verdicts(scorer, completions, kwargs)
        if kwargs.get("gymhub_advantage") is not None:  # from rollout_func: the engine's groups
            advantages = [float(a) for a in kwargs["gymhub_advantage"]]
        else:
            advantages = _group_advantages(reward, verdicts, kwargs.get("task_id"), group_size)
        log_metric = kwargs.get("log_metric")
        if log_metric is not None and verdicts:
            log_metric("gymhub/outcome", math.fsum(v.outcome for v in verdicts) / len(verdicts))
            log_metric("gymhub/path_signal", math.fsum(v.path_signal for v in verdicts) / len(verdicts))
        return list(advantages)

    return gymhub_advantage


def _group_advantages(
    reward: RewardConfig, verdicts: list[Verdict], task_ids: list[str] | None, group_size: int
) -> list[float]:
    """``RewardConfig.combine`` over each run of ``group_size`` consecutive completions of one task."""
    if task_ids is None:
        raise GymhubError("the dataset needs a task_id column: build it with gymhub_trl.dataset()")
    if len(verdicts) % group_size:
        raise GymhubError(
            f"this process holds {len(verdicts)} completions, not whole groups of {group_size}: make "
            "per_device_train_batch_size × steps_per_generation a multiple of num_generations"
        )
    advantages: list[float] = []
    for start in range(0, len(verdicts), group_size):
        if len(set(task_ids[start : start + group_size])) != 1:
            raise GymhubError(f"completions {start}..{start + group_size - 1} are not one task's group")
        advantages += reward.combine(verdicts[start : start + group_size])[1]
    return advantages


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
        action = tool_call_message((f"call_{self._calls}", name, arguments))
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
            return Message(role="assistant", content=m.get("content") or "")
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


def trainer_policy(trainer: Any) -> HFPolicy:
    """The gymhub policy that samples as ``trainer`` would: its model, temperature, top-p,
    top-k, and ``max_completion_length`` as each episode's token budget (env tokens included).

    TRL scores the tokens at ``args.temperature`` when it computes the loss, so the sampler
    must draw at that temperature; sampling settings gymhub's sampler does not implement are
    refused rather than silently ignored.
    """
    if trainer.min_p is not None or trainer.repetition_penalty != 1.0 or trainer.args.generation_kwargs:
        raise GymhubError(
            "gymhub's rollout_func samples with temperature, top_p and top_k only: unset min_p, "
            "repetition_penalty and generation_kwargs"
        )
    model = trainer.accelerator.unwrap_model(trainer.model)
    budget = int(trainer.max_completion_length)
    return HFPolicy(
        "trainer",
        model=model,
        tokenizer=trainer.processing_class,
        temperature=float(trainer.temperature),
        top_p=float(trainer.top_p),
        top_k=int(trainer.top_k or 0),
        max_new_tokens=budget,
        max_episode_tokens=budget,
        device=str(next(model.parameters()).device),
    )


def rollout_seed(trainer: Any, group: int = 0) -> int:
    """The rollout engine's run seed for the ``group``-th group of the trainer's current batch.

    It follows ``args.seed``, the step, the process and train / eval, so a run is reproducible
    from its config, and no two groups of a run (the same task drawn twice included) share seeds.
    """
    key = {
        "seed": trainer.args.seed,
        "step": trainer.state.global_step,
        "process": trainer.accelerator.process_index,
        "mode": "train" if trainer.model.training else "eval",
        "group": group,
    }
    return int(content_hash(key, 15), 16)


def rollout_func(env_id: str, **env_kwargs: Any) -> Callable[..., Any]:
    """A TRL ``rollout_func``: gymhub plays each episode with the trainer's model.

    TRL hands each process its prompts with every prompt repeated ``num_generations`` times
    (``num_generations_eval`` in evaluation); each run of copies is one group, played through
    the rollout engine by :func:`trainer_policy` with seeds from :func:`rollout_seed`. Per
    episode it returns ``prompt_ids``, ``completion_ids`` (all turns, as sampled, cut to
    ``max_completion_length``), ``logprobs`` (the sampler's, 0.0 on env tokens), ``env_mask``
    (1 on sampled tokens), ``gymhub_verdict`` (JSON; :func:`reward_funcs` reads it instead of
    verifying again) and ``gymhub_advantage`` (the group's advantages from the env's
    ``RewardConfig``; :func:`advantage_func` passes them to TRL).
    """
    env = make(env_id, **env_kwargs)
    by_prompt = {_prompt_key([m.to_openai() for m in env.initial_messages(t)]): t for t in env.all_tasks}
    env.close()

    def rollout(prompts: list[Any], trainer: Any) -> dict[str, list[Any]]:
        policy = trainer_policy(trainer)
        model = policy.model
        group_size = trainer.num_generations if trainer.model.training else trainer.num_generations_eval
        tasks = _group_tasks([by_prompt.get(_prompt_key(p)) for p in prompts], group_size)
        seeds = [rollout_seed(trainer, i) for i in range(len(tasks))]
        was_training = model.training
        model.eval()
        try:
            groups = asyncio.run(_play(env_id, env_kwargs, policy, tasks, group_size, seeds))
        finally:
            model.train(was_training)
        out: dict[str, list[Any]] = {
            key: []
            for key in (
                "prompt_ids",
                "completion_ids",
                "logprobs",
                "env_mask",
                "gymhub_verdict",
                "gymhub_advantage",
            )
        }
        for group in groups:
            for t, advantage in zip(group.trajectories, group.advantages, strict=True):
                if t.status != "ok" or t.verdict is None:
                    raise GymhubError(f"episode of task {t.task_id} failed: {t.error}")
                record = cut_episode(token_episode(t), policy.max_new_tokens)
                out["prompt_ids"].append(record.prompt_ids)
                out["completion_ids"].append(record.completion_ids)
                out["logprobs"].append(record.logprobs)
                out["env_mask"].append(record.loss_mask)
                out["gymhub_verdict"].append(t.verdict.model_dump_json())
                out["gymhub_advantage"].append(advantage)
        return out

    return rollout


def _group_tasks(tasks: list[Task | None], group_size: int) -> list[Task]:
    """The task of each group of ``group_size`` consecutive prompts."""
    if any(t is None for t in tasks):
        raise GymhubError("a prompt is not one of the env's tasks: build it with gymhub_trl.dataset()")
    if len(tasks) % group_size:
        raise GymhubError(f"{len(tasks)} prompts are not whole groups of {group_size}")
    groups: list[Task] = []
    for start in range(0, len(tasks), group_size):
        chunk = tasks[start : start + group_size]
        if any(t is not chunk[0] for t in chunk):
            raise GymhubError(f"prompts {start}..{start + group_size - 1} are not one task's copies")
        groups.append(chunk[0])  # type: ignore[arg-type]
    return groups


async def _play(
    env_id: str, env_kwargs: dict[str, Any], policy: HFPolicy, tasks: list[Task], size: int, seeds: list[int]
) -> list[TrajectoryGroup]:
    played: list[TrajectoryGroup] = []
    for task, seed in zip(tasks, seeds, strict=True):  # one group at a time; its G episodes batched
        async for group in arollout(
            env_id, policy, tasks=[task], group_size=size, concurrency=size, seed=seed, env_kwargs=env_kwargs
        ):
            played.append(group)
    return played


def _prompt_key(prompt: Any) -> str:
    if isinstance(prompt, str):
        return prompt
    return json.dumps([[m.get("role"), m.get("content")] for m in prompt])
