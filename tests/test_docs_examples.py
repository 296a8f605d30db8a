"""Every ```python block of README.md and docs/ runs as written, in a fresh interpreter, and the
command lines of the README's CLI section run on a small scale.

A block that cannot run here (it trains a model, or needs a model we do not ship) carries the
marker line ``<!-- docs-test: skip REASON -->`` right above its fence; those blocks are listed
in ``SKIPPED`` below, so adding one is a visible change to this test. Blocks that talk to
``gymhub serve`` / ``gymhub mcp`` get that server started first (the command of the bash block
above them), on a free port that replaces the documented one.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from processes import free_port, gymhub_cli

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
SKIP_MARKER = re.compile(r"^<!--\s*docs-test:\s*skip\s+(?P<reason>.+?)\s*-->$")

# (file, first code line) of every block marked to be skipped: the test fails if this drifts.
SKIPPED = {
    ("README.md", "from gymhub.trainers.grpo import GRPOConfig, GRPOTrainer"),
    ("docs/integrations.md", "from trl import GRPOConfig, GRPOTrainer"),
    ("docs/integrations.md", "import gymhub"),
}

# a documented address -> the server command the doc gives for it (the port is replaced)
SERVERS = {
    "127.0.0.1:8000": ["serve", "code-python-v0", "toy-letters-v0"],
    "127.0.0.1:8001": ["mcp", "search-v0", "--transport", "http"],
}


@dataclass(frozen=True)
class Block:
    file: str
    line: int
    code: str
    skip: str | None

    @property
    def name(self) -> str:
        return f"{self.file}:{self.line}"


def python_blocks() -> list[Block]:
    blocks = []
    for path in DOCS:
        lines = path.read_text(encoding="utf-8").splitlines()
        index = 0
        while index < len(lines):
            if lines[index].strip() == "```python":
                start = index
                end = lines.index("```", start + 1)
                marker = SKIP_MARKER.match(lines[start - 1].strip()) if start else None
                blocks.append(
                    Block(
                        str(path.relative_to(ROOT)),
                        start + 1,
                        "\n".join(lines[start + 1 : end]) + "\n",
                        marker.group("reason") if marker else None,
                    )
                )
                index = end
            index += 1
    return blocks


BLOCKS = python_blocks()


def test_the_skipped_blocks_are_exactly_the_listed_ones() -> None:
    skipped = {(b.file, b.code.splitlines()[0]) for b in BLOCKS if b.skip}
    for b in BLOCKS:
        if b.skip:
            print(f"skipped {b.name}: {b.skip}")
    assert skipped == SKIPPED
    assert len([b for b in BLOCKS if not b.skip]) >= 6  # the parser found the blocks


def _wait_for_port(port: int, proc: subprocess.Popen[bytes], timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"the server exited with {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.2)
    raise AssertionError(f"nothing listens on {port}")


def _start_servers(code: str) -> tuple[str, list[subprocess.Popen[bytes]]]:
    procs = []
    for address, command in SERVERS.items():
        if address in code:
            port = free_port()
            proc = subprocess.Popen(
                [gymhub_cli(), *command, "--port", str(port)],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            procs.append(proc)
            _wait_for_port(port, proc)
            code = code.replace(address, f"127.0.0.1:{port}")
    return code, procs


@pytest.mark.slow
@pytest.mark.parametrize("block", [b for b in BLOCKS if not b.skip], ids=lambda b: b.name)
def test_python_block_runs_as_written(block: Block, tmp_path: Path) -> None:
    code, servers = _start_servers(block.code)
    try:
        result = subprocess.run(
            [sys.executable, "-c", code],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=900,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
    finally:
        for proc in servers:
            proc.terminate()
            proc.wait(20)
    assert result.returncode == 0, f"{block.name} failed:\n{result.stderr[-3000:]}"
    if block.file == "README.md" and 'gymhub.make("code-python-v0")' in block.code:
        first = result.stdout.splitlines()[0]
        assert first.startswith("1.0 {") and "'status': 'ok'" in first, first  # the ten lines score 1


# ------------------------------------------------------------------ the CLI section


def readme_command_lines() -> list[str]:
    """The ``gymhub ...`` lines of the README's "The command line" block, continuations joined."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## The command line", 1)[1]
    block = section.split("```bash", 1)[1].split("```", 1)[0]
    joined = re.sub(r"\\\n\s*", " ", block)
    return [line.split("  #")[0].strip() for line in joined.splitlines() if line.startswith("gymhub ")]


