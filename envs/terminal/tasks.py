"""Procedurally generated shell tasks: a small realistic file tree, an instruction, hidden
checks on the final file system, and a reference command script. Seeded: same ids everywhere.

Every kind spreads its parameters so that no answer fits many tasks: each spec names its
``answer`` (what a blind policy would have to guess: the number, the value list, the modes,
the archive to build, the repo and message, the setting, the script's output) and the task
set keeps at most one task per answer and kind. Nothing a task asks for is true at the start.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from gymhub._tool_calls import scripted_tool_calls
from gymhub.types import Task, content_split

Difficulty = Literal[1, 2, 3]
DIFFICULTIES: tuple[Difficulty, ...] = (1, 2, 3)
MAX_DRAWS_PER_TASK = 20  # draws a kind may take per task it keeps, before it gives up
SERVICES = ["auth", "billing", "search", "mailer", "gateway", "cache", "oauth", "ledger", "queue", "cdn"]
SERVICES += ["payments", "reports"]
LEVELS = ["INFO", "WARN", "ERROR", "DEBUG"]
NAMES = ["ada", "bob", "chen", "dana", "eli", "fatima", "gus", "hana", "ivan", "jo", "kemal", "lena"]
NAMES += ["mario", "nadia", "omar", "priya", "quinn", "rosa", "sven", "tariq", "uma", "vera", "wei", "yara"]
CITIES = ["Lyon", "Oslo", "Kyoto", "Lima", "Pune", "Accra", "Quito", "Perth", "Bergen", "Cusco"]
CITIES += ["Dakar", "Hanoi", "Izmir", "Jaipur", "Kazan", "Leeds", "Malmo", "Nantes", "Porto", "Riga"]
WORDS = ["alpha", "bravo", "delta", "echo", "kilo", "lima", "oscar", "romeo", "sierra", "tango", "zulu"]


class TerminalSpec(BaseModel):
    """One drawn shell task, before it becomes a :class:`Task`.

    ``checks`` are the goals read from the final file system; ``keep`` what must still hold at the
    end (checked as invariants, with the untouched inputs); ``reference`` the commands of the
    reference solution. ``answer`` is what a blind policy would have to guess, ``question`` what the
    task asks where several tasks could share an answer (by default the answer): the task set keeps
    one task per answer and per question of a kind.
    """

    model_config = ConfigDict(frozen=True)

    difficulty: Difficulty
    prompt: str
    files: dict[str, str]
    modes: dict[str, int] = Field(default_factory=dict)
    checks: list[dict[str, Any]]
    keep: list[dict[str, Any]] = Field(default_factory=list)
    reference: list[str]
    answer: str
    question: str | None = None

    @property
    def asked(self) -> str:
        return self.answer if self.question is None else self.question


def difficulty_of(draw: int) -> Difficulty:
    """The difficulty of a kind's ``draw``-th task: the draws cycle through 1, 2, 3."""
    return DIFFICULTIES[draw % len(DIFFICULTIES)]


def draw_rng(seed: int, kind: str, draw: int) -> random.Random:
    """The generator of one draw: a function of the seed, kind and draw only."""
    return random.Random(f"{seed}:{kind}:{draw}")


def _text(rng: random.Random, title: str, lines: int) -> str:
    """A small document whose bytes differ from task to task."""
    body = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 8))) for _ in range(lines)]
    return f"# {title}\n" + "\n".join(body) + f"\nref {rng.randint(10**5, 10**6)}\n"


