"""gymhub trajectories as ART (OpenPipe) ``Trajectory`` / ``TrajectoryGroup`` objects
(checked against openpipe-art 0.5.18).

ART trains on the assistant turns it receives as OpenAI ``Choice`` objects; every policy turn
becomes one, carrying the sampler's log-probs when the policy recorded them, and the other
turns stay plain chat messages. The verdict's channels, the combined reward and per-rule path
signals go to ``metrics``, the provenance (task, env, verifier, digest) to ``metadata``.

ART takes a reward per trajectory and computes its advantage as ``reward - mean_group(reward)``,
divided by the group's std unless the backend's ``train(..., scale_rewards=False)``. So by
default (``reward="advantage"``) each trajectory's reward is gymhub's GRPO advantage from the
group (:meth:`~gymhub.types.RewardConfig.combine`, already in ``TrajectoryGroup.advantages``):
its group mean is 0, and with ``scale_rewards=False`` ART's advantage is gymhub's::

    groups = gymhub.rollout("mcp-tools-v0", policy, tasks=8, group_size=4)
    await backend.train(model, [to_art_group(g) for g in groups], scale_rewards=False)

``reward="combined"`` (outcome + β·path signal) or ``"outcome"`` hand ART a scalar reward
instead, which ART then normalises as one number (docs/integrations.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from gymhub.errors import GymhubError
from gymhub.registry import make
from gymhub.types import Trajectory, TrajectoryGroup, Turn, combined_reward

if TYPE_CHECKING:
    import art

RewardMode = Literal["advantage", "combined", "outcome"]


def import_art() -> Any:
    """``import art``, undoing its transformers patch when that patch does not fit.

    openpipe-art 0.5.18 replaces ``transformers.masking_utils._preprocess_mask_arguments`` on
    import with a wrapper written for an older signature; under transformers 5.24 every
    ``generate`` call in the process then fails. gymhub keeps the original when the
    signatures differ, so converting trajectories never breaks the caller's model.
    """
    import inspect

    masking_utils: Any
    try:
        from transformers import masking_utils
    except ImportError:
        masking_utils = None
    original = getattr(masking_utils, "_preprocess_mask_arguments", None)
    import art

    patched = getattr(masking_utils, "_preprocess_mask_arguments", None)
    if original is not None and patched is not None and patched is not original:
        if inspect.signature(patched).parameters.keys() != inspect.signature(original).parameters.keys():
            masking_utils._preprocess_mask_arguments = original
    return art


def _choice(turn: Turn, tokenizer: Any | None) -> Any:
    from openai.types.chat.chat_completion import Choice, ChoiceLogprobs
    from openai.types.chat.chat_completion_message import ChatCompletionMessage
    from openai.types.chat.chat_completion_token_logprob import ChatCompletionTokenLogprob

    message = turn.messages[0].to_openai()
    logprobs = None
    if turn.logprobs is not None and tokenizer is not None:
        content = []
        for token_id, lp in zip(turn.token_ids, turn.logprobs, strict=True):
            text = tokenizer.decode([token_id])
            content.append(
                ChatCompletionTokenLogprob(
                    token=f"token_id:{token_id}", bytes=list(text.encode()), logprob=lp, top_logprobs=[]
                )
            )
        logprobs = ChoiceLogprobs(content=content)
    return Choice(
        finish_reason="tool_calls" if message.get("tool_calls") else "stop",
        index=0,
        message=ChatCompletionMessage.model_validate({"role": "assistant", **message}),
        logprobs=logprobs,
    )


def to_art_trajectory(
    trajectory: Trajectory,
    *,
    reward: RewardMode = "combined",
    beta: float | None = None,
    tools: list[dict[str, Any]] | None = None,
    tokenizer: Any | None = None,
    advantage: float | None = None,
) -> art.Trajectory:
    """One gymhub trajectory as an ``art.Trajectory``.

    ``beta`` defaults to the env's reward config; ``tools`` to the env's tool schemas. With a
    ``tokenizer``, recorded log-probs are attached to each assistant ``Choice`` (ART's
    ``token_id:N`` form, so no re-tokenisation is needed to line them up). ``reward="advantage"``
    needs the trajectory's ``advantage`` in its group (:func:`to_art_group` passes it).
    """
    if reward == "advantage" and advantage is None:
        raise GymhubError("reward='advantage' needs the group's advantage: use to_art_group()")
    art = import_art()

    if tools is None or beta is None:
        env = make(trajectory.env_id)
        tools = env.tools() if tools is None else tools
        beta = env.reward_config.beta if beta is None else beta
        env.close()
    verdict = trajectory.verdict
    outcome = verdict.outcome if verdict else 0.0
    signal = verdict.path_signal if verdict else 0.0
    items: list[Any] = []
    for turn in trajectory.turns:
        if turn.source == "policy":
            items.append(_choice(turn, tokenizer))
        else:
            items.extend(m.to_openai() for m in turn.messages)
    combined = combined_reward(outcome, signal, beta)
    metrics: dict[str, float | int | bool] = {
        "outcome": outcome,
        "path_signal": signal,
        "reward": combined,
        "errored": trajectory.status != "ok" or (verdict is not None and verdict.errored),
        "truncated": trajectory.truncated,
        "turns": sum(1 for t in trajectory.turns if t.source == "policy"),
    }
    for event in verdict.path_events if verdict else ():
        key = f"rule/{event.rule}"
        metrics[key] = float(metrics.get(key, 0.0)) + event.value
    return art.Trajectory(
        messages_and_choices=items,
        tools=tools or None,
        reward={"advantage": advantage or 0.0, "combined": combined, "outcome": outcome}[reward],
        metrics=metrics,
        metadata={
            "trajectory_id": trajectory.id,
            "task_id": trajectory.task_id,
            "env_id": trajectory.env_id,
            "policy": trajectory.policy,
            "verifier_version": trajectory.verifier_version,
            "digest": verdict.digest if verdict else "",
        },
    )


def to_art_group(
    group: TrajectoryGroup, *, reward: RewardMode = "advantage", tokenizer: Any | None = None
) -> art.TrajectoryGroup:
    """A gymhub group as an ``art.TrajectoryGroup``; by default each reward is the trajectory's
    gymhub advantage in the group (train with ``scale_rewards=False``)."""
    art = import_art()

    if reward == "advantage" and len(group.advantages) != len(group.trajectories):
        raise GymhubError("the group carries no advantages: build it with TrajectoryGroup.build()")
    env = make(group.env_id)
    tools, beta = env.tools(), env.reward_config.beta
    env.close()
    return art.TrajectoryGroup(
        [
            to_art_trajectory(t, reward=reward, beta=beta, tools=tools, tokenizer=tokenizer, advantage=a)
            for t, a in zip(group.trajectories, group.advantages, strict=True)
        ],
        metadata={"task_id": group.task_id, "env_id": group.env_id},
    )
