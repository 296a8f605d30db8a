"""Re-verify stored trajectories: replay their actions in a fresh env, compare digests.

A verdict whose digest changed means the verifier, the env or the task set is not the one
that scored the trajectory (or is not deterministic) — exactly what a determinism audit is for.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from gymhub._episodes import replay_actions
from gymhub.env import Env
from gymhub.registry import make
from gymhub.types import Trajectory, Verdict


@dataclass(frozen=True)
class ReverifyResult:
    trajectory_id: str
    task_id: str
    stored: Verdict | None
    fresh: Verdict | None
    error: str | None = None

    @property
    def changed(self) -> bool:
        """Any field of the verdict differs (outcome, events, details, ...), not only the digest:
        an edited outcome with its digest left alone is a change too."""
        return bool(self.changed_fields)

    @property
    def changed_fields(self) -> list[str]:
        if self.stored is None or self.fresh is None:
            return [] if self.stored is self.fresh else ["verdict"]
        fresh = self.fresh.model_dump(mode="json")
        return [k for k, v in self.stored.model_dump(mode="json").items() if fresh.get(k) != v]


async def replay(env: Env, trajectory: Trajectory) -> Verdict | None:
    """Feed the trajectory's actions to ``env``, seeded as it was, and return the verdict at
    the end; None if they no longer end the episode (see :func:`replay_actions`)."""
    return await replay_actions(env, trajectory.task_id, trajectory.actions(), seed=trajectory.seed)


def reverify(trajectories: list[Trajectory]) -> list[ReverifyResult]:
    async def run() -> list[ReverifyResult]:
        envs: dict[str, Env] = {}
        results = []
        for t in trajectories:
            if t.status != "ok":
                continue
            try:
                env = envs.get(t.env_id) or envs.setdefault(t.env_id, make(t.env_id))
                fresh = await replay(env, t)
                results.append(ReverifyResult(t.id, t.task_id, t.verdict, fresh))
            except Exception as exc:  # report and go on: one bad record must not hide others
                results.append(
                    ReverifyResult(t.id, t.task_id, t.verdict, None, error=f"{type(exc).__name__}: {exc}")
                )
        for env in envs.values():
            await env.aclose()
        return results

    return asyncio.run(run())
