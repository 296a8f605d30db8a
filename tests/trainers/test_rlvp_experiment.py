"""RLVP during GRPO training: the per-step figures (flat-outcome groups, the share the path
signal rescued, violations per episode per rule) are computed right, logged in metrics.jsonl
and drawn in the reward curve; the experiments of scripts/rlvp_experiment.py (the same
functions docs/rlvp.md quotes) and the GPU script's CPU parts run."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from gymhub.trainers.rlvp_metrics import moving_mean, rlvp_stats, steps_to_success
from gymhub.types import PathEvent, RewardConfig, Trajectory, TrajectoryGroup, Verdict

ROOT = Path(__file__).resolve().parents[2]


def _verdict(outcome: float, penalties: int = 0, credits: int = 0) -> Verdict:
    events = [PathEvent(step=1, rule="policy-violation", kind="penalty", value=-1.0)] * penalties
    events += [PathEvent(step=1, rule="target-prefix", kind="progress", value=0.5)] * credits
    return Verdict.build(verifier="v", verifier_version="1", outcome=outcome, path_events=events)


def _group(verdicts: list[Verdict], beta: float = 0.5) -> TrajectoryGroup:
    trajectories = [
        Trajectory(id=f"t{i}", task_id="task", env_id="e", sample_index=i, verdict=v)
        for i, v in enumerate(verdicts)
    ]
    return TrajectoryGroup.build(trajectories, RewardConfig(beta=beta))


def test_rlvp_stats_counts_flat_groups_rescued_groups_and_violations() -> None:
    groups = [
        _group([_verdict(1.0), _verdict(0.0, penalties=2)]),  # outcomes differ
        _group([_verdict(0.0), _verdict(0.0, penalties=1)]),  # flat, the path differs: rescued
        _group([_verdict(1.0, credits=1), _verdict(1.0, credits=1)]),  # flat, path flat too
        _group([_verdict(0.0, penalties=3), _verdict(0.0)], beta=0.0),  # flat, β = 0: not rescued
    ]
    stats = rlvp_stats(groups, known_rules=["network-attempt"])
    assert stats["rlvp/flat_outcome_groups"] == 3 / 4
    assert stats["rlvp/rescued_groups"] == 1 / 3
    assert stats["rlvp/violations_per_episode"] == 6 / 8
    assert stats["rlvp/violations_per_episode/policy-violation"] == 6 / 8
    assert stats["rlvp/violations_per_episode/network-attempt"] == 0.0
    assert stats["rlvp/progress_per_episode"] == 2 / 8
    assert stats["rlvp/success"] == 3 / 8
    assert rlvp_stats([]) == {}


def test_steps_to_success_reads_the_moving_mean() -> None:
    history = [{"step": i + 1, "rlvp/success": s} for i, s in enumerate([0.1, 0.95, 0.5, 0.9, 0.95, 0.92])]
    assert moving_mean([1.0, 0.0, 0.5], 2) == [1.0, 0.5, 0.25]
    assert steps_to_success(history, 0.9, window=1) == 2
    assert steps_to_success(history, 0.9, window=3) == 6  # (0.9 + 0.95 + 0.92) / 3
    assert steps_to_success(history, 0.99, window=1) is None


def _experiment_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("rlvp_experiment", ROOT / "scripts" / "rlvp_experiment.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["rlvp_experiment"] = module  # dataclasses resolve their module by name
    spec.loader.exec_module(module)
    return module


def test_the_trainer_logs_the_rlvp_figures_and_draws_them(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("matplotlib")
    rlvp = _experiment_module()
    exp = rlvp.experiment("violations", steps=2, tasks_per_step=4, group_size=4, seeds=(0,))
    result = rlvp.run_arm(exp, exp.arms[1], 0, tmp_path)
    run = tmp_path / "beta=0.5-seed0"
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [1, 2]
    for row in rows:
        assert 0.0 <= row["rlvp/flat_outcome_groups"] <= 1.0 and 0.0 <= row["rlvp/rescued_groups"] <= 1.0
        # an untrained policy types letters past the answer cell: the rule fires and is logged
        per_rule = [v for k, v in row.items() if k.startswith("rlvp/violations_per_episode/")]
        assert row["rlvp/violations_per_episode/policy-violation"] > 0
        assert row["rlvp/violations_per_episode"] == pytest.approx(sum(per_rule))
    assert (run / "reward_curve.png").stat().st_size > 0
    assert result.steps == 2 and result.final_violations_per_episode > 0


def test_the_gpu_script_dry_run_builds_both_arms() -> None:
    done = subprocess.run(
        ["bash", str(ROOT / "scripts" / "rlvp_gpu.sh"), "--dry-run"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env={"PYTHON": sys.executable, "PATH": "/usr/bin:/bin", "OUT": "/tmp/rlvp_gpu_dry_run"},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    configs = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert [c["config"]["reward"]["beta"] for c in configs] == [0.0, 0.5]
    assert {c["config"]["env"] for c in configs} == {"terminal-v0"}
    assert {c["config"]["model"] for c in configs} == {"smollm2-135m"}
    assert {c["config"]["backend"] for c in configs} == {"vllm"}


def test_the_gpu_script_runs_both_arms_on_cpu_with_a_tiny_model(tmp_path: Path) -> None:
    """--tiny-cpu: the GPU comparison's code path (terminal-v0, both arms, the figures it
    prints) with hf sampling instead of vLLM, one step."""
    pytest.importorskip("torch")
    done = subprocess.run(
        ["bash", str(ROOT / "scripts" / "rlvp_gpu.sh"), "--tiny-cpu"],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
        env={"PYTHON": sys.executable, "PATH": "/usr/bin:/bin", "OUT": str(tmp_path)},
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    summary = json.loads((tmp_path / "terminal.json").read_text())
    assert [(r["arm"], r["steps"]) for r in summary["runs"]] == [("beta=0", 1), ("beta=0.5", 1)]
    for run in ("beta=0-seed0", "beta=0.5-seed0"):
        [row] = [json.loads(line) for line in (tmp_path / "terminal" / run / "metrics.jsonl").open()]
        assert "rlvp/violations_per_episode" in row and "rlvp/success" in row
    assert "violations_per_episode" in done.stdout


@pytest.mark.slow
def test_progress_credit_speeds_learning(tmp_path: Path) -> None:
    """Issue 18, part 2: steps to 0.9 success on the sparse toy-subgoal-v0, with the
    first-letter credit and without, three seeds each (a run that never gets there counts as
    the step budget + 1)."""
    pytest.importorskip("torch")
    rlvp = _experiment_module()
    exp = rlvp.EXPERIMENTS["progress"]
    results = rlvp.run_experiment("progress", tmp_path)

    def steps(arm: str) -> float:
        mine = [r.steps_to_success or exp.steps + 1 for r in results if r.arm == arm]
        return sum(mine) / len(mine)

    without, credit = (steps(arm.name) for arm in exp.arms)
    assert all(r.steps_to_success is not None for r in results if r.arm == exp.arms[1].name)
    assert credit < without, (credit, without)


@pytest.mark.slow
def test_violations_fall_and_success_holds(tmp_path: Path) -> None:
    """Issue 18, part 1: on toy-protected-v0, GRPO from the same tiny model and seeds with
    β = 0 and with β > 0, three seeds each: both learn the task (success ≥ 0.9 at the end)
    and β > 0 ends with at most a fifth of β = 0's violations per episode, seed by seed."""
    pytest.importorskip("torch")
    rlvp = _experiment_module()
    exp = rlvp.EXPERIMENTS["violations"]
    results = rlvp.run_experiment("violations", tmp_path)
    plain, penalised = ([r for r in results if r.arm == arm.name] for arm in exp.arms)
    assert exp.arms[0].beta == 0 < exp.arms[1].beta and len(plain) == len(penalised) == 3
    table = [
        (r.arm, r.seed, round(r.final_success, 3), round(r.final_violations_per_episode, 3)) for r in results
    ]
    for r in results:  # the untrained policy takes both paths: some episodes cross, some walk around
        assert 0.05 < r.history[0]["rlvp/violations_per_episode"] < 0.95, table
        assert r.final_success >= 0.9, table
    for a, b in zip(plain, penalised, strict=True):
        assert a.seed == b.seed and b.final_violations_per_episode <= a.final_violations_per_episode / 5, (
            table
        )
    summary = rlvp.summarise(results)
    assert (
        summary[exp.arms[1].name]["violations_per_episode"]
        <= summary[exp.arms[0].name]["violations_per_episode"] / 5
    )
    assert json.loads((tmp_path / "violations.json").read_text())["runs"][0]["arm"] == exp.arms[0].name
    assert (tmp_path / "violations.png").stat().st_size > 0
