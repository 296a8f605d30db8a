"""Procedurally generated shell tasks: a small realistic file tree, an instruction, hidden
checks on the final file system, and a reference command script. Seeded: same ids everywhere."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from gymhub.tool_calls import scripted_tool_calls
from gymhub.types import Task

Spec = dict[str, Any]  # {"prompt", "files", "checks", "reference": [commands]}
SERVICES = ["auth", "billing", "search", "mailer", "gateway", "cache"]
LEVELS = ["INFO", "WARN", "ERROR", "DEBUG"]
NAMES = ["ada", "bob", "chen", "dana", "eli", "fatima", "gus", "hana", "ivan", "jo"]
CITIES = ["Lyon", "Oslo", "Kyoto", "Lima", "Pune", "Accra", "Quito", "Perth"]


def _log(rng: random.Random, n: int) -> str:
    lines = [
        f"2026-11-{rng.randint(1, 28):02d}T{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d} "
        f"{rng.choice(LEVELS)} svc={rng.choice(SERVICES)} id={rng.randint(1000, 9999)}"
        for _ in range(n)
    ]
    return "\n".join(lines) + "\n"


def count_errors(rng: random.Random, level: int) -> Spec:
    log = _log(rng, 40 * level)
    svc, lvl = rng.choice(SERVICES), rng.choice(["ERROR", "WARN"])
    count = sum(1 for line in log.splitlines() if f" {lvl} svc={svc} " in line)
    if count == 0:  # "0" is a guess anyone can make: only tasks with something to count
        return count_errors(rng, level)
    return {
        "prompt": f"Count the {lvl} lines of service {svc} in input/app.log and write the number "
        f"(just the number) to output/count.txt.",
        "files": {"input/app.log": log},
        "checks": [{"kind": "file", "path": "output/count.txt", "content": f"{count}\n", "strip": True}],
        "reference": [
            "mkdir -p output",
            f"grep -c ' {lvl} svc={svc} ' input/app.log > output/count.txt || true",
        ],
    }


def unique_values(rng: random.Random, level: int) -> Spec:
    rows = [(rng.choice(NAMES), rng.choice(CITIES), rng.randint(18, 80)) for _ in range(10 * level + 5)]
    csv = "name,city,age\n" + "".join(f"{n},{c},{a}\n" for n, c, a in rows)
    col, label = rng.choice([(1, "name"), (2, "city")])
    values = sorted({r[col - 1] for r in rows})
    return {
        "prompt": f"Write the distinct values of the '{label}' column of input/people.csv (no header), "
        f"sorted, one per line, to output/{label}s.txt.",
        "files": {"input/people.csv": csv},
        "checks": [
            {
                "kind": "file",
                "path": f"output/{label}s.txt",
                "content": "\n".join(values) + "\n",
                "strip": True,
            }
        ],
        "reference": [
            "mkdir -p output",
            f"tail -n +2 input/people.csv | cut -d, -f{col} | sort -u > output/{label}s.txt",
        ],
    }


def permissions(rng: random.Random, level: int) -> Spec:
    scripts = [
        f"scripts/{w}.sh" for w in rng.sample(["build", "deploy", "lint", "test", "clean"], 1 + level % 3)
    ]
    files = {s: "#!/bin/sh\necho ok\n" for s in scripts}
    files["config/secret.env"] = f"TOKEN={rng.randint(10**8, 10**9)}\n"
    checks = [{"kind": "file", "path": s, "mode": 0o755} for s in scripts]
    checks.append({"kind": "file", "path": "config/secret.env", "mode": 0o600})
    return {
        "prompt": "Make every script in scripts/ executable (mode 755) and make config/secret.env "
        "readable and writable by its owner only (mode 600).",
        "files": files,
        "checks": checks,
        "reference": ["chmod 755 scripts/*.sh", "chmod 600 config/secret.env"],
    }


def archive(rng: random.Random, level: int) -> Spec:
    docs = sorted(
        {
            f"docs/{rng.choice(['intro', 'api', 'faq', 'guide', 'notes', 'howto'])}.md"
            for _ in range(2 + level)
        }
    )
    files = {d: f"# {d}\n" for d in docs}
    files["docs/draft.tmp"] = "scratch\n"
    return {
        "prompt": "Create backup.tar.gz holding every .md file of docs/ (paths starting with docs/), "
        "and nothing else.",
        "files": files,
        "checks": [
            {"kind": "command", "cmd": "tar tzf backup.tar.gz | sort", "stdout": "\n".join(docs) + "\n"}
        ],
        "reference": ["tar czf backup.tar.gz docs/*.md"],
    }


def git_commit(rng: random.Random, level: int) -> Spec:
    message = (
        rng.choice(["Initial import", "Add sources", "First version", "Start project"])
        + f" #{rng.randint(1, 99)}"
    )
    files = {
        f"project/{n}": f"# {n}\n" for n in rng.sample(["main.py", "util.py", "README.md", "setup.cfg"], 2)
    }
    return {
        "prompt": f"Turn project/ into a git repository and commit all its files in one commit with the "
        f"message '{message}'.",
        "files": files,
        "checks": [
            {"kind": "command", "cmd": "git -C project log --format=%s", "stdout": message + "\n"},
            {"kind": "command", "cmd": "git -C project status --porcelain", "stdout": ""},
        ],
        "reference": [
            "git -C project init -q",
            f"git -C project add -A && git -C project -c user.name=agent -c user.email=agent@example.com "
            f"commit -qm '{message}'",
        ],
    }


def fix_config(rng: random.Random, level: int) -> Spec:
    port, workers = rng.randint(1024, 9999), rng.randint(2, 16)
    config = f"[server]\nhost = 0.0.0.0\nport = eighty\nworkers = {workers}\n"
    return {
        "prompt": f"config/app.ini has an invalid port. Set it to {port}; change nothing else.",
        "files": {"config/app.ini": config},
        "checks": [
            {
                "kind": "file",
                "path": "config/app.ini",
                "content": f"[server]\nhost = 0.0.0.0\nport = {port}\nworkers = {workers}\n",
            }
        ],
        "reference": [f"sed -i 's/^port = .*/port = {port}/' config/app.ini"],
    }


def write_script(rng: random.Random, level: int) -> Spec:
    greeting = rng.choice(["Hello", "Hi", "Welcome", "Greetings"])
    name = rng.choice(NAMES).capitalize()
    times = rng.randint(1, 2 + level)
    loop = f'for i in $(seq {times}); do echo "{greeting}, $1!"; done'
    expected = f"{greeting}, {name}!\n" * times
    return {
        "prompt": f"Write an executable shell script greet.sh that prints the line '{greeting}, NAME!' "
        f"{times} time(s), where NAME is its first argument.",
        "files": {},
        "checks": [{"kind": "command", "cmd": f"./greet.sh {name}", "stdout": expected}],
        "reference": [f"printf '%s\\n' '#!/bin/sh' '{loop}' > greet.sh", "chmod +x greet.sh"],
    }


GENERATORS: dict[str, Callable[[random.Random, int], Spec]] = {
    "count-errors": count_errors,
    "unique-values": unique_values,
    "permissions": permissions,
    "archive": archive,
    "git-commit": git_commit,
    "fix-config": fix_config,
    "write-script": write_script,
}


def build_terminal_tasks(env_id: str, seed: int = 0, per_kind: int = 45) -> list[Task]:
    """``per_kind`` distinct tasks of each kind (duplicates drawn are skipped), difficulty 1..3."""
    tasks: list[Task] = []
    for kind, generate in GENERATORS.items():
        seen: set[str] = set()
        for index in range(per_kind * 20):
            if len(seen) == per_kind:
                break
            level = 1 + index % 3
            spec = generate(random.Random(f"{seed}:{kind}:{index}"), level)
            inputs_unchanged = [  # the instructions forbid touching the inputs
                {"kind": "file", "path": p, "content": c, "invariant": True}
                for p, c in sorted(spec["files"].items())
                if p.startswith("input/")
            ]
            hidden = {
                "checks": spec["checks"] + inputs_unchanged,
                "protected": sorted(p for p in spec["files"] if p.startswith("input/")),
                "solutions": {"reference": _bash_script(spec["reference"]), "nothing": _bash_script([])},
            }
            prompt = (
                spec["prompt"] + "\n\nYou are in the task's directory. Use the bash tool; call submit when "
                "done. Files under input/ are data: do not modify them."
            )
            task = Task.create(
                env_id, "train", prompt, hidden, {"kind": kind, "difficulty": level, "files": spec["files"]}
            )
            if task.id in seen:
                continue
            seen.add(task.id)
            split = "eval" if int(task.id, 16) % 5 == 0 else "train"
            tasks.append(task.model_copy(update={"split": split}))
    return tasks


def _bash_script(commands: list[str]) -> list[dict[str, Any]]:
    """A reference script: each command through the bash tool, then submit."""
    return scripted_tool_calls([*[("bash", {"command": c}) for c in commands], ("submit", {})])