def _subcommand(line: str) -> str:
    words = line.split()[1:]
    return " ".join(words[:2]) if words[0] in ("bench", "sandbox", "train") else words[0]


# README subcommands this test does not run, and where they are tested instead
NOT_RUN = {
    "train grpo": "trains a model for minutes (tests/trainers/test_grpo_learns.py)",
    "sandbox build-image": "debootstraps a Debian image as root and imports it into Docker (~90 s)",
    "sandbox prune": "needs a Docker daemon",
    "review": "serves the report for people to click (tests/report/test_review_pages.py drives it)",
}


def test_every_documented_option_exists() -> None:
    """Each ``--option`` the README's CLI section shows is one that command accepts."""
    lines = readme_command_lines()
    assert len(lines) >= 15
    for line in lines:
        sub = _subcommand(line)
        if " ... " in line or line.endswith("..."):
            line = line.replace("...", "")
        options = set(re.findall(r"(?<![\w-])(--[a-z][a-z-]*)", line))
        help_text = subprocess.run(
            [sys.executable, "-m", "gymhub", *sub.split(), "--help"],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "COLUMNS": "200"},
        ).stdout
        missing = {o for o in options if o not in help_text}
        assert not missing, f"`{line}` documents {missing}, which `gymhub {sub}` does not accept"


def _cli(*args: str, cwd: Path, check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [sys.executable, "-m", "gymhub", *args], cwd=cwd, capture_output=True, text=True, timeout=600
    )
    if check:
        assert result.returncode == 0, f"gymhub {' '.join(args)}:\n{result.stderr[-3000:]}"
    return result


