"""The scripted reference policy: plays a task's stored solution, or a named bad variant.

Variants (``reference``, ``wrong``, ``hack-exit``, ...) live in ``task.hidden["solutions"]``;
this is the only policy that reads the hidden part, by design: it exists to test envs and
verifiers (the reference must score 1, the wrong and hacking variants 0).
"""

from __future__ import annotations

from typing import Any

from gymhub.env import message_from_openai
from gymhub.errors import PolicyError
from gymhub.policies.base import PolicyReply
from gymhub.types import Message, Task


class ReferencePolicy:
    def __init__(self, variant: str = "reference") -> None:
        self.variant = variant or "reference"
        self.id = f"reference:{self.variant}"

    @classmethod
    def from_spec(cls, argument: str, **options: Any) -> ReferencePolicy:
        return cls(argument or options.get("variant", "reference"))

    def for_episode(self, task: Task) -> _ScriptedEpisode:
        """The task's stored solution of that name, else the env's reward-hack probe of that name."""
        from gymhub.registry import find_probe, load_probes

        solutions = task.hidden.get("solutions") or {}
        if self.variant in solutions:
            script = solutions[self.variant]
        elif (probe := find_probe(task.env_id, self.variant)) is not None:
            script = probe.actions(task)
        else:
            known = sorted(solutions) + [p.name for p in load_probes(task.env_id)]
            raise PolicyError(
                f"task {task.id} has no {self.variant!r} solution or probe; it has: {known or 'none'}"
            )
        return _ScriptedEpisode(self.id, [message_from_openai(m) for m in script])

    async def act(
        self, messages: list[Message], tools: list[dict[str, Any]], *, seed: int | None = None
    ) -> PolicyReply:
        raise PolicyError("the reference policy needs a task: call for_episode(task) first")

    async def aclose(self) -> None:
        pass


class _ScriptedEpisode:
    def __init__(self, policy_id: str, script: list[Message]) -> None:
        self.id = policy_id
        self._script = script
        self._next = 0

    def for_episode(self, task: Task) -> _ScriptedEpisode:
        return self

    async def act(
        self, messages: list[Message], tools: list[dict[str, Any]], *, seed: int | None = None
    ) -> PolicyReply:
        if self._next >= len(self._script):
            raise PolicyError(f"the {self.id} script has only {len(self._script)} actions")
        message = self._script[self._next]
        self._next += 1
        return PolicyReply(message=message)

    async def aclose(self) -> None:
        pass
