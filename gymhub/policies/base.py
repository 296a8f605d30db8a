"""The policy protocol shared by every backend."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from gymhub.types import Message, Task


@dataclass(frozen=True)
class PolicyReply:
    """One assistant message, with what the sampler recorded when it produced it."""

    message: Message
    token_ids: tuple[int, ...] = ()
    logprobs: tuple[float, ...] | None = None
    prompt_token_ids: tuple[int, ...] | None = None
    timings: dict[str, float] = field(default_factory=dict)


@runtime_checkable
class Policy(Protocol):
    """Answers a chat. Model policies see only ``messages`` and ``tools``, never the task.

    ``for_episode`` is called once per episode; scripted policies (the reference) bind the
    task there, model policies return themselves.
    """

    id: str

    async def act(
        self, messages: list[Message], tools: list[dict[str, Any]], *, seed: int | None = None
    ) -> PolicyReply: ...

    def for_episode(self, task: Task) -> Policy: ...

    async def aclose(self) -> None: ...


class TransientPolicyError(Exception):
    """A failure worth retrying (HTTP 5xx, timeout, malformed reply)."""
