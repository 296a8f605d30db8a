"""Every user error on the command line is one line, ``error: ...``, and a non-zero exit; it
is caught before any work is done; ``--debug`` shows the traceback. Real subprocesses, real
SQLite files, a real (closed) PostgreSQL port."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from processes import free_port

CLI = [sys.executable, "-m", "gymhub"]


def gymhub(*args: str, cwd: Path | None = None, code: str | None = None) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-c", code, *args] if code else [*CLI, *args]
    return subprocess.run(command, capture_output=True, text=True, cwd=cwd, timeout=600)


def one_error_line(result: subprocess.CompletedProcess[str], *phrases: str, status: int = 2) -> str:
    lines = result.stderr.strip().splitlines()
    assert result.returncode == status, (result.returncode, result.stderr[-2000:])
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    for phrase in phrases:
        assert phrase in lines[0], (phrase, lines[0])
    return lines[0]


def rollout(db: str | Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return gymhub("rollout", "toy-letters-v0", "--tasks", "2", "--db", str(db), *extra)


# ------------------------------------------------------------------ databases


def test_unreachable_database_url_hides_the_password() -> None:
    url = f"postgresql+psycopg://user:s3cret@127.0.0.1:{free_port()}/db"
    line = one_error_line(rollout(url), "cannot open store", "***")
    assert "s3cret" not in line


def test_sqlite_path_in_a_missing_folder(tmp_path: Path) -> None:
    one_error_line(rollout(tmp_path / "nope" / "runs.db"), "does not exist", str(tmp_path / "nope"))
    assert not (tmp_path / "nope").exists()


def test_a_folder_as_the_database(tmp_path: Path) -> None:
    one_error_line(rollout(tmp_path), "is a folder")


def test_a_file_that_is_not_a_database(tmp_path: Path) -> None:
    corrupt = tmp_path / "notes.db"
    corrupt.write_text("these are my notes, not a database\n" * 100)
    one_error_line(rollout(corrupt), "file is not a database")
    one_error_line(gymhub("runs", "--db", str(corrupt)), "file is not a database")
    assert corrupt.read_text().startswith("these are my notes")  # left as it was


def test_a_truncated_database(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    assert rollout(db, "--run-id", "r").returncode == 0
    with sqlite3.connect(db) as conn:  # fold the WAL into the file, then cut the file
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    data = db.read_bytes()
    db.write_bytes(data[: len(data) // 3])
    for name in ("runs.db-wal", "runs.db-shm"):
        (tmp_path / name).unlink(missing_ok=True)
    out = tmp_path / "out.jsonl"
    result = gymhub("export", "r", "--out", str(out), "--db", str(db))
    one_error_line(result, str(db))
    assert not out.exists()


def test_export_of_a_missing_database_creates_no_file(tmp_path: Path) -> None:
    missing, out = tmp_path / "missing.db", tmp_path / "out.jsonl"
    one_error_line(gymhub("export", "r", "--out", str(out), "--db", str(missing)), "no store at")
    assert not missing.exists() and not out.exists()
    one_error_line(gymhub("runs", "--db", str(missing)), "no store at")
    one_error_line(gymhub("rlvp-report", "r", "--db", str(missing)), "no store at")
    assert not missing.exists()


def test_export_into_a_missing_folder_is_refused_before_reading(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    assert rollout(db, "--run-id", "r").returncode == 0
    one_error_line(
        gymhub("export", "r", "--out", str(tmp_path / "no" / "x.jsonl"), "--db", str(db)), "does not exist"
    )
    one_error_line(gymhub("export", "r", "--out", str(tmp_path), "--db", str(db)), "is a folder")
    one_error_line(
        gymhub("export", "zzz", "--out", str(tmp_path / "x.jsonl"), "--db", str(db)), "no run 'zzz'"
    )
    assert not (tmp_path / "x.jsonl").exists()


# ------------------------------------------------------------------ rollout arguments


@pytest.mark.parametrize(
    ("args", "phrase"),
    [
        (["--seed", "-1"], "--seed"),
        (["--seed", str(2**63)], "--seed"),
        (["--seed", "abc"], "--seed"),
        (["--tasks", "0"], "--tasks"),
        (["--tasks", "-3"], "--tasks"),
        (["--group-size", "0"], "--group-size"),
        (["--concurrency", "0"], "--concurrency"),
        (["--split", "test"], "--split"),
        (["--backend", "slurm"], "--backend"),
        (["--policy", "reference:no-such-variant"], "no-such-variant"),
        (["--policy", "gpt:4"], "unknown policy"),
        (["--bogus"], "No such option"),
    ],
)
def test_bad_rollout_arguments_are_refused_before_the_run(
    tmp_path: Path, args: list[str], phrase: str
) -> None:
    db = tmp_path / "runs.db"
    one_error_line(rollout(db, *args), phrase)
    if db.exists():  # nothing was recorded: no run
        with sqlite3.connect(db) as conn:
            assert conn.execute("SELECT count(*) FROM runs").fetchone() == (0,)


def test_unknown_sandbox_backend_and_unknown_env(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    one_error_line(
        gymhub("rollout", "code-python-v0", "--tasks", "1", "--sandbox", "vm", "--db", str(db)),
        "unknown sandbox backend 'vm'",
    )
    one_error_line(
        gymhub("rollout", "code-pyton-v0", "--db", str(db)), "unknown environment", "code-python-v0"
    )
    assert not db.exists()  # the env id is checked before the store is opened


def test_an_existing_run_id_and_resume_with_another_env(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    assert rollout(db, "--run-id", "r1").returncode == 0
    one_error_line(rollout(db, "--run-id", "r1"), "already exists", "--resume r1")
    one_error_line(
        gymhub("rollout", "toy-json-v0", "--db", str(db), "--resume", "r1"), "rolls out toy-letters-v0"
    )
    one_error_line(
        gymhub("rollout", "toy-letters-v0", "--db", str(db), "--resume", "r9"), "no run 'r9'", "r1"
    )
    one_error_line(
        gymhub("rollout", "toy-letters-v0", "--db", str(db), "--resume", "r1", "--policy", "reference:wrong"),
        "--policy",
    )
    runs = json.loads(gymhub("runs", "--db", str(db), "--json").stdout)
    assert [(r["run_id"], r["stored"], r["expected"]) for r in runs] == [("r1", 2, 2)]


def test_a_run_whose_every_trajectory_errored_exits_non_zero(tmp_path: Path) -> None:
    result = rollout(tmp_path / "runs.db", "--policy", f"openai:http://127.0.0.1:{free_port()}#m", "--json")
    assert result.returncode == 1
    assert "every trajectory of run" in result.stderr and "errored" in result.stderr
    assert json.loads(result.stdout)["errors"] == 2  # still stored and summarised


def test_debug_shows_the_traceback(tmp_path: Path) -> None:
    result = gymhub("--debug", "rollout", "nope-v0", "--db", str(tmp_path / "x.db"))
    assert result.returncode == 2 and "Traceback" in result.stderr and "UnknownEnv" in result.stderr
    late = gymhub("rollout", "nope-v0", "--db", str(tmp_path / "x.db"), "--debug")
    assert "Traceback" in late.stderr


def test_ctrl_c_prints_the_resume_command(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    proc = subprocess.Popen(
        [*CLI, "rollout", "code-python-v0", "--tasks", "60", "--db", str(db), "--run-id", "ctrlc"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 120
    stored = 0
    while time.monotonic() < deadline and stored < 3:
        time.sleep(0.3)
        try:
            with sqlite3.connect(db) as conn:
                stored = conn.execute("SELECT count(*) FROM trajectories").fetchone()[0]
        except sqlite3.Error:
            continue
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr[-2000:]
    assert f"gymhub rollout code-python-v0 --db {db} --resume ctrlc" in stderr
    resumed = gymhub("rollout", "code-python-v0", "--db", str(db), "--resume", "ctrlc", "--json")
    assert resumed.returncode == 0 and json.loads(resumed.stdout)["trajectories"] == 60


# ------------------------------------------------------------------ verify


def _exported(tmp_path: Path) -> Path:
    db, out = tmp_path / "runs.db", tmp_path / "run.jsonl"
    assert rollout(db, "--run-id", "v", "--tasks", "3").returncode == 0
    assert gymhub("export", "v", "--out", str(out), "--db", str(db)).returncode == 0
    return out


def test_verify_an_empty_file_and_a_folder(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    one_error_line(gymhub("verify", str(empty)), "no trajectories")
    one_error_line(gymhub("verify", str(tmp_path)), "is a folder")
    one_error_line(gymhub("verify", str(tmp_path / "none.jsonl")), "cannot read")


def test_verify_a_truncated_file_names_the_line(tmp_path: Path) -> None:
    out = _exported(tmp_path)
    text = out.read_text()
    out.write_text(text[: len(text) - 40])  # cut inside the third record
    one_error_line(gymhub("verify", str(out)), f"{out}, line 3", "truncated")


def test_verify_catches_an_edited_outcome_with_its_digest_left_alone(tmp_path: Path) -> None:
    out = _exported(tmp_path)
    lines = out.read_text().splitlines()
    record = json.loads(lines[1])
    record["verdict"]["outcome"] = 0.25  # digest untouched: only a field-by-field check sees it
    lines[1] = json.dumps(record)
    out.write_text("\n".join(lines) + "\n")
    result = gymhub("verify", str(out), "--json")
    assert result.returncode == 1
    [mismatch] = json.loads(result.stdout)["mismatches"]
    assert mismatch["line"] == 2 and mismatch["changed_fields"] == ["outcome"]
    assert mismatch["stored_digest"] == mismatch["fresh_digest"]
    human = gymhub("verify", str(out))
    assert f"{out}:2:" in human.stdout and "outcome differ" in human.stdout


# ------------------------------------------------------------------ servers and extras

HIDE = (
    "import sys; sys.modules[{name!r}] = None; sys.argv[0] = 'gymhub'; from gymhub._cli import main; main()"
)


def test_a_missing_extra_is_named_before_any_work(tmp_path: Path) -> None:
    port = free_port()
    result = gymhub("serve", "toy-letters-v0", "--port", str(port), code=HIDE.format(name="fastapi"))
    one_error_line(result, "pip install 'gymhub[serve]'")
    result = gymhub("mcp", "toy-letters-v0", code=HIDE.format(name="fastmcp"))
    one_error_line(result, "pip install 'gymhub[envs]'")
    db = tmp_path / "runs.db"
    result = gymhub(
        "export",
        "r",
        "--format",
        "parquet",
        "--out",
        "x.parquet",
        "--db",
        str(db),
        code=HIDE.format(name="pyarrow"),
    )
    one_error_line(result, "pip install 'gymhub[export]'")
    result = gymhub(
        "rollout", "toy-letters-v0", "--backend", "ray", "--db", str(db), code=HIDE.format(name="ray")
    )
    one_error_line(result, "pip install 'gymhub[ray]'")
    assert not db.exists()


def test_servers_refuse_unknown_envs_and_open_binds_without_a_token() -> None:
    one_error_line(gymhub("serve", "no-such-env-v0", "--port", str(free_port())), "unknown environment")
    one_error_line(gymhub("serve", "--host", "0.0.0.0", "--port", str(free_port())), "--token")
    one_error_line(
        gymhub(
            "mcp", "toy-letters-v0", "--transport", "http", "--host", "0.0.0.0", "--port", str(free_port())
        ),
        "--token",
    )
    one_error_line(gymhub("mcp", "no-such-env-v0"), "unknown environment")
    one_error_line(gymhub("mcp", "toy-letters-v0", "--transport", "sse"), "unknown transport")


def test_a_port_in_use_is_one_line() -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        one_error_line(gymhub("serve", "toy-letters-v0", "--port", port), "Address already in use")
        mcp = gymhub("mcp", "toy-letters-v0", "--transport", "http", "--port", port)
        one_error_line(mcp, "already in use")
        one_error_line(gymhub("serve-reward", "toy-letters-v0", "--port", port), "already in use")


def test_version() -> None:
    result = gymhub("--version")
    assert result.returncode == 0 and result.stdout.startswith("gymhub ")


def test_serve_prints_its_url() -> None:
    proc = subprocess.Popen(
        [*CLI, "serve", "toy-letters-v0", "--port", "0"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ},
    )
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        assert line.startswith("serving toy-letters-v0 at http://127.0.0.1:"), line
        import httpx

        url = line.split(" at ")[1].split()[0]
        assert httpx.get(f"{url}/healthz").status_code == 200
    finally:
        proc.terminate()
        proc.wait(20)
