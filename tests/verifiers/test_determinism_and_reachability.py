"""Verifiers are deterministic on stored trajectories; the reachability report is right."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

import gymhub
from gymhub import Message, Task
from gymhub._reverify import replay
from gymhub.policies.base import PolicyReply
from gymhub.registry import find_probe, load_probes
from gymhub.store import open_store
from gymhub.types import PathEvent, Trajectory, Verdict
from gymhub.verifiers.reachability import reachability_report

SANDBOXED = ("code-python-v0", "code-python-multiturn-v0", "terminal-v0")
CASES = [(s.id, None) for s in gymhub.list_envs()] + [(e, b) for e in SANDBOXED for b in ("bwrap", "docker")]


@pytest.mark.parametrize("env_id,backend", CASES)
def test_every_verifier_gives_byte_identical_verdicts_20_times(
    env_id: str, backend: str | None, tmp_path: Path
) -> None:
    from backends import require

    if backend:
        require(backend)
    kwargs = {"sandbox": backend} if backend else {}
    store = open_store(str(tmp_path / "d.db"))
    env = gymhub.make(env_id, **kwargs)
    tasks = env.tasks[:3]
    solutions = sorted(tasks[0].hidden.get("solutions", {}))
    variants = [*solutions, *[p.name for p in load_probes(env_id) if not p.slow][:2]]
    for variant in variants:
        store.create_run(
            variant, env_id=env_id, policy=variant, split="train", group_size=1, seed=0, tasks=tasks
        )
        gymhub.rollout(
            env_id, f"reference:{variant}", tasks=tasks, store=store, run_id=variant, env_kwargs=kwargs
        )
    stored = [t for v in variants for t in store.load_trajectories(v)]
    assert len(stored) == len(variants) * 3
    assert all(t.status == "ok" for t in stored), [t.error for t in stored if t.error]

    async def verdicts_20_times(t: Trajectory) -> set[str]:
        return {(await replay(env, t)).model_dump_json() for _ in range(20)}  # type: ignore[union-attr]

    for t in stored:
        assert asyncio.run(verdicts_20_times(t)) == {t.verdict.model_dump_json()}  # type: ignore[union-attr]


@pytest.mark.parametrize("env_id", SANDBOXED)
def test_the_same_actions_give_the_same_verdict_on_every_backend(env_id: str) -> None:
    """local, bwrap and docker: byte-identical verdicts (and digests) for the same actions."""
    from backends import BACKENDS, require

    for backend in BACKENDS:
        require(backend)
    verdicts: dict[str, list[str]] = {}
    for backend in BACKENDS:
        env = gymhub.make(env_id, sandbox=backend)
        out = verdicts.setdefault(backend, [])
        for task in env.tasks[:2]:
            for variant in sorted(task.hidden.get("solutions", {}))[:3]:
                env.reset(options={"task_id": task.id})
                info: dict = {}
                for action in task.hidden["solutions"][variant]:
                    *_, terminated, truncated, info = env.step(action)
                    if terminated or truncated:
                        break
                else:
                    *_, info = env.finish({"role": "assistant", "content": ""})
                out.append(info["verdict"].model_dump_json())
        env.close()
    assert verdicts["bwrap"] == verdicts["local"]
    assert verdicts["docker"] == verdicts["local"]


class Alternating:
    """Plays `first` on even episodes and `second` on odd ones (concurrency 1: deterministic)."""

    id = "alternating"

    def __init__(self, first: str, second: str) -> None:
        self.names, self.count = (first, second), 0

    def for_episode(self, task: Task) -> Alternating:
        name = self.names[self.count % 2]
        self.count += 1
        probe = find_probe(task.env_id, name)
        self.script = probe.actions(task) if probe else task.hidden["solutions"][name]
        return self

    async def act(
        self, messages: list[Message], tools: list[dict], *, seed: int | None = None
    ) -> PolicyReply:
        return PolicyReply(gymhub.env.message_from_openai(self.script[0]))

    async def aclose(self) -> None:
        pass


def test_report_on_a_real_run_where_phi_recovers_flat_groups(tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    store = open_store(str(db))
    env = gymhub.make("code-python-v0")
    store.create_run(
        "mix", env_id="code-python-v0", policy="alt", split="train", group_size=2, seed=0, tasks=env.tasks[:4]
    )
    # wrong (O=0, Φ=0) and os-exit (O=0, Φ=-1): every group is flat in O, Φ separates it
    gymhub.rollout(
        "code-python-v0",
        Alternating("wrong", "os-exit"),
        tasks=env.tasks[:4],
        group_size=2,
        store=store,
        run_id="mix",
    )
    report = reachability_report(store.load_trajectories("mix"))["code-python-v0"]
    assert report["groups"] == 4 and report["zero_variance_groups"] == 1.0 and report["recovered"] == 1.0
    assert report["rule_rates"] == {"exit-call": 0.5}
    assert report["corr_phi_outcome"] is None  # O is constant
    cli = subprocess.run(
        [sys.executable, "-m", "gymhub", "rlvp-report", "mix", "--db", str(db), "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(cli.stdout)["code-python-v0"] == report


def _t(task: str, k: int, outcome: float, events: list[tuple[str, float]]) -> Trajectory:
    path = tuple(
        PathEvent(step=1, rule=r, kind="penalty" if v < 0 else "progress", value=v) for r, v in events
    )
    verdict = Verdict.build(verifier="v", verifier_version="1", outcome=outcome, path_events=path)
    return Trajectory(id=f"{task}{k}", task_id=task, env_id="e", sample_index=k, verdict=verdict)


def test_report_by_hand() -> None:
    trajs = [
        _t("a", 0, 1.0, [("p", 0.5)]),
        _t("a", 1, 0.0, []),  # outcome varies
        _t("b", 0, 0.0, [("x", -1.0)]),
        _t("b", 1, 0.0, []),  # flat, Φ varies
        _t("c", 0, 0.0, []),
        _t("c", 1, 0.0, []),  # flat, Φ flat
    ]
    r = reachability_report(trajs)["e"]
    assert r["groups"] == 3
    assert r["zero_variance_groups"] == pytest.approx(2 / 3, abs=1e-6)
    assert r["recovered"] == 0.5
    assert r["rule_rates"] == {"p": pytest.approx(1 / 6, abs=1e-6), "x": pytest.approx(1 / 6, abs=1e-6)}
    # O = [1,0,0,0,0,0], Φ = [.5,0,-1,0,0,0]; mean O = 1/6, mean Φ = -1/12
    # dO = [5/6, -1/6 x5], dΦ = [7/12, 1/12, -11/12, 1/12, 1/12, 1/12]
    # Σ dO·dΦ = 35/72 + (-1/6)(-7/12) = 7/12;  Σ dO² = 5/6;  Σ dΦ² = 174/144 = 29/24
    assert r["corr_phi_outcome"] == pytest.approx((7 / 12) / (5 / 6 * 29 / 24) ** 0.5, abs=1e-6)