def count_errors(rng: random.Random, difficulty: Difficulty) -> TerminalSpec:
    svc, lvl = rng.choice(SERVICES), rng.choice(LEVELS)
    count = rng.randint(1, 40 + 60 * difficulty)  # the answer: spread, never 0
    others = [(lv, s) for lv in LEVELS for s in SERVICES if (lv, s) != (lvl, svc)]
    near = [(lv, s) for lv, s in others if lv == lvl or s == svc]  # the lines a sloppy grep counts
    picks = [(lvl, svc)] * count + [
        rng.choice(near if rng.random() < 0.5 else others) for _ in range(60 * difficulty)
    ]
    stamps = sorted(
        f"2026-11-{rng.randint(1, 28):02d}T{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}" for _ in picks
    )
    rng.shuffle(picks)
    log = "".join(
        f"{t} {lv} svc={s} id={rng.randint(1000, 9999)}\n" for t, (lv, s) in zip(stamps, picks, strict=True)
    )
    return TerminalSpec(
        difficulty=difficulty,
        prompt=f"Count the {lvl} lines of service {svc} in input/app.log and write the number "
        f"(just the number) to output/count.txt.",
        files={"input/app.log": log},
        checks=[{"kind": "file", "path": "output/count.txt", "content": f"{count}\n", "strip": True}],
        reference=[
            "mkdir -p output",
            f"grep -c ' {lvl} svc={svc} ' input/app.log > output/count.txt || true",
        ],
        answer=f"count {count}",
        question=f"{lvl} {svc}",  # one task per question: replaying another task's script fails
    )


def unique_values(rng: random.Random, difficulty: Difficulty) -> TerminalSpec:
    col, label, pool = rng.choice([(1, "name", NAMES), (2, "city", CITIES)])
    min_age = rng.randint(25, 60)
    chosen = rng.sample(pool, rng.randint(3, 10))  # the answer: a subset of the pool
    decoys = rng.sample([v for v in pool if v not in chosen], rng.randint(1, 4))  # only in younger rows
    # On the edge: one wanted value only at exactly min_age, one decoy at min_age - 1, so any
    # other threshold (another task's script) gets the set wrong.
    edge, *rest = chosen
    rows = [(edge, min_age), (decoys[0], min_age - 1)]
    rows += [(v, rng.randint(min_age, 80)) for v in rest] + [
        (v, rng.randint(18, min_age - 1)) for v in decoys
    ]
    for _ in range(10 * difficulty + rng.randint(0, 10)):
        v = rng.choice(rest + decoys)
        rows.append((v, rng.randint(18, 80) if v in rest else rng.randint(18, min_age - 1)))
    rng.shuffle(rows)
    cells = [(v, rng.choice(CITIES), a) if col == 1 else (rng.choice(NAMES), v, a) for v, a in rows]
    csv = "name,city,age\n" + "".join(f"{n},{c},{a}\n" for n, c, a in cells)
    values = sorted(chosen)
    return TerminalSpec(
        difficulty=difficulty,
        prompt=f"Write the distinct values of the '{label}' column of input/people.csv (no header) over "
        f"the rows whose age is at least {min_age}, sorted, one per line, to output/{label}s.txt.",
        files={"input/people.csv": csv},
        checks=[
            {
                "kind": "file",
                "path": f"output/{label}s.txt",
                "content": "\n".join(values) + "\n",
                "strip": True,
            }
        ],
        reference=[
            "mkdir -p output",
            f"awk -F, 'NR > 1 && $3 >= {min_age} {{ print ${col} }}' input/people.csv "
            f"| sort -u > output/{label}s.txt",
        ],
        answer=f"{label}s {' '.join(values)}",
        question=f"{label} {min_age}",
    )


SCRIPT_DIRS = ["scripts", "bin", "tools", "hooks"]
EXEC_MODES = [0o755, 0o750, 0o700, 0o775, 0o711, 0o555, 0o705, 0o751]
SECRET_FILES = ["config/secret.env", "config/db.env", "keys/api.key", "config/token.txt"]
SECRET_MODES = [0o600, 0o640, 0o400, 0o440, 0o660, 0o604]
SHARED_FILES = ["data/report.csv", "data/summary.txt", "public/index.html"]
SHARED_MODES = [0o644, 0o664, 0o444, 0o666, 0o604]


