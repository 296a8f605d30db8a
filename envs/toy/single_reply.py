"""The shape both toy envs share: one reply, which ends the episode and is the final state."""

from __future__ import annotations

from typing import Any, ClassVar

from gymhub.env import Env, EnvReply
from gymhub.types import Message, Task


class SingleReplyEnv(Env):
    """The policy answers once; the verifier reads that reply (and the bad-action steps)."""

    family: ClassVar[str] = "toy"
    version: ClassVar[str] = "0.1.0"
    default_max_turns: ClassVar[int] = 1

    def __init__(self, **kwargs: Any) -> None:
        self._reply: str | None = None
        super().__init__(**kwargs)

    async def start_episode(self, task: Task) -> None:
        self._reply = None

    async def on_action(self, message: Message) -> EnvReply:
        self._reply = message.content
        return EnvReply([Message(role="user", content="ok")], done=True)

    async def final_state(self) -> dict[str, Any]:
        return {"reply": self._reply, "bad_action_steps": self.bad_action_steps}
