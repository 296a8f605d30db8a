"""Real stored runs for the report tests: toy-letters rolled out by a scripted policy whose
answer depends on the episode seed, so outcomes, path signals and pass@k vary per task."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymhub
from gymhub.policies.base import PolicyReply
from gymhub.store import open_store
from gymhub.types import Message, Task

TASKS = 6
G = 4


class SeedPolicy:
    """Answers a toy-letters task right, half right or wrong, chosen by the episode seed."""

    def __init__(self, id: str, modulus: int, task: Task | None = None) -> None:
        self.id, self.modulus, self.task = id, modulus, task

    def for_episode(self, task: Task) -> SeedPolicy:
        return SeedPolicy(self.id, self.modulus, task)

    async def act(
        self, messages: list[Message], tools: list[dict[str, Any]], *, seed: int | None = None
    ) -> PolicyReply:
        assert self.task is not None
        letter = self.task.hidden["letter"]
        wrong = "z" if letter != "z" else "a"
        choice = (seed or 0) % self.modulus
        text = {0: wrong * 8, 1: (letter + wrong) * 4}.get(choice, letter * 8)
        return PolicyReply(Message(role="assistant", content=text))

    async def aclose(self) -> None:
        pass


@dataclass(frozen=True)
class Runs:
    db: Path
    a: str
    b: str


def make_runs(db: Path) -> Runs:
    """Two runs of TASKS eval tasks x G samples of toy-letters, stored in ``db``."""
    store = open_store(str(db))
    try:
        for run_id, modulus in (("run-a", 3), ("run-b", 5)):
            gymhub.rollout(
                "toy-letters-v0",
                SeedPolicy(f"seed-mod-{modulus}", modulus),
                tasks=TASKS,
                group_size=G,
                split="eval",
                store=store,
                run_id=run_id,
            )
    finally:
        store.close()
    return Runs(db=db, a="run-a", b="run-b")
