"""Helpers for tests that start real servers: a free loopback port, the gymhub console script."""

from __future__ import annotations

import shutil
import socket
import sys
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def gymhub_cli() -> str:
    """The ``gymhub`` script of the running interpreter's environment."""
    script = Path(sys.executable).with_name("gymhub")
    return str(script) if script.exists() else (shutil.which("gymhub") or "gymhub")
