"""What the toy envs share: the single-reply shape (one reply, which ends the episode and is
the final state) and the RLVP toy envs' task builder, one task per letter and phrasing
(:func:`letter_tasks`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from gymhub.env import Env, EnvReply
from gymhub.types import Message, Task, content_split


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


class LetterTaskSpec(BaseModel):
    """One task of the RLVP toy envs: a capital letter, a phrasing that shows it, and the
    scripted replies (name -> one reply per turn) that go into ``hidden["solutions"]``."""

    model_config = ConfigDict(frozen=True)

    letter: str = Field(pattern="^[A-Z]$")
    phrasing: str
    solutions: dict[str, tuple[str, ...]]
    difficulty: Literal[1] = 1  # a task a tiny random-initialised model learns

    def task(self, env_id: str) -> Task:
        """The task; its split follows the content (the letter and its solutions), so all the
        phrasings of a letter fall in the same split."""
        hidden = {
            "letter": self.letter,
            "solutions": {
                name: [{"role": "assistant", "content": text} for text in replies]
                for name, replies in self.solutions.items()
            },
        }
        task = Task.create(env_id, "train", self.phrasing.format(c=self.letter), hidden)
        return task.model_copy(update={"split": content_split(hidden)})


def letter_tasks(
    env_id: str,
    letters: Iterable[str],
    phrasings: Iterable[str],
    solutions: Callable[[str, str], dict[str, str | list[str]]],
) -> list[Task]:
    """One task per letter × phrasing (``phrasing.format(c=letter)`` is the prompt), letter
    by letter. ``solutions(letter, wrong)`` names the scripted replies of a letter's tasks
    (``wrong`` is another letter: "Z", or "A" for "Z"): a string is one reply, a list one
    reply per turn."""
    specs = []
    for letter in letters:
        replies = solutions(letter, "Z" if letter != "Z" else "A")
        scripts = {name: (r,) if isinstance(r, str) else tuple(r) for name, r in replies.items()}
        specs += [LetterTaskSpec(letter=letter, phrasing=p, solutions=scripts) for p in phrasings]
    return [spec.task(env_id) for spec in specs]
