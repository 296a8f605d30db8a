"""Read an archive the agent left behind, on the host, from its bytes: every member, in full.

A listing is not proof: a tarball whose gzip stream is corrupt still lists its members, and
members can carry the right names and no bytes. :func:`read_archive` decompresses the whole
stream (so the gzip / bzip2 / xz checksums are checked), reads every member's bytes (zip CRCs
are checked on the way) and returns a canonical view without timestamps, owners or header
bytes — the same archive built twice reads the same. Sizes are capped: a bomb is an error.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import stat
import tarfile
import zipfile
from collections.abc import Callable
from typing import Any

from gymhub.envs.terminal.unpack_budget import UnpackBudget

MAX_UNPACKED = 16 * 1024 * 1024  # bytes, all members together

_COMPRESSIONS: dict[str, tuple[bytes, Callable[[io.BytesIO], Any]]] = {
    "gzip": (b"\x1f\x8b", lambda f: gzip.GzipFile(fileobj=f)),
    "bzip2": (b"BZh", lambda f: bz2.BZ2File(f)),
    "xz": (b"\xfd7zXZ\x00", lambda f: lzma.LZMAFile(f)),
}
_ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")


class ArchiveError(ValueError):
    """The archive cannot be read in full."""


def _is_tar(payload: bytes) -> bool:
    return len(payload) >= 512 and payload[257:262] == b"ustar"


def _compression(data: bytes) -> str | None:
    return next((name for name, (magic, _) in _COMPRESSIONS.items() if data.startswith(magic)), None)


def looks_like_archive(data: bytes) -> bool:
    return _compression(data) is not None or data.startswith(_ZIP_MAGIC) or _is_tar(data)


def _decompress(name: str, data: bytes, budget: UnpackBudget) -> bytes:
    limit = max(0, min(MAX_UNPACKED, budget.left))
    with _COMPRESSIONS[name][1](io.BytesIO(data)) as stream:
        out: bytes = stream.read(limit + 1)  # to the end: the stream's checksum is checked
    budget.take(len(out))
    if len(out) > MAX_UNPACKED:
        raise ArchiveError(f"unpacks to more than {MAX_UNPACKED} bytes")
    return out


def _tar_members(payload: bytes, budget: UnpackBudget) -> list[dict[str, Any]]:
    members: list[dict[str, Any]] = []
    total = 0
    with tarfile.open(fileobj=io.BytesIO(payload), mode="r:") as tar:
        for info in tar:
            member: dict[str, Any] = {"name": info.name, "mode": info.mode & 0o7777}
            if info.isreg():
                handle = tar.extractfile(info)
                assert handle is not None
                member |= {"type": "file", "data": handle.read()}  # raises on truncated data
                total += len(member["data"])
                budget.take(len(member["data"]))
            elif info.isdir():
                member["type"] = "dir"
            elif info.issym() or info.islnk():
                member |= {"type": "symlink" if info.issym() else "hardlink", "link": info.linkname}
            else:
                member["type"] = "other"
            if total > MAX_UNPACKED:
                raise ArchiveError(f"members hold more than {MAX_UNPACKED} bytes")
            members.append(member)
        end = tar.offset
    # tarfile stops quietly at a bad header after the first one; GNU tar would not
    if end > len(payload) or payload[end:].strip(b"\x00"):
        raise ArchiveError(f"invalid or truncated tar data after byte {end}")
    return members


def _zip_members(payload: bytes, budget: UnpackBudget) -> list[dict[str, Any]]:
    members: list[dict[str, Any]] = []
    total = 0
    with zipfile.ZipFile(io.BytesIO(payload)) as archive:
        for info in archive.infolist():
            unix_mode = info.external_attr >> 16
            member: dict[str, Any] = {"name": info.filename, "mode": unix_mode & 0o7777}
            if info.is_dir():
                member["type"] = "dir"
            else:
                with archive.open(info) as handle:  # reading to the end checks the CRC
                    data = handle.read(max(0, min(MAX_UNPACKED - total, budget.left)) + 1)
                total += len(data)
                budget.take(len(data))
                if total > MAX_UNPACKED:
                    raise ArchiveError(f"members hold more than {MAX_UNPACKED} bytes")
                kind = "symlink" if stat.S_ISLNK(unix_mode) else "file"
                member |= {"type": kind, "data": data} if kind == "file" else {"type": kind, "link": data}
            members.append(member)
    return members


def read_archive(data: bytes, budget: UnpackBudget | None = None) -> dict[str, Any]:
    """``{"format", "members", "error"}``: format like ``tar+gzip``, ``zip``, ``gzip`` (a
    compressed non-archive, its bytes as one member named ``""``); ``error`` is None only
    when every byte was read and every checksum held. What it inflates comes out of
    ``budget`` (the snapshot's, shared with its other archives and repositories)."""
    budget = budget or UnpackBudget()
    compression = _compression(data)
    view: dict[str, Any] = {"format": compression or "unknown", "members": [], "error": None}
    try:
        payload = _decompress(compression, data, budget) if compression else data
        if payload.startswith(_ZIP_MAGIC):
            view["format"] = "zip" if compression is None else f"zip+{compression}"
            view["members"] = _zip_members(payload, budget)
        elif _is_tar(payload):
            view["format"] = "tar" if compression is None else f"tar+{compression}"
            view["members"] = _tar_members(payload, budget)
        elif compression:
            view["members"] = [{"name": "", "type": "file", "mode": 0, "data": payload}]
        else:
            raise ArchiveError("not an archive")
    except Exception as exc:  # every way of failing to read it is the same verdict: unreadable
        view["members"] = []
        # by type only: library messages carry checksums, which depend on member mtimes
        view["error"] = f"ArchiveError: {exc}" if isinstance(exc, ArchiveError) else type(exc).__name__
    return view
