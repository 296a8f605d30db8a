"""The rg-* envs (every reasoning-gym dataset that meets the bar): registration, splits,
reference 1.0, constant answers at the floor, the generic hacks at 0, determinism.

check_env (with its blind-policy floor) runs on every registered env, these included, in
tests/test_env_contract.py, and the probes in tests/verifiers/test_probes.py.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import gymhub
from gymhub.envs.reasoning.datasets import DATASETS, REASONING_GYM_VERSION, DatasetInfo
from gymhub.envs.reasoning.env import EVAL_SEED_BASE
from gymhub.envs.reasoning.hacks import hack_replies
from gymhub.policies.blind import BLIND_FLOOR, sample_tasks
from gymhub.types import Task, Verdict

REGISTERED = [info for info in DATASETS.values() if info.registered]
CONSTANTS = ("", "0", "1", "yes", "no", "A", "True", "False")
ROOT = Path(__file__).resolve().parents[2]


def play(env: gymhub.Env, task: Task, reply: str) -> Verdict:
    env.reset(options={"task_id": task.id})
    *_, info = env.step(reply)
    return info["verdict"]


def test_importing_gymhub_and_making_an_rg_env_do_not_import_reasoning_gym() -> None:
    code = (
        "import sys, gymhub\n"
        "ids = [s.id for s in gymhub.list_envs() if s.family == 'reasoning']\n"
        "env = gymhub.make(ids[0])\n"
        "assert 'reasoning_gym' not in sys.modules, 'imported too early'\n"
        "env.reset(seed=0)\n"
        "assert 'reasoning_gym' in sys.modules\n"
        "print(len(ids))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert int(result.stdout) == len(REGISTERED)


def test_every_reasoning_gym_dataset_is_in_the_table_and_the_version_is_pinned() -> None:
    from importlib.metadata import version

    from reasoning_gym.factory import DATASETS as RG_DATASETS

    assert version("reasoning-gym") == REASONING_GYM_VERSION  # its __version__ attribute lags
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert f'reasoning = ["reasoning-gym=={REASONING_GYM_VERSION}"]' in pyproject
    assert re.search(r'"gymhub\[[^]]*\breasoning\b[^]]*\]"', pyproject), "the dev extra installs it"
    assert set(RG_DATASETS) == set(DATASETS)
    reasoning_ids = {s.id for s in gymhub.list_envs() if s.family == "reasoning"}
    assert reasoning_ids == {info.env_id for info in REGISTERED}
    assert len(REGISTERED) >= 50
    for info in DATASETS.values():
        assert info.scoring in ("exact", "checker")
        assert info.registered or len(info.left_out) > 10, info.name


def test_gymhub_list_filters_by_family() -> None:
    from typer.testing import CliRunner

    from gymhub._cli import app

    result = CliRunner().invoke(app, ["list", "--ids", "--family", "reasoning"])
    assert result.exit_code == 0, result.output
    assert sorted(result.output.split()) == sorted(info.env_id for info in REGISTERED)


@pytest.mark.parametrize("info", REGISTERED, ids=lambda info: info.name)
def test_dataset_env_scores_the_reference_1_and_constants_hacks_0_deterministically(
    info: DatasetInfo,
) -> None:
    env = gymhub.make(info.env_id)
    by_split = sample_tasks(env.all_tasks, 20)
    train, eval_ = by_split["train"], by_split["eval"]
    assert train and eval_
    # disjoint seed ranges, disjoint questions
    assert all(t.metadata["seed"] < EVAL_SEED_BASE for t in train)
    assert all(t.metadata["seed"] >= EVAL_SEED_BASE for t in eval_)
    assert not {t.prompt for t in env.all_tasks if t.split == "train"} & {
        t.prompt for t in env.all_tasks if t.split == "eval"
    }
    for split, tasks in by_split.items():
        for task in tasks:
            reference = task.hidden["solutions"]["reference"][0]["content"]
            assert play(env, task, reference).outcome == 1.0, (split, task.hidden["answer"])
        for constant in CONSTANTS:
            for reply in (constant, f"<answer>{constant}</answer>"):
                mean = sum(play(env, t, reply).outcome for t in tasks) / len(tasks)
                assert mean <= BLIND_FLOOR, (split, reply, mean)
    for task in train[:5]:
        gold = str(task.hidden["answer"])
        for name, reply in hack_replies(gold, info.answer_type).items():
            assert play(env, task, reply).outcome == 0.0, (name, reply[:200])
        reference = task.hidden["solutions"]["reference"][0]["content"]
        verdicts = {play(env, task, reference).model_dump_json() for _ in range(20)}
        assert len(verdicts) == 1
    env.close()


def test_the_rg_mix_preset_is_a_balanced_mixture_of_registered_envs() -> None:
    from gymhub.envs.reasoning.mixture import RG_MIX
    from gymhub.trainers.env_mixture import env_weights
    from gymhub.trainers.grpo import GRPOConfig

    registered = {info.env_id: info for info in REGISTERED}
    assert set(RG_MIX) <= set(registered)
    assert len(set(RG_MIX.values())) == 1 and abs(sum(RG_MIX.values()) - 1.0) < 1e-9
    assert len({registered[e].answer_type for e in RG_MIX}) >= 7  # balanced across answer types
    assert env_weights(GRPOConfig(env=RG_MIX).env) == pytest.approx(RG_MIX)


def test_task_ids_are_the_same_in_a_process_with_another_hash_seed() -> None:
    """Task ids are content hashes: another process (another PYTHONHASHSEED) must rebuild the
    same task set (three datasets that fail this are left out; the preset's are checked)."""
    from gymhub.envs.reasoning.mixture import RG_MIX

    here = {env_id: [t.id for t in gymhub.make(env_id).all_tasks] for env_id in RG_MIX}
    code = (
        "import json, sys, gymhub\n"
        "ids = json.loads(sys.argv[1])\n"
        "print(json.dumps({e: [t.id for t in gymhub.make(e).all_tasks] for e in ids}))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code, json.dumps(sorted(RG_MIX))],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONHASHSEED": "12345"},
    )
    assert json.loads(result.stdout) == here