def permissions(rng: random.Random, difficulty: Difficulty) -> TerminalSpec:
    folder = rng.choice(SCRIPT_DIRS)
    names = rng.sample(
        ["build", "deploy", "lint", "test", "clean", "release", "migrate", "backup"], 1 + difficulty
    )
    scripts = [f"{folder}/{n}.sh" for n in names]
    secret, shared = rng.choice(SECRET_FILES), rng.choice(SHARED_FILES)
    exec_mode, secret_mode, shared_mode = (
        rng.choice(EXEC_MODES),
        rng.choice(SECRET_MODES),
        rng.choice(SHARED_MODES),
    )
    files = {s: f"#!/bin/sh\necho {rng.choice(WORDS)} {rng.randint(1, 10**6)}\n" for s in scripts}
    files[secret] = f"TOKEN={rng.randint(10**8, 10**9)}\n"
    files[shared] = _text(rng, shared, 2)
    readme = f"{folder}/README.md"
    files[readme] = _text(rng, "scripts", 1)
    # every target differs from the start: doing nothing reaches no sub-goal
    modes = {p: 0o644 for p in files} | {shared: rng.choice([0o600, 0o640, 0o660])}
    targets = {s: exec_mode for s in scripts} | {secret: secret_mode, shared: shared_mode}
    # a goal holds only with the bytes intact: emptying a file and setting its mode is no progress
    checks = [{"kind": "file", "path": p, "mode": m, "content": files[p]} for p, m in sorted(targets.items())]
    return TerminalSpec(
        difficulty=difficulty,
        prompt=f"Set permissions: every .sh script in {folder}/ to mode {exec_mode:o}, {secret} to mode "
        f"{secret_mode:o} and {shared} to mode {shared_mode:o}. Change nothing else: no file's contents, "
        f"no other file's mode.",
        files=files,
        modes=modes,
        checks=checks,
        keep=[{"kind": "file", "path": readme, "mode": 0o644, "content": files[readme]}],
        reference=[
            f"chmod {exec_mode:o} {folder}/*.sh",
            f"chmod {secret_mode:o} {secret}",
            f"chmod {shared_mode:o} {shared}",
        ],
        answer=f"modes {exec_mode:o} {secret_mode:o} {shared_mode:o}",
    )


ARCHIVE_FORMATS = {  # suffix -> (format read from the bytes, what the prompt calls it, command)
    ".tar.gz": ("tar+gzip", "a gzip-compressed tar archive", "tar czf"),
    ".tgz": ("tar+gzip", "a gzip-compressed tar archive", "tar czf"),
    ".tar.bz2": ("tar+bzip2", "a bzip2-compressed tar archive", "tar cjf"),
    ".tar.xz": ("tar+xz", "an xz-compressed tar archive", "tar cJf"),
    ".tar": ("tar", "an uncompressed tar archive", "tar cf"),
    ".zip": ("zip", "a zip archive", "zip -q"),
}
STEMS = ["intro", "api", "faq", "guide", "notes", "howto", "changelog", "setup", "usage", "design"]


