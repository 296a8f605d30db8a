"""``toy-letters-v0``: "say c" — the outcome is the fraction of reply characters equal to c.

In memory, no sandbox: the cheapest env there is, used to measure framework overhead and as a
task a tiny random-initialised model can learn in a few hundred GRPO steps.
"""

from __future__ import annotations

import string
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from gymhub.envs.toy.single_reply import SingleReplyEnv
from gymhub.types import Task, content_split
from gymhub.verifiers.base import BaseVerifier

# the letter ends every phrasing: the tiny model of the learning tests finds it in one place
PHRASINGS = ("say {c}", "Reply with the letter {c}", "Repeat the letter {c}", "Write several times: {c}")


class LettersSpec(BaseModel):
    """One "say c" task: a lowercase letter and a phrasing that asks for it."""

    model_config = ConfigDict(frozen=True)

    letter: str = Field(pattern="^[a-z]$")
    phrasing: str
    difficulty: Literal[1] = 1  # a task a tiny random-initialised model learns

    def task(self, env_id: str) -> Task:
        wrong = "z" if self.letter != "z" else "a"
        hidden = {
            "letter": self.letter,
            "solutions": {
                "reference": [{"role": "assistant", "content": self.letter * 8}],
                "wrong": [{"role": "assistant", "content": wrong * 8}],
                "half": [{"role": "assistant", "content": (self.letter + wrong) * 4}],
            },
        }
        task = Task.create(env_id, "train", self.phrasing.format(c=self.letter), hidden)
        return task.model_copy(update={"split": content_split(hidden)})


class LettersVerifier(BaseVerifier):
    id = "letters-fraction"
    version = "1.0.0"

    def check(self, task: Task, final_state: Any) -> tuple[float, dict[str, Any]]:
        reply: str = final_state.get("reply") or ""
        letter = task.hidden["letter"]
        hits = sum(1 for ch in reply if ch == letter)
        outcome = hits / len(reply) if reply else 0.0
        return round(outcome, 9), {
            "matching": hits,
            "length": len(reply),
            "bad_action_steps": final_state.get("bad_action_steps", []),
        }


class LettersEnv(SingleReplyEnv):
    def load_tasks(self) -> list[Task]:
        specs = [LettersSpec(letter=c, phrasing=p) for c in string.ascii_lowercase for p in PHRASINGS]
        return [spec.task(self.env_id) for spec in specs]

    def make_verifier(self) -> LettersVerifier:
        return LettersVerifier(self.rules)