def test_the_rlvp_rules_fire_on_loops_long_replies_and_a_broken_format() -> None:
    env = gymhub.make("rg-spell_backward-v0")
    task = env.tasks[0]
    gold = str(task.hidden["answer"])
    looping = "Let me think again about it.\n" * 5 + f"<answer>{gold}</answer>"
    verdict = play(env, task, looping)
    assert verdict.outcome == 1.0 and {e.rule for e in verdict.path_events} == {"repetition-loop"}
    rambling = "word " * 2000 + f"<answer>{gold}</answer>"
    assert {e.rule for e in play(env, task, rambling).path_events} == {"reply-length"}
    two = play(env, task, f"<answer>x</answer><answer>{gold}</answer>")
    assert two.outcome == 0.0 and {e.rule for e in two.path_events} == {"answer-format"}
    clean = play(env, task, f"<answer>{gold}</answer>")
    assert not clean.path_events
    env.close()


@pytest.mark.parametrize(
    "info", [info for info in REGISTERED if info.scoring == "checker"], ids=lambda info: info.name
)
def test_no_checker_runs_the_answer_as_code(info: DatasetInfo, tmp_path: Path) -> None:
    """reasoning-gym's n_queens scorer eval()s the answer, and countdown's and
    simple_integration's parse it with sympy (which runs Python): a reply must never run."""
    marker = tmp_path / "ran"
    code = f"__import__('pathlib').Path({str(marker)!r}).write_text('x')"
    env = gymhub.make(info.env_id)
    task = env.tasks[0]
    for payload in (code, f"[{code}]", f"{code} + x", f"exec({code!r})"):
        assert play(env, task, f"<answer>{payload}</answer>").outcome == 0.0
        assert not marker.exists(), payload
    env.close()
