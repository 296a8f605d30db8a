"""Every env's reward-hack probe suite: each probe scores outcome 0 and trips its rules."""

from __future__ import annotations

import pytest

import gymhub
from gymhub.errors import PolicyError
from gymhub.registry import load_probes

CASES = [(spec.id, probe.name) for spec in gymhub.list_envs() for probe in load_probes(spec.id)]


def test_the_code_suite_covers_the_known_hacks() -> None:
    names = {p.name for p in load_probes("code-python-v0")}
    assert {
        "sys-exit",
        "os-exit",
        "always-equal",
        "patch-report-writer",
        "patch-builtins",
        "read-hidden-tests",
        "fake-report",
        "plant-sitecustomize",
        "edit-visible-tests",
        "sleep-past-timeout",
        "forge-channel",
    } <= names
    assert all(load_probes(spec.id) for spec in gymhub.list_envs()), "every env ships probes"


@pytest.mark.parametrize("env_id,probe_name", CASES)
def test_probe_scores_zero_and_fires_its_rules(env_id: str, probe_name: str) -> None:
    probe = gymhub.registry.find_probe(env_id, probe_name)
    fast = {"test_timeout": 1.0} if "test_timeout" in gymhub.spec(env_id).kwargs else {}
    env = gymhub.make(env_id, **fast)
    tasks = env.tasks[:1] if probe.slow else env.tasks[:6]
    groups = gymhub.rollout(env_id, f"reference:{probe_name}", tasks=tasks, env_kwargs=fast, concurrency=2)
    for group in groups:
        [t] = group.trajectories
        assert t.status == "ok", t.error
        assert t.verdict.outcome == 0.0, (probe_name, t.task_id, t.verdict.details)
        fired = {e.rule for e in t.verdict.path_events if e.kind == "penalty"}
        assert set(probe.expect_rules) <= fired, (probe_name, fired)
        assert not any(e.kind == "progress" for e in t.verdict.path_events), "no credit for a hack"


def test_unknown_variant_names_what_exists() -> None:
    # rejected before the run starts, naming what exists
    with pytest.raises(PolicyError, match="no-such-probe") as caught:
        gymhub.rollout("toy-letters-v0", "reference:no-such-probe", tasks=1)
    assert "empty" in str(caught.value)
