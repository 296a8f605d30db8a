from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

CLI = [sys.executable, "-m", "gymhub"]


def run(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, check=check)


def test_list_and_info_json() -> None:
    specs = json.loads(run("list", "--json").stdout)
    assert {"code-python-v0", "toy-letters-v0"} <= {s["id"] for s in specs}
    info = json.loads(run("info", "code-python-v0", "--json").stdout)
    assert info["tasks"]["train"] + info["tasks"]["eval"] >= 200
    assert {r["id"] for r in info["rules"]} >= {"exit-call", "hidden-tests-fraction"}
    assert info["tools"] == ["submit"]


def test_rollout_json_is_one_document_on_stdout(tmp_path: Path) -> None:
    db = tmp_path / "c.db"
    result = run("rollout", "code-python-v0", "--tasks", "4", "-g", "2", "-c", "2", "--db", str(db), "--json")
    summary = json.loads(result.stdout)  # the whole of stdout parses as one document
    assert summary["trajectories"] == 8 and summary["mean_outcome"] == 1.0
    assert summary["mean_path_signal"] == 0.5 and summary["errors"] == 0
    table = run("rollout", "toy-letters-v0", "--tasks", "2", "--db", str(db))
    assert "rollout summary" in table.stdout and "toy-letters-v0" in table.stdout


def test_export_and_verify_detect_a_changed_digest(tmp_path: Path) -> None:
    db = tmp_path / "v.db"
    run_id = json.loads(
        run(
            "rollout",
            "code-python-v0",
            "--tasks",
            "3",
            "--db",
            str(db),
            "--policy",
            "reference:os-exit",
            "--json",
        ).stdout
    )["run_id"]
    out = tmp_path / "t.jsonl"
    run("export", run_id, "--format", "jsonl", "--out", str(out), "--db", str(db))
    clean = json.loads(run("verify", str(out), "--json").stdout)
    assert clean == {"checked": 3, "changed": 0, "skipped_errored": 0, "mismatches": []}
    lines = out.read_text().splitlines()
    record = json.loads(lines[1])
    record["verdict"]["outcome"] = 1.0  # a tampered (or stale) verdict
    record["verdict"]["digest"] = "0" * 64
    lines[1] = json.dumps(record)
    out.write_text("\n".join(lines) + "\n")
    tampered = run("verify", str(out), "--json", check=False)
    assert tampered.returncode == 1
    report = json.loads(tampered.stdout)
    assert report["changed"] == 1
    assert report["mismatches"][0]["trajectory_id"] == record["id"]
    assert report["mismatches"][0]["fresh_outcome"] == 0.0
    run("export", run_id, "--format", "parquet", "--out", str(tmp_path / "t.parquet"), "--db", str(db))
    assert (tmp_path / "t.parquet").stat().st_size > 0


def test_errors_are_clear_and_exit_2(tmp_path: Path) -> None:
    bad = run("rollout", "no-such-env", "--db", str(tmp_path / "x.db"), check=False)
    assert bad.returncode == 2 and "unknown environment" in bad.stderr
    missing = run("export", "nope", "--out", str(tmp_path / "o"), "--db", str(tmp_path / "x.db"), check=False)
    assert missing.returncode == 2 and "no store at" in missing.stderr
    assert not (tmp_path / "x.db").exists() and not (tmp_path / "o").exists()
    garbage = tmp_path / "g.jsonl"
    garbage.write_text("{not json\n")
    assert "cannot read" in run("verify", str(garbage), check=False).stderr


def test_verify_reports_a_corrupt_trajectory_and_goes_on(tmp_path: Path) -> None:
    db = tmp_path / "c.db"
    run_id = json.loads(run("rollout", "toy-letters-v0", "--tasks", "2", "--db", str(db), "--json").stdout)[
        "run_id"
    ]
    out = tmp_path / "t.jsonl"
    run("export", run_id, "--out", str(out), "--db", str(db))
    lines = out.read_text().splitlines()
    record = json.loads(lines[0])
    record["task_id"] = "not-a-task"
    out.write_text("\n".join([json.dumps(record), *lines[1:]]) + "\n")
    result = run("verify", str(out), "--json", check=False)
    report = json.loads(result.stdout)
    assert result.returncode == 1 and report["checked"] == 2 and report["changed"] == 1
    assert "UnknownTask" in report["mismatches"][0]["error"]


def test_rollout_on_another_sandbox_backend_and_resume_keeps_it(tmp_path: Path) -> None:
    from backends import require

    require("bwrap")
    db = str(tmp_path / "s.db")
    summary = json.loads(
        run("rollout", "code-python-v0", "--tasks", "3", "--sandbox", "bwrap", "--db", db, "--json").stdout
    )
    assert summary["mean_outcome"] == 1.0
    from gymhub.store import open_store

    assert open_store(db).get_run(summary["run_id"]).config["env_kwargs"] == {"sandbox": "bwrap"}
    refused = run("rollout", "toy-letters-v0", "--sandbox", "bwrap", "--db", db, check=False)
    assert refused.returncode == 2 and "no sandbox" in refused.stderr


def test_summary_table_never_truncates_run_ids_and_runs_lists_them(tmp_path: Path) -> None:
    db = str(tmp_path / "ids.db")
    long_id = "a-rather-long-run-id-that-a-narrow-table-would-cut-0123456789"
    table = run("rollout", "toy-letters-v0", "--tasks", "1", "--db", db, "--run-id", long_id)
    rows = [line for line in table.stdout.splitlines() if "toy-letters-v0" in line and "│" in line]
    assert rows and long_id in rows[0]  # in the table row itself, not only elsewhere
    listed = run("runs", "--db", db)
    assert any(long_id in line for line in listed.stdout.splitlines())
    assert json.loads(run("runs", "--db", db, "--json").stdout)[0]["run_id"] == long_id


def test_parts_add_their_commands_through_entry_points_loaded_only_when_used() -> None:
    """`train`, `sandbox`, `bench`, ... come from the parts' `gymhub._cli` entry points; a core
    command imports none of the parts' command modules."""
    listed = run("--help").stdout
    for name in ("bench", "sandbox", "train", "rlvp-report", "serve-reward", "openrlhf-agent"):
        assert f" {name} " in listed, name
    assert "grpo" in run("train", "--help").stdout
    assert "local-unsafe" in run("sandbox", "check").stdout
    code = (
        "import atexit, sys; atexit.register(lambda: print(sorted(m for m in sys.modules "
        "if m.startswith(('gymhub.trainers', 'gymhub.sandboxes.commands', 'gymhub.verifiers.commands')))));"
        "from gymhub._cli import main; main(['list', '--ids'])"
    )
    core = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert core.stdout.strip().splitlines()[-1] == "[]"
