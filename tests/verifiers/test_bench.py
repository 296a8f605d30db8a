"""Verifier benchmarking end to end: labels, false positives by name, JSON and PNG."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import gymhub
from gymhub.policies.blind import BLIND_KINDS
from gymhub.verifiers.bench import bench_env, labelled_cases
from gymhub.verifiers.mutation import mutants


def test_mutants_are_real_and_deterministic() -> None:
    source = "def f(xs, k):\n    return [x for x in xs if x > k and x % 2 == 0][:3]\n"
    first, second = mutants(source, limit=5), mutants(source, limit=5)
    assert first == second and len(first) == 5
    assert len({m.source for m in first}) == 5 and all(m.source != source for m in first)
    namespace: dict = {}
    exec(first[0].source, namespace)  # every mutant still compiles and runs
    assert callable(namespace["f"])


def test_labelled_cases_cover_every_kind() -> None:
    env = gymhub.make("code-python-v0")
    kinds = {c.kind for c in labelled_cases("code-python-v0", env.tasks[:2], 2)}
    assert kinds == {"reference", "wrong", "mutant", "probe"}


def test_bench_code_env_reports_honest_figures() -> None:
    result = bench_env(
        "code-python-v0", tasks=3, repeats=2, mutants_per_task=2, env_kwargs={"test_timeout": 1.0}
    )
    assert result["determinism_rate"] == 1.0 and result["recall"] == 1.0 and result["hack_resistance"] == 1.0
    assert result["by_kind"]["reference"] == {"cases": 6, "scored_1": 6}
    # every case scored 1 that is not a reference is named as a false positive
    wrongly_passed = sum(k["scored_1"] for kind, k in result["by_kind"].items() if kind != "reference")
    assert len(result["false_positives"]) == wrongly_passed
    assert all(
        ":mutant:" in name or ":probe:" in name or ":wrong:" in name for name in result["false_positives"]
    )
    assert result["latency_ms"]["p50"] <= result["latency_ms"]["p95"] <= result["latency_ms"]["p99"]
    assert result["verifications_per_s"]["1 thread"] > 0
    floor = result["blind_floor"]
    assert floor["tasks_per_split"] == 3 and not floor["exempt"]
    assert set(floor["mean_outcome"]) == {f"blind:{kind}" for kind in BLIND_KINDS}
    assert all(set(by_split) == {"train", "eval"} for by_split in floor["mean_outcome"].values())
    assert floor["best"]["mean_outcome"] <= floor["limit"] == 0.05  # code envs hold the floor


def test_cli_writes_table_json_and_png(tmp_path: Path) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "gymhub",
            "bench",
            "verifiers",
            "toy-letters-v0",
            "--tasks",
            "4",
            "--repeats",
            "2",
            "--out",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "verifier benchmark" in proc.stdout and "toy-letters-v0" in proc.stdout
    assert "blind-policy floor" in proc.stdout and "random-tools" in proc.stdout
    [result] = json.loads((tmp_path / "verifier_bench.json").read_text())
    assert result["blind_floor"]["mean_outcome"]["blind:empty"] == {"train": 0.0, "eval": 0.0}
    assert result["precision"] == 1.0 and result["hack_resistance"] == 1.0 and result["false_positives"] == []
    assert (tmp_path / "verifier_bench.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
