"""Attack class 1: a job sees nothing of the host it does not need.

The host plants a marker file (a secret name, a secret content) in every place a job has no
business seeing: the project checkout, every site-packages and the venv, a trajectory
database, and the shared scratch places /tmp, /var/tmp, /dev/shm, /run, /home, /root. A job —
a forked script and an exec'd program — then tries to read each file and list each folder.
The attack succeeds when any content or any planted name reaches the job.
"""

from __future__ import annotations

import os
import shlex
import site
import sqlite3
import sys
import sysconfig
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

import gymhub
from gymhub.sandboxes.job_client import JobServerSandbox

CHECKOUT = Path(__file__).resolve().parents[2]  # the project checkout these tests live in
INSTALLED = Path(gymhub.__file__).resolve().parents[1]  # where gymhub is imported from
SHARED_PLACES = ["/tmp", "/var/tmp", "/dev/shm", "/run", "/home", "/root"]


def _host_package_places() -> list[str]:
    """Where the host keeps Python packages: the venv's and the base interpreter's
    site-packages, the venv itself, and the folder of the installed answer keys."""
    import gymhub.envs.code.tasks as tasks  # type: ignore[import-not-found]

    places = {
        *site.getsitepackages(),
        sysconfig.get_paths()["purelib"],
        sysconfig.get_paths(vars={"base": sys.base_prefix, "platbase": sys.base_prefix})["purelib"],
        str(CHECKOUT / ".venv"),
        str(Path(tasks.__file__).resolve().parent),
        str(CHECKOUT),
        str(INSTALLED),
    }
    return sorted(p for p in places if os.path.isdir(p))


class Plant:
    def __init__(self, folder: str, name: str, content: str) -> None:
        self.folder, self.name, self.content = folder, name, content

    @property
    def path(self) -> str:
        return os.path.join(self.folder, self.name)


@pytest.fixture
def plants() -> Iterator[list[Plant]]:
    """Marker files (mode 0644: what tools leave behind) in every place a job must not see;
    the one in the checkout is a SQLite trajectory database (``gymhub.db`` lives there by
    default). Names end in ``.db`` so that git ignores them in the checkout."""
    planted: list[Plant] = []
    for folder in [*SHARED_PLACES, *_host_package_places()]:
        token = uuid.uuid4().hex
        plant = Plant(folder, f"gymhub-plant-{token[:16]}.db", f"secret-{token}")
        try:
            if folder == str(CHECKOUT):
                with sqlite3.connect(plant.path) as db:
                    db.execute("create table trajectories (verdict text)")
                    db.execute("insert into trajectories values (?)", (plant.content,))
                db.close()
            else:
                with open(plant.path, "x") as fh:
                    fh.write(plant.content)
            os.chmod(plant.path, 0o644)
        except OSError:
            continue  # a read-only place of this host: nothing planted there
        planted.append(plant)
    yield planted
    for plant in planted:
        Path(plant.path).unlink(missing_ok=True)


def _leaks(plants: list[Plant], stdout: bytes, stderr: bytes) -> list[str]:
    """Every plant whose content reached the job, or whose name showed in a listing."""
    out = []
    for plant in plants:
        if plant.content.encode() in stdout + stderr:
            out.append(f"read {plant.path}")
        if plant.name.encode() in stdout:
            out.append(f"listed {plant.folder}")
    return out


def test_a_script_job_reads_and_lists_nothing_of_the_host(box: JobServerSandbox, plants: list[Plant]) -> None:
    targets = [(p.folder, p.path) for p in plants]
    script = (
        "import os\n"
        f"for folder, path in {targets!r}:\n"
        "    try:\n"
        "        print(open(path, 'rb').read())\n"
        "    except OSError as exc:\n"
        "        print('no read', exc.errno)\n"
        "    try:\n"
        "        print(sorted(os.listdir(folder)))\n"
        "    except OSError as exc:\n"
        "        print('no list', exc.errno)\n"
    )
    result = box.run(script=script, timeout=20)
    assert result.exit_code == 0, result.stderr[-2000:]
    leaks = _leaks(plants, result.stdout, result.stderr)
    assert leaks == [], f"{box.backend}: the job saw the host: {leaks}"


def test_a_program_job_reads_and_lists_nothing_of_the_host(
    box: JobServerSandbox, plants: list[Plant]
) -> None:
    commands = [f"cat {shlex.quote(p.path)}; ls -a {shlex.quote(p.folder)}" for p in plants]
    result = box.run(["sh", "-c", "; ".join(commands) + "; true"], timeout=20)
    leaks = _leaks(plants, result.stdout, result.stderr)
    assert leaks == [], f"{box.backend}: the job saw the host: {leaks}"


def test_the_checkout_and_its_answer_keys_are_not_readable(box: JobServerSandbox) -> None:
    """No planting: the files as they are. The task generators are an answer key."""
    import gymhub.envs.code.tasks as tasks  # type: ignore[import-not-found]

    answer_key = Path(tasks.__file__).resolve()
    probes = [
        str(answer_key),
        str(CHECKOUT / "envs" / "code" / "tasks.py"),
        str(CHECKOUT / "pyproject.toml"),
        str(CHECKOUT / "registry.yaml"),
    ]
    script = (
        f"for path in {probes!r}:\n"
        "    try:\n"
        "        data = open(path, 'rb').read()\n"
        "        print('READ', path, len(data))\n"
        "    except OSError as exc:\n"
        "        print('refused', path, exc.errno)\n"
        "import importlib.util\n"
        "for name in ('gymhub', 'envs', 'sandboxes', 'verifiers', 'torch', 'pydantic'):\n"
        "    try:\n"
        "        spec = importlib.util.find_spec(name)\n"
        "    except Exception:\n"
        "        spec = None\n"
        "    if spec is not None:\n"
        "        print('IMPORTABLE', name, spec.origin)\n"
    )
    result = box.run(script=script, timeout=20)
    assert result.exit_code == 0, result.stderr[-2000:]
    seen = [line for line in result.stdout.decode().splitlines() if line.startswith(("READ", "IMPORTABLE"))]
    assert seen == [], f"{box.backend}: {seen}"
