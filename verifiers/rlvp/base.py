"""The rule protocol and what a rule may read."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from gymhub.types import Message, PathEvent, Task, Trajectory


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


class Rule:
    """A named penalty or progress rule; ``value`` is its base value, scaled by ``weight``."""

    id: ClassVar[str]
    kind: ClassVar[Literal["penalty", "progress"]]
    value: ClassVar[float]

    def __init__(self, weight: float = 1.0) -> None:
        self.weight = weight

    def evaluate(self, context: RuleContext) -> list[PathEvent]:
        raise NotImplementedError

    def event(self, step: int, evidence: str, scale: float = 1.0) -> PathEvent:
        value = round(self.value * self.weight * scale, 9) + 0.0
        return PathEvent(step=step, rule=self.id, kind=self.kind, value=value, evidence=evidence[:300])
