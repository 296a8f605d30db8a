from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import gymnasium
import pytest

import gymhub
from gymhub import UnknownEnv

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
    gymhub_cli = [sys.executable, "-m", "gymhub.cli"]
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
