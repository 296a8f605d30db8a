"""A sandbox whose owner is killed before it closes leaves its cgroup behind (the server dies
with its parent, the folders stay); `prune_cgroups` (`gymhub sandbox prune`) removes those
whose uid lease nobody holds, and leaves live sandboxes' alone."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from gymhub.sandboxes import create_sandbox
from gymhub.sandboxes.job_cgroup import prune_cgroups
from gymhub.sandboxes.uid_lease import lease_held

OWNER = (
    "import json, time\n"
    "from gymhub.sandboxes import create_sandbox\n"
    "box = create_sandbox('local')\n"
    "print(json.dumps([box.job_uid, [str(f) for f in box.cgroup.folders]]), flush=True)\n"
    "time.sleep(600)\n"
)


def test_a_killed_owners_cgroup_is_pruned_and_a_live_ones_is_kept() -> None:
    with create_sandbox("local") as mine:
        assert mine.cgroup is not None and mine.cgroup.active
        owner = subprocess.Popen([sys.executable, "-c", OWNER], stdout=subprocess.PIPE, text=True)
        uid, folders = json.loads(owner.stdout.readline())  # type: ignore[union-attr]
        os.kill(owner.pid, signal.SIGKILL)
        owner.wait()
        deadline = time.monotonic() + 10
        while lease_held(uid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not lease_held(uid)
        assert all(Path(f).exists() for f in folders)  # left behind
        prune_cgroups()  # (a prune running elsewhere at the same time may have removed them first)
        assert not any(Path(f).exists() for f in folders)
        assert all(f.exists() for f in mine.cgroup.folders)  # a live sandbox's stays
        assert mine.run(script="print('alive')").stdout == b"alive\n"
