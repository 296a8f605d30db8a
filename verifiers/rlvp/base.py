"""The rule protocol and what a rule may read."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from gymhub.types import Message, PathEvent, Task, ToolCall, Trajectory


@dataclass(frozen=True)
class ToolStep:
    """One tool call of the policy, and the env's answer to it (if any)."""

    step: int
    call: ToolCall
    result: Message | None

    @property
    def failed(self) -> bool:
        return self.result is None or self.result.content.lstrip().lower().startswith("error")

    def arguments(self) -> dict[str, Any]:
        try:
            return self.call.parsed_arguments()
        except ValueError:
            return {}


@dataclass(frozen=True)
class RuleContext:
    """What a rule may read: the task, the trajectory, the final state and outcome details."""

    task: Task
    trajectory: Trajectory
    final_state: Any
    details: dict[str, Any]

    def policy_steps(self) -> Iterator[tuple[int, Message]]:
        """``(step, message)`` for each policy message; steps count from 1, as in ``env.step``."""
        step = 0
        for turn in self.trajectory.turns:
            if turn.source == "policy":
                step += 1
                for message in turn.messages:
                    yield step, message

    def tool_steps(self) -> list[ToolStep]:
        """Every tool call in order, paired with the env's reply (see :func:`pair_results`)."""
        out: list[ToolStep] = []
        step = 0
        turns = self.trajectory.turns
        for i, turn in enumerate(turns):
            if turn.source != "policy":
                continue
            step += 1
            replies = turns[i + 1].messages if i + 1 < len(turns) else ()
            calls = [call for message in turn.messages for call in message.tool_calls]
            results = pair_results(calls, [m for m in replies if m.role == "tool"])
            out.extend(ToolStep(step, call, result) for call, result in zip(calls, results, strict=True))
        return out


def pair_results(calls: list[ToolCall], results: list[Message]) -> list[Message | None]:
    """The result of each call: the one at the same position if it answers that id, else the
    only result with that id if the id is unique among both calls and results; else None (no
    result: the call counts as failed). Ids come from the policy, so a repeated id never lends
    one call's result to another."""
    paired: list[Message | None] = []
    for k, call in enumerate(calls):
        if k < len(results) and results[k].tool_call_id == call.id:
            paired.append(results[k])
            continue
        same = [r for r in results if r.tool_call_id == call.id]
        unique = len(same) == 1 and sum(c.id == call.id for c in calls) == 1
        paired.append(same[0] if unique else None)
    return paired


class Rule:
    """A named penalty or progress rule.

    ``value`` is the base value, scaled by ``weight``; ``defaults`` are the parameters a rule
    takes, overridable per env in ``registry.yaml``::

        rules:
          exit-call: 1.0                       # weight only
          forbidden-tool: {weight: 2.0, tools: [delete_customer]}
    """

    id: ClassVar[str]
    kind: ClassVar[Literal["penalty", "progress"]]
    value: ClassVar[float]
    defaults: ClassVar[dict[str, Any]] = {}

    def __init__(self, weight: float = 1.0, **params: Any) -> None:
        unknown = sorted(set(params) - set(self.defaults))
        if unknown:
            raise ValueError(
                f"rule {self.id!r} takes no parameter(s) {unknown}; "
                f"it takes {sorted(self.defaults) or 'none'}"
            )
        self.weight = weight
        self.params = {**self.defaults, **params}

    def evaluate(self, context: RuleContext) -> list[PathEvent]:
        raise NotImplementedError

    def event(self, step: int, evidence: str, scale: float = 1.0) -> PathEvent:
        value = round(self.value * self.weight * scale, 9) + 0.0
        return PathEvent(step=step, rule=self.id, kind=self.kind, value=value, evidence=evidence[:300])
