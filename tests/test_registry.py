from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import gymnasium
import pytest

import gymhub
from gymhub import UnknownEnv
from gymhub.errors import EnvContractError

FIXTURE = Path(__file__).parent / "fixtures" / "toy_gymhub_env"


def test_unknown_env_names_the_closest_ids() -> None:
    with pytest.raises(UnknownEnv) as info:
        gymhub.make("code-pyton-v0")
    assert "code-python-v0" in str(info.value)
    assert info.value.close[0] == "code-python-v0"


def test_register_make_and_gymnasium_namespace() -> None:
    gymhub.register(
        "letters-short-v0",
        "gymhub.envs.toy:LettersEnv",
        family="toy",
        kwargs={"max_turns": 1},
        rules={"empty-reply": 2.0},
    )
    try:
        env = gymhub.make("letters-short-v0")
        assert env.env_id == "letters-short-v0" and env.rules == {"empty-reply": 2.0}
        env.reset(seed=0)
        verdict = env.step("")[4]["verdict"]
        assert verdict.path_signal == -2.0  # the registry's weight reached the rule
        assert gymnasium.make("gymhub/letters-short-v0").unwrapped.env_id == "letters-short-v0"
        with pytest.raises(gymhub.GymhubError, match="already registered"):
            gymhub.register("letters-short-v0", "gymhub.envs.toy:LettersEnv")
    finally:
        gymhub.unregister("letters-short-v0")


def test_overrides_replace_spec_kwargs() -> None:
    env = gymhub.make("code-python-v0", max_turns=7, split="eval")
    assert env.max_turns == 7 and {t.split for t in env.tasks} == {"eval"}


def test_third_party_package_is_found_through_its_entry_point(tmp_path: Path) -> None:
    target = tmp_path / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "--target",
            str(target),
            str(FIXTURE),
        ],
        check=True,
        capture_output=True,
    )
    env = {**os.environ, "PYTHONPATH": str(target)}
    gymhub_cli = [sys.executable, "-m", "gymhub"]
    listed = subprocess.run(
        [*gymhub_cli, "list", "--json"], env=env, check=True, capture_output=True, text=True
    )
    specs = {s["id"]: s for s in json.loads(listed.stdout)}
    assert "toy-echo-v0" in specs
    assert specs["toy-echo-v0"]["source"] == "entry point (toy-gymhub-env)"
    assert specs["toy-echo-v0"]["description"].startswith("Echo one word back")
    rolled = subprocess.run(
        [*gymhub_cli, "rollout", "toy-echo-v0", "--db", str(tmp_path / "x.db"), "--json"],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    summary = json.loads(rolled.stdout)
    assert summary["trajectories"] == 3 and summary["mean_outcome"] == 1.0


def test_first_load_is_thread_safe() -> None:
    # Found by the HTTP load test: a second thread saw a half-filled registry ("unknown env").
    code = (
        "import threading, gymhub.registry as r\nerrors = []\n"
        "def go():\n    try:\n        r.make('toy-letters-v0')\n"
        "    except Exception as e:\n        errors.append(e)\n"
        "threads = [threading.Thread(target=go) for _ in range(16)]\n"
        "[t.start() for t in threads]; [t.join() for t in threads]\nprint(len(errors))"
    )
    for _ in range(3):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
        assert out.strip() == "0"


def test_load_part_reads_dotted_attributes_and_refuses_a_malformed_spec() -> None:
    from gymhub.policies.reference import ReferencePolicy
    from gymhub.registry import load_part

    assert load_part("gymhub.policies.reference:ReferencePolicy.from_spec") == ReferencePolicy.from_spec
    for malformed in ("gymhub.policies.reference", "gymhub.policies.reference:", ":ReferencePolicy"):
        with pytest.raises(gymhub.GymhubError, match=r"write it as 'package\.module:attribute'"):
            load_part(malformed)
    with pytest.raises(gymhub.GymhubError, match="is the part installed"):
        load_part("gymhub.policies.reference:NoSuchPolicy")


def test_every_spec_declares_what_its_env_does() -> None:
    """registry.yaml (and the families' tables) cannot drift from the code: the family,
    version, verifier and sandbox each spec declares are what the built env has, and a
    task_set that opens with a count has that many tasks."""
    from gymhub._env_checker import spec_problems

    for found in gymhub.list_envs():
        env = gymhub.make(found.id)
        assert spec_problems(env) == [], found.id
        assert env.verifier.id == found.verifier, found.id
        assert getattr(env, "sandbox_backend", "none") == found.sandbox, found.id
        count = re.match(r"(?:the )?(\d+) ", found.task_set)
        if count:
            assert len(env.all_tasks) == int(count.group(1)), found.id
        env.close()


def test_check_env_reports_a_spec_that_drifts_from_its_env() -> None:
    gymhub.register(
        "drifted-code-v0",
        "gymhub.envs.code:CodePythonEnv",
        family="code",
        version="9.9.9",
        sandbox="none",  # the class runs its tests in a sandbox ("local" by default)
        verifier="letters-fraction",
    )
    try:
        with pytest.raises(EnvContractError) as raised:
            gymhub.check_env(gymhub.make("drifted-code-v0"), check_bad_actions=False, check_blind_floor=False)
        problems = str(raised.value)
        assert "the spec declares version '9.9.9', but the env has '0.1.0'" in problems
        assert "the spec declares verifier 'letters-fraction', but the env has 'code-unit-tests'" in problems
        assert "the spec declares sandbox 'none', but the env has 'local'" in problems
        assert "family" not in problems  # what matches is not reported
    finally:
        gymhub.unregister("drifted-code-v0")
    # another backend chosen at make time is the operator's choice, not drift
    from gymhub._env_checker import spec_problems

    assert spec_problems(gymhub.make("code-python-v0", sandbox="docker")) == []