def archive(rng: random.Random, difficulty: Difficulty) -> TerminalSpec:
    folder, decoy = rng.sample(
        ["docs", "notes", "reports", "manual", "wiki", "guides", "specs", "minutes"], 2
    )
    ext = rng.choice(["md", "txt", "rst", "csv", "log"])
    suffix = rng.choice(sorted(ARCHIVE_FORMATS))
    name = rng.choice(["backup", "bundle", "export", "snapshot", "handoff"]) + suffix
    fmt, described, command = ARCHIVE_FORMATS[suffix]
    stems = rng.sample(STEMS, 2 + difficulty + 2)
    wanted = {f"{folder}/{s}.{ext}": _text(rng, s, 2 + difficulty) for s in stems[: 2 + difficulty]}
    files = dict(wanted)
    for s in stems[2 + difficulty :]:  # same folder, other extensions: not to be archived
        files[
            f"{folder}/{s}.{rng.choice([e for e in ('md', 'txt', 'rst', 'csv', 'log', 'tmp') if e != ext])}"
        ] = _text(rng, s, 1)
    files[f"{decoy}/{stems[0]}.{ext}"] = _text(rng, stems[0], 1)  # same extension, other folder
    return TerminalSpec(
        difficulty=difficulty,
        prompt=f"Create {name}, {described}, holding every .{ext} file of {folder}/ (member paths "
        f"starting with {folder}/) and nothing else. Create no other archive; leave the files "
        "themselves as they are.",
        files=files,
        checks=[{"kind": "archive", "path": name, "format": fmt, "members": dict(sorted(wanted.items()))}],
        keep=[
            {"kind": "only-archive", "path": name},  # one archive per guess would cover every name
            *({"kind": "file", "path": p, "content": c} for p, c in sorted(files.items())),
        ],
        reference=[f"{command} {name} {folder}/*.{ext}"],
        answer=f"archive {name} of {folder}/*.{ext}",
    )


def git_commit(rng: random.Random, difficulty: Difficulty) -> TerminalSpec:
    repo = rng.choice(["project", "app", "service", "webapp", "toolkit", "backend", "site", "plugin"])
    message = (
        rng.choice(
            ["Initial import", "Add sources", "First version", "Start project", "Import code", "Bootstrap"]
        )
        + f" #{rng.randint(1, 999)}"
    )
    pool = ["main.py", "util.py", "README.md", "setup.cfg", "config.yaml", "Makefile", "src/core.py"]
    pool += ["tests/test_core.py", "docs/index.md"]
    tracked = {n: _text(rng, n, difficulty) for n in rng.sample(pool, 1 + difficulty)}
    files = {f"{repo}/{n}": c for n, c in tracked.items()}
    files["notes/todo.txt"] = _text(rng, "todo", 1)  # outside the repo: a repo one level up takes it in
    return TerminalSpec(
        difficulty=difficulty,
        prompt=f"Turn {repo}/ into a git repository (its own, in {repo}/) and commit all its files in "
        f"one commit with the message '{message}'. Leave nothing uncommitted.",
        files=files,
        checks=[
            {
                "kind": "git",
                "repo": repo,
                "goal": goal,
                "files": dict(sorted(tracked.items())),
                "message": message + "\n",
            }
            for goal in ("commit", "one-commit", "clean")
        ],
        reference=[
            f"git -C {repo} init -q",
            f"git -C {repo} add -A && git -C {repo} -c user.name=agent -c user.email=agent@example.com "
            f"commit -qm '{message}'",
        ],
        answer=f"git {repo} {message}",
    )


CONFIG_KEYS = {  # key -> (range of valid values, the invalid value the file starts with)
    "port": ((1024, 65535), "eighty"),
    "workers": ((2, 64), "many"),
    "timeout": ((5, 900), "forever"),
    "max_connections": ((10, 5000), "lots"),
    "retries": ((1, 20), "-"),
}


def fix_config(rng: random.Random, difficulty: Difficulty) -> TerminalSpec:
    key = rng.choice(sorted(CONFIG_KEYS))
    values = {k: rng.randint(*bounds) for k, (bounds, _) in CONFIG_KEYS.items()}
    metrics_port = rng.randint(9000, 9999)

    def config(server: dict[str, Any]) -> str:
        lines = "".join(f"{k} = {v}\n" for k, v in server.items())
        return f"[server]\nhost = 0.0.0.0\n{lines}\n[metrics]\nport = {metrics_port}\n"

    broken = values | {key: CONFIG_KEYS[key][1]}
    return TerminalSpec(
        difficulty=difficulty,
        prompt=f"config/app.ini has an invalid {key} in its [server] section. Set it to {values[key]}; "
        f"change nothing else.",
        files={"config/app.ini": config(broken)},
        checks=[{"kind": "file", "path": "config/app.ini", "content": config(values)}],
        reference=[f"sed -i 's/^{key} = {CONFIG_KEYS[key][1]}$/{key} = {values[key]}/' config/app.ini"],
        answer=f"config {key}={values[key]}",
    )


