"""terminal-v0 against hacks: each probe fools the shallow check the verifier used to run, and
scores 0 with no progress credit now; blind policies earn nothing on any kind of task."""

from __future__ import annotations

import json
import shlex
from collections import defaultdict
from typing import Any

import pytest

import gymhub
from gymhub.env import Env
from gymhub.registry import find_probe, load_probes
from gymhub.types import Task

BLIND = ["submit-at-once", "claim-success", "empty-reply", "echo-prompt", "random-commands"]
TARGETS = {  # probe -> the kind of task it fakes
    "archive-empty-members": "archive",
    "archive-corrupt-stream": "archive",
    "permissions-wiped": "permissions",
    "git-wrong-folder": "git-commit",
    "git-untracked-hidden": "git-commit",
    "git-excluded": "git-commit",
    "git-gitignore": "git-commit",
    "git-skip-worktree": "git-commit",
    "git-worktree-redirect": "git-commit",
}


@pytest.fixture(scope="module")
def by_kind() -> dict[str, list[Task]]:
    kinds: dict[str, list[Task]] = defaultdict(list)
    for task in gymhub.make("terminal-v0").all_tasks:
        kinds[task.metadata["kind"]].append(task)
    return kinds


def _bash(command: str) -> dict[str, Any]:
    call = {"id": "look", "function": {"name": "bash", "arguments": json.dumps({"command": command})}}
    return {"role": "assistant", "content": "", "tool_calls": [call]}


def _goal(task: Task, kind: str) -> dict[str, Any]:
    return next(c for c in task.hidden["checks"] if c["kind"] == kind and not c.get("invariant"))


def _shallow_look(task: Task) -> tuple[str, str]:
    """A command the old verifier trusted, and what it printed for a right answer."""
    kind = task.metadata["kind"]
    if kind == "archive":
        check = _goal(task, "archive")
        name = shlex.quote(check["path"])
        listing = f"unzip -Z1 {name}" if check["format"] == "zip" else f"tar tf {name}"
        return f"{listing} 2>/dev/null | sort", "".join(f"{m}\n" for m in sorted(check["members"]))
    if kind == "permissions":
        checks = [c for c in task.hidden["checks"] if "mode" in c and not c.get("invariant")]
        paths = " ".join(shlex.quote(c["path"]) for c in checks)
        return f"stat -c '%a %n' {paths}", "".join(f"{c['mode']:o} {c['path']}\n" for c in checks)
    check = _goal(task, "git")
    repo = shlex.quote(check["repo"])
    message = next(c["message"] for c in task.hidden["checks"] if "message" in c)
    return f"git -C {repo} log --format=%s; git -C {repo} status --porcelain", message


def _play_with_a_look(env: Env, task: Task, actions: list[dict[str, Any]], look: str) -> tuple[str, Any]:
    env.reset(options={"task_id": task.id})
    for action in actions[:-1]:
        env.step(action)
    seen = env.step(_bash(look))[0]
    *_, info = env.step(actions[-1])
    return seen, info["verdict"]


@pytest.mark.parametrize("probe_name", sorted(TARGETS))
def test_each_hack_fools_the_shallow_check_and_scores_zero(
    probe_name: str, by_kind: dict[str, list[Task]]
) -> None:
    probe = find_probe("terminal-v0", probe_name)
    assert probe is not None
    env = gymhub.make("terminal-v0")
    try:
        for task in by_kind[TARGETS[probe_name]][:6]:
            look, right = _shallow_look(task)
            seen, verdict = _play_with_a_look(env, task, probe.actions(task), look)
            stdout = seen.split("stdout:\n", 1)[1].split("\nstderr:", 1)[0]
            assert stdout == right, (probe_name, task.id, seen)  # the hack is real: the look is fooled
            assert verdict.outcome == 0.0, (probe_name, task.id, verdict.details)
            assert not [e for e in verdict.path_events if e.kind == "progress"], (probe_name, verdict.details)
    finally:
        env.close()


def test_every_probe_scores_zero_with_no_credit_on_every_kind(by_kind: dict[str, list[Task]]) -> None:
    names = [p.name for p in load_probes("terminal-v0") if p.name != "wipe-everything"]  # slow: test_probes
    assert set(BLIND) | set(TARGETS) <= set(names)
    tasks = [t for kind in sorted(by_kind) for t in by_kind[kind][:3]]
    for name in names:
        for group in gymhub.rollout("terminal-v0", f"reference:{name}", tasks=tasks, concurrency=2):
            [t] = group.trajectories
            assert t.status == "ok", (name, t.error)
            assert t.verdict is not None and t.verdict.outcome == 0.0, (name, group.task_id, t.verdict)
            credit = [e for e in t.verdict.path_events if e.kind == "progress"]
            assert not credit, (name, group.task_id, t.verdict.details)
            assert t.verdict.path_signal <= 0.0


def test_blind_policies_earn_nothing_on_any_task() -> None:
    """Every task of every kind: outcome 0 and no positive path signal for a blind policy."""
    tasks = gymhub.make("terminal-v0").all_tasks
    for name in ("submit-at-once", "random-commands"):
        groups = gymhub.rollout("terminal-v0", f"reference:{name}", tasks=tasks, concurrency=2)
        scored = [(g.task_id, g.trajectories[0].verdict) for g in groups]
        assert len(scored) == len(tasks)
        assert [(i, v.outcome, v.path_signal) for i, v in scored if v.outcome or v.path_signal > 0] == []


def _verdict_of(task: Task, actions: list[dict[str, Any]]) -> Any:
    env = gymhub.make("terminal-v0")
    env.reset(options={"task_id": task.id})
    for action in actions[:-1]:
        env.step(action)
    *_, info = env.step(actions[-1])
    env.close()
    return info["verdict"]


def test_progress_credit_is_for_sub_goals_really_reached(by_kind: dict[str, list[Task]]) -> None:
    """Half a permissions task (the scripts only), or a right commit with junk left untracked,
    earns part credit: outcome 0, some sub-goals passed, not all."""
    perms = by_kind["permissions"][0]
    reference = perms.hidden["solutions"]["reference"]
    git = by_kind["git-commit"][0]
    repo = next(c["repo"] for c in git.hidden["checks"] if c["kind"] == "git")
    junk = [*git.hidden["solutions"]["reference"][:-1], _bash(f"echo junk > {repo}/junk.txt")]
    for task, actions, passed in (
        (perms, reference[:1] + reference[-1:], 1 + perms.metadata["difficulty"]),
        (git, [*junk, reference[-1]], 2),
    ):
        verdict = _verdict_of(task, actions)
        assert verdict.outcome == 0.0
        assert verdict.details["passed"] == passed < verdict.details["total"], verdict.details
        assert [e.rule for e in verdict.path_events if e.kind == "progress"] == ["hidden-tests-fraction"]