@pytest.fixture
def listening() -> Iterator[object]:
    started: list[subprocess.Popen[str]] = []

    def start(args: list[str], cwd: Path) -> tuple[subprocess.Popen[str], str]:
        proc = subprocess.Popen(
            [sys.executable, "-m", "gymhub", *args],
            cwd=cwd,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        started.append(proc)
        assert proc.stderr is not None
        line = proc.stderr.readline()  # "serving ... at http://127.0.0.1:PORT (Ctrl-C stops)"
        match = re.search(r"at (http://\S+)", line)
        assert match, f"no URL printed by gymhub {' '.join(args)}: {line!r}"
        return proc, match.group(1)

    yield start
    for proc in started:
        proc.terminate()
        proc.wait(20)


@pytest.mark.slow
def test_the_cli_section_runs_on_a_small_scale(tmp_path: Path, listening: object) -> None:
    """The README's command lines with small numbers: --tasks 2 instead of 50, one env."""
    import httpx

    documented = {_subcommand(line) for line in readme_command_lines()}
    ran: set[str] = set()

    def cli(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        ran.add(_subcommand("gymhub " + " ".join(args)))
        return _cli(*args, cwd=tmp_path, check=check)

    assert json.loads(cli("list", "--json").stdout)
    assert "code-python-v0" in cli("info", "code-python-v0").stdout
    summary = json.loads(
        cli(
            "rollout", "code-python-v0", "--policy", "reference", "--tasks", "2", "--group-size", "2",
            "--concurrency", "2", "--split", "train", "--db", "runs.db", "--json",
        ).stdout
    )  # fmt: skip
    run_id = summary["run_id"]
    assert summary["trajectories"] == 4 and summary["mean_outcome"] == 1.0
    resumed = json.loads(
        cli("rollout", "code-python-v0", "--db", "runs.db", "--resume", run_id, "--json").stdout
    )
    assert resumed["new_trajectories"] == 0 and resumed["trajectories"] == 4
    for fmt, out in (("jsonl", "run.jsonl"), ("parquet", "run.parquet")):
        cli("export", run_id, "--format", fmt, "--out", out, "--db", "runs.db")
        assert (tmp_path / out).stat().st_size > 0
    assert "0 changed" in cli("verify", "run.jsonl").stdout
    assert "RLVP reachability" in cli("rlvp-report", run_id, "--db", "runs.db").stdout
    assert run_id in cli("runs", "--db", "runs.db").stdout
    table = json.loads(
        cli("eval", "toy-letters-v0", "--policy", "reference", "--k", "2", "--tasks", "2",
            "--split", "eval", "--db", "runs.db", "--json").stdout
    )  # fmt: skip
    cli("report", table["run_id"], "--db", "runs.db", "-o", "report.html")
    assert (tmp_path / "report.html").read_text().lstrip().lower().startswith("<!doctype html")
    cli(
        "bench",
        "verifiers",
        "toy-letters-v0",
        "--tasks",
        "2",
        "--repeats",
        "1",
        "--mutants",
        "1",
        "--out",
        "bench",
    )
    assert (tmp_path / "bench" / "verifier_bench.json").exists()
    cli(
        "openrlhf-agent",
        "search-v0",
        "--tokenizer",
        "path/to/model",
        "-o",
        "agent.py",
        "--data",
        "prompts.jsonl",
    )
    assert (tmp_path / "agent.py").exists() and (tmp_path / "prompts.jsonl").exists()
    assert "local" in cli("sandbox", "check").stdout
    start = listening  # type: ignore[assignment]
    _, url = start(["serve", "toy-letters-v0", "--port", "0"], tmp_path)  # type: ignore[operator]
    ran.add("serve")
    assert httpx.get(f"{url}/healthz").json()["status"] == "ok"
    _, url = start(["serve-reward", "toy-letters-v0", "--port", "0"], tmp_path)  # type: ignore[operator]
    ran.add("serve-reward")
    scored = httpx.post(f"{url}/get_reward", json={"query": ["x"], "prompts": ["x"], "labels": ["x"]})
    assert scored.status_code < 500
    port = free_port()
    mcp = subprocess.Popen(
        [gymhub_cli(), "mcp", "toy-letters-v0", "--transport", "http", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_for_port(port, mcp)  # type: ignore[arg-type]
        ran.add("mcp")
    finally:
        mcp.terminate()
        mcp.wait(20)
    # `rollout --backend ray` is the rollout above with Ray workers: tests/test_ray_backend.py
    not_run = documented - ran
    assert not_run == set(NOT_RUN), f"README commands not run here: {not_run - set(NOT_RUN)}"
    print("not run:", json.dumps(NOT_RUN, indent=1))


def test_readme_block_parser_sees_the_commands() -> None:
    subs = {_subcommand(line) for line in readme_command_lines()}
    assert {"rollout", "export", "verify", "serve", "runs"} <= subs
    assert shlex.split(readme_command_lines()[0])[0] == "gymhub"


@pytest.mark.parametrize(
    ("code", "works"),
    [
        ("import gymnasium, gymhub; env = gymnasium.make('gymhub/toy-letters-v0')", True),
        ("import gymnasium; env = gymnasium.make('gymhub:gymhub/toy-letters-v0')", True),
        # Gymnasium 1.x loads no plugin entry points: gymhub's .pth hook registers the ids
        # when gymnasium is imported (the wheel ships it; `make` writes it for -e installs)
        ("import gymnasium; env = gymnasium.make('gymhub/toy-letters-v0')", True),
        ("import gymnasium.envs.registration as r; env = r.make('gymhub/toy-letters-v0')", True),
        # the hook is what does it: turned off, the bare id is unknown
        ("import gymnasium; env = gymnasium.make('gymhub/toy-letters-v0')", False),
    ],
)
def test_gymnasium_ids_in_a_fresh_interpreter(code: str, works: bool, tmp_path: Path) -> None:
    play = "; env.reset(seed=0); print(env.step('c' * 5)[4]['verdict'].outcome)"
    environ = dict(os.environ)
    environ.pop("GYMHUB_NO_GYMNASIUM_HOOK", None)
    if not works:
        environ["GYMHUB_NO_GYMNASIUM_HOOK"] = "1"
    result = subprocess.run(
        [sys.executable, "-c", code + play], capture_output=True, text=True, cwd=tmp_path, env=environ
    )
    assert (result.returncode == 0) is works, result.stderr[-2000:]
    if not works:
        assert "NamespaceNotFound" in result.stderr