GREETINGS = ["Hello", "Hi", "Welcome", "Greetings", "Hey", "Howdy", "Good day", "Salut", "Hola", "Ciao"]
GREETINGS += ["Hallo", "Namaste"]


def write_script(rng: random.Random, difficulty: Difficulty) -> TerminalSpec:
    script = rng.choice(["greet.sh", "hello.sh", "welcome.sh", "say-hi.sh"])
    greeting, punct = rng.choice(GREETINGS), rng.choice(["!", ".", "!!"])
    name = rng.choice(NAMES).capitalize()
    times = rng.randint(1, 2 + 2 * difficulty)
    loop = f'for i in $(seq {times}); do echo "{greeting}, $1{punct}"; done'
    return TerminalSpec(
        difficulty=difficulty,
        prompt=f"Write an executable shell script {script} that prints the line '{greeting}, NAME{punct}' "
        f"{times} time(s), where NAME is its first argument.",
        files={},
        checks=[
            {"kind": "command", "cmd": f"./{script} {name}", "stdout": f"{greeting}, {name}{punct}\n" * times}
        ],
        reference=[f"printf '%s\\n' '#!/bin/sh' '{loop}' > {script}", f"chmod +x {script}"],
        answer=f"script {script} {greeting}, NAME{punct} x{times}",
    )


GENERATORS: dict[str, Callable[[random.Random, Difficulty], TerminalSpec]] = {
    "count-errors": count_errors,
    "unique-values": unique_values,
    "permissions": permissions,
    "archive": archive,
    "git-commit": git_commit,
    "fix-config": fix_config,
    "write-script": write_script,
}


def build_terminal_tasks(env_id: str, seed: int = 0, per_kind: int = 45) -> list[Task]:
    """``per_kind`` tasks of each kind with pairwise different answers (a task whose answer was
    drawn before is skipped), difficulty 1..3."""
    tasks: list[Task] = []
    for kind, generate in GENERATORS.items():
        answers: set[str] = set()
        questions: set[str] = set()
        for draw in range(per_kind * MAX_DRAWS_PER_TASK):
            if len(answers) == per_kind:
                break
            spec = generate(draw_rng(seed, kind, draw), difficulty_of(draw))
            if spec.answer in answers or spec.asked in questions:
                continue
            answers.add(spec.answer)
            questions.add(spec.asked)
            tasks.append(_task(env_id, kind, spec))
    return tasks


def _task(env_id: str, kind: str, spec: TerminalSpec) -> Task:
    inputs = sorted(p for p in spec.files if p.startswith("input/"))
    inputs_unchanged = [{"kind": "file", "path": p, "content": spec.files[p]} for p in inputs]
    hidden = {
        "checks": spec.checks + [c | {"invariant": True} for c in inputs_unchanged + spec.keep],
        "protected": inputs,  # the instructions forbid touching the inputs
        "answer": spec.answer,
        "solutions": {"reference": _bash_script(spec.reference), "nothing": _bash_script([])},
    }
    prompt = (
        spec.prompt + "\n\nYou are in the task's directory. Use the bash tool; call submit when "
        "done. Files under input/ are data: do not modify them."
    )
    metadata = {"kind": kind, "difficulty": spec.difficulty, "files": spec.files, "modes": spec.modes}
    task = Task.create(env_id, "train", prompt, hidden, metadata)
    return task.model_copy(update={"split": content_split(hidden)})


def _bash_script(commands: list[str]) -> list[dict[str, Any]]:
    """A reference script: each command through the bash tool, then submit."""
    return scripted_tool_calls([*[("bash", {"command": c}) for c in commands], ("submit", {})])
