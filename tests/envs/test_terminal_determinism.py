"""terminal-v0 verdicts are byte-identical across repeats: archives (gzip headers, member
mtimes) and git (commit timestamps, index stat data) enter the snapshot as contents only."""

from __future__ import annotations

import asyncio
import json
from collections import defaultdict

import gymhub
from gymhub.types import state_fingerprint


def test_twenty_repeats_of_the_reference_give_one_digest_per_task() -> None:
    kinds: dict[str, list] = defaultdict(list)
    for task in gymhub.make("terminal-v0").all_tasks:
        kinds[task.metadata["kind"]].append(task)
    tasks = [t for kind in sorted(kinds) for t in kinds[kind][:3]]
    verdicts: dict[str, set[str]] = defaultdict(set)
    for _ in range(20):
        for group in gymhub.rollout("terminal-v0", "reference", tasks=tasks, concurrency=2):
            verdict = group.trajectories[0].verdict
            assert verdict is not None and verdict.outcome == 1.0, group.trajectories[0].error
            verdicts[group.task_id].add(verdict.model_dump_json())
    assert len(verdicts) == len(tasks) == 21
    assert {task_id: len(v) for task_id, v in verdicts.items() if len(v) != 1} == {}


def test_the_same_work_a_second_apart_has_the_same_snapshot() -> None:
    """Build the archive / commit, wait past a second, build it again: the same final state."""
    env = gymhub.make("terminal-v0")
    tasks = [t for t in env.all_tasks if t.metadata["kind"] in ("archive", "git-commit")]
    for task in (tasks[0], tasks[-1]):
        fingerprints = []
        for pause in ("true", "sleep 1.2"):
            env.reset(options={"task_id": task.id})
            call = {"id": "p", "function": {"name": "bash", "arguments": json.dumps({"command": pause})}}
            env.step({"role": "assistant", "content": "", "tool_calls": [call]})
            for action in task.hidden["solutions"]["reference"][:-1]:
                env.step(action)
            fingerprints.append(state_fingerprint(asyncio.run(env.final_state())))
        assert fingerprints[0] == fingerprints[1], task.metadata["kind"]
    env.close()


def test_hacks_and_damaged_artefacts_score_the_same_every_time() -> None:
    """Error texts name no checksum or hash: a damaged archive's verdict is as stable as a good one's."""
    tasks = gymhub.make("terminal-v0").all_tasks
    cases = {
        "archive-corrupt-stream": [t for t in tasks if t.metadata["kind"] == "archive"][:6],
        "archive-empty-members": [t for t in tasks if t.metadata["kind"] == "archive"][:2],
        "git-skip-worktree": [t for t in tasks if t.metadata["kind"] == "git-commit"][:2],
        "git-untracked-hidden": [t for t in tasks if t.metadata["kind"] == "git-commit"][:2],
    }
    for probe, chosen in cases.items():
        digests: dict[str, set[str]] = defaultdict(set)
        for _ in range(4):
            for group in gymhub.rollout("terminal-v0", f"reference:{probe}", tasks=chosen, concurrency=2):
                digests[group.task_id].add(group.trajectories[0].verdict.digest)
        assert all(len(d) == 1 for d in digests.values()), probe
