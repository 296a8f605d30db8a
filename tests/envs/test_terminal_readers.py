"""The readers behind terminal-v0's snapshot, on real archives and repositories built here
with tar, zip and git: contents in, clocks out; damage and tricks show."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from gymhub.envs.terminal import archives
from gymhub.envs.terminal.archives import read_archive
from gymhub.envs.terminal.snapshot import canonical_snapshot

pytestmark = pytest.mark.skipif(
    not all(shutil.which(t) for t in ("git", "tar", "zip", "xz", "bzip2")), reason="needs git, tar, zip"
)
SOURCES = {"docs/a.md": "# a\nalpha\n", "docs/b.md": "# b\n" + "bravo " * 300 + "\n"}
GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "init.defaultBranch=main"]


@dataclass(frozen=True)
class Entry:  # what a sandbox's list_files gives
    path: str
    kind: str
    size: int
    mode: int


def snapshot(root: Path) -> dict[str, Any]:
    entries = []
    for path in sorted(root.rglob("*")):
        info = path.lstat()
        kind = "symlink" if path.is_symlink() else "dir" if path.is_dir() else "file"
        entries.append(Entry(str(path.relative_to(root)), kind, info.st_size, stat.S_IMODE(info.st_mode)))
    return canonical_snapshot(entries, lambda p: (root / p).read_bytes())


def sh(cwd: Path, *commands: str) -> None:
    for command in commands:
        subprocess.run(["bash", "-c", command], cwd=cwd, check=True, capture_output=True)


def tree(root: Path, when: int) -> Path:
    for name, content in SOURCES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(content)
        os.utime(root / name, (when, when))
    return root


COMMANDS = {
    "tar+gzip": "tar czf out docs/*.md",
    "tar+bzip2": "tar cjf out docs/*.md",
    "tar+xz": "tar cJf out docs/*.md",
    "tar": "tar cf out docs/*.md",
    "zip": "zip -q out.zip docs/*.md && mv out.zip out",
}


@pytest.mark.parametrize("fmt", sorted(COMMANDS))
def test_an_archive_reads_as_its_members_and_no_clock(fmt: str, tmp_path: Path) -> None:
    raw, views = [], []
    for when in (1_000_000_000, 1_700_000_000):
        root = tree(tmp_path / str(when), when)
        sh(root, COMMANDS[fmt])
        raw.append((root / "out").read_bytes())
        views.append(read_archive(raw[-1]))
    assert raw[0] != raw[1] and views[0] == views[1]  # sources 22 years apart: other bytes, one view
    assert views[0]["error"] is None and views[0]["format"] == fmt
    assert {m["name"]: m["data"] for m in views[0]["members"]} == {k: v.encode() for k, v in SOURCES.items()}


@pytest.mark.parametrize(
    "fmt,damage",
    [
        ("tar+gzip", "crc"),  # a listing reads every header; only the end of the stream is bad
        ("tar+gzip", "cut:4"),
        ("tar+bzip2", "cut:4"),
        ("tar+xz", "cut:12"),
        ("zip", "member-byte"),
        ("tar", "garbage"),
    ],
)
def test_damage_a_listing_misses_is_an_error(fmt: str, damage: str, tmp_path: Path) -> None:
    root = tree(tmp_path, 1_000_000_000)
    command = COMMANDS[fmt].replace("zip -q", "zip -q -X -0")
    sh(root, command)
    data = bytearray((root / "out").read_bytes())
    if damage == "crc":
        data[-8] ^= 0xFF
    elif damage.startswith("cut:"):
        data = data[: -int(damage[4:])]
    elif damage == "member-byte":
        data[30 + len("docs/a.md")] ^= 0xFF
    else:  # a non-zero block after the last member, where tarfile would stop quietly
        end = 512 + 512 + 512 + 512 * 4  # a.md header+data, b.md header+data (1.8 kB)
        data[end + 10] = 0x41
    (root / "damaged").write_bytes(bytes(data))
    lister = ["unzip", "-Z1"] if fmt == "zip" else ["tar", "tf"]
    listing = subprocess.run([*lister, "damaged"], cwd=root, capture_output=True)
    assert b"docs/a.md" in listing.stdout  # the listing still shows the members
    view = read_archive(bytes(data))
    assert view["error"] is not None and view["members"] == []


def test_empty_members_are_seen_as_empty(tmp_path: Path) -> None:
    root = tree(tmp_path, 1_000_000_000)
    sh(root, "truncate -s 0 docs/*.md", COMMANDS["tar+gzip"])
    view = read_archive((root / "out").read_bytes())
    assert view["error"] is None and {m["data"] for m in view["members"]} == {b""}


def test_a_bomb_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(archives, "MAX_UNPACKED", 100_000)
    sh(tmp_path, "head -c 1000000 /dev/zero > big && tar czf out big")
    assert "more than" in read_archive((tmp_path / "out").read_bytes())["error"]


def make_repo(root: Path, *extra: str) -> Path:
    repo = tree(root, 1_000_000_000)
    git = " ".join(GIT)
    sh(repo, f"{git} init -q", f"{git} add -A", f"{git} commit -qm first", *extra)
    return repo


def repo_view(root: Path) -> dict[str, Any]:
    return snapshot(root)["git"][""]


def test_a_repository_reads_from_its_objects_loose_or_packed(tmp_path: Path) -> None:
    git = " ".join(GIT)
    second = "sed -i 's/bravo/BRAVO/g' docs/b.md && " + git + " commit -qam second"
    loose = repo_view(make_repo(tmp_path / "loose", second))
    assert loose["error"] is None and loose["status"] == []
    assert [c["message"] for c in loose["history"]] == ["second\n", "first\n"]
    assert loose["head_tree"]["docs/b.md"]["data"] == SOURCES["docs/b.md"].replace("bravo", "BRAVO").encode()
    for name, repack in {
        "ofs-delta": f"{git} gc -q --aggressive",
        "ref-delta": f"{git} -c repack.useDeltaBaseOffset=false repack -adfq && {git} prune",
        "index-v4": f"{git} update-index --index-version 4",
    }.items():
        root = make_repo(tmp_path / name, second, repack)
        if name != "index-v4":
            assert not list((root / ".git/objects").glob("??/*")), "all objects packed"
        assert repo_view(root) == loose, name


def test_a_later_commit_of_the_same_files_reads_the_same(tmp_path: Path) -> None:
    a = repo_view(make_repo(tmp_path / "a"))
    b = repo_view(make_repo(tmp_path / "b", f"{' '.join(GIT)} commit -q --amend --date=2001-01-01 -m first"))
    assert a == b and a["error"] is None


@pytest.mark.parametrize(
    "trick,status",
    [
        ("git config status.showUntrackedFiles no && touch new.txt", ["?? new.txt"]),
        ("echo '*' >> .git/info/exclude && touch new.txt", ["?? new.txt"]),
        ("printf '*\\n' > .gitignore && touch new.txt", ["?? .gitignore", "?? new.txt"]),
        ("git update-index --skip-worktree docs/a.md && echo x > docs/a.md", [" M docs/a.md"]),
        ("git update-index --assume-unchanged docs/a.md && echo x > docs/a.md", [" M docs/a.md"]),
        ("rm docs/a.md", [" D docs/a.md"]),
        ("echo x > docs/c.md && git add docs/c.md", ["A  docs/c.md"]),
        ("chmod +x docs/a.md", [" M docs/a.md"]),
    ],
)
def test_status_ignores_every_ignore_rule_and_flag(trick: str, status: list[str], tmp_path: Path) -> None:
    view = repo_view(make_repo(tmp_path, trick))
    assert view["error"] is None and view["status"] == status


@pytest.mark.parametrize(
    "trick,error",
    [
        ("git config core.worktree ..", "core.worktree"),
        ("git config include.path /etc/gitconfig", "include"),
        ("printf 'garbage' > .git/index", "index"),
    ],
)
def test_a_repository_that_is_not_what_it_seems_is_an_error(trick: str, error: str, tmp_path: Path) -> None:
    view = repo_view(make_repo(tmp_path, trick))
    assert view["error"] is not None and error in view["error"], view["error"]


def test_an_object_whose_bytes_do_not_match_its_name_is_an_error(tmp_path: Path) -> None:
    root = make_repo(tmp_path)
    for path in (root / ".git/objects").glob("??/*"):
        path.chmod(0o644)
        path.write_bytes(zlib.compress(b"blob 6\x00forged"))  # well-formed, under a name not its own
    view = repo_view(root)
    assert view["error"] is not None and "does not match its hash" in view["error"]


def test_repositories_are_keyed_by_where_their_git_dir_is(tmp_path: Path) -> None:
    root = tree(tmp_path, 1_000_000_000)
    sh(root, f"{' '.join(GIT)} init -q docs", "echo 'gitdir: ../elsewhere' > .git")
    state = snapshot(root)
    assert set(state["git"]) == {"", "docs"}
    assert "not a directory" in state["git"][""]["error"]
    assert not [p for p in state["files"] if p.startswith("docs/.git") or p == ".git"]


def test_many_small_bombs_share_one_budget(tmp_path: Path) -> None:
    """40 gzip files of 2 MiB of zeros (2 kB each on disk): the snapshot unpacks 64 MiB at most."""
    sh(tmp_path, "for i in $(seq 10 49); do head -c 2097152 /dev/zero | gzip -c > z$i.gz; done")
    views = [entry["archive"] for entry in snapshot(tmp_path)["files"].values()]
    read = [v for v in views if v["error"] is None]
    assert len(views) == 40 and 0 < len(read) <= 32
    assert {v["error"] for v in views if v["error"]} == {"UnpackBudgetExceeded"}


def test_an_oversized_object_is_an_error(tmp_path: Path) -> None:
    root = make_repo(
        tmp_path,
        "head -c 17000000 /dev/zero > big",
        f"{' '.join(GIT)} add big",
        f"{' '.join(GIT)} commit -qm big",
    )
    view = repo_view(root)
    assert view["error"] is not None and "too large" in view["error"]
