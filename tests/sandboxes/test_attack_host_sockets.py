"""Attack class 8: no socket of the host is reachable from a job.

The host listens where a job might reach it: Unix path sockets in shared folders (/tmp and
/run, mode 0777 as many daemons leave them), an abstract Unix socket, loopback TCP; and the
sockets that are there anyway: the Docker engine's, and another sandbox's job server. Each
listener greets whoever connects with a token; the attack succeeds when a job prints a token
(or, for the sockets that are there anyway, merely connects).
"""

from __future__ import annotations

import os
import socket
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from gymhub.sandboxes import create_sandbox
from gymhub.sandboxes.job_client import JobServerSandbox


class Listener:
    def __init__(self, family: int, address: object, label: str) -> None:
        self.token = f"greeting-{uuid.uuid4().hex}"
        self.label = label
        self.sock = socket.socket(family, socket.SOCK_STREAM)
        self.sock.bind(address)
        if family == socket.AF_UNIX and isinstance(address, str) and not address.startswith("\0"):
            os.chmod(address, 0o777)
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.address = self.sock.getsockname() if family == socket.AF_INET else address
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            with conn:
                try:
                    conn.sendall(self.token.encode())
                except OSError:
                    pass

    def close(self) -> None:
        self.stop.set()
        self.thread.join(5)
        self.sock.close()


@pytest.fixture
def listeners(marker: str) -> Iterator[list[Listener]]:
    wanted = [
        (socket.AF_UNIX, f"/tmp/{marker}.sock", "unix /tmp"),
        (socket.AF_UNIX, f"/run/{marker}.sock", "unix /run"),
        (socket.AF_UNIX, f"\0{marker}", "abstract"),
        (socket.AF_INET, ("127.0.0.1", 0), "tcp 127.0.0.1"),
    ]
    made: list[Listener] = []
    try:
        for family, address, label in wanted:
            made.append(Listener(family, address, label))
        yield made
    finally:
        for listener in made:
            listener.close()
        for _, address, _ in wanted:
            if isinstance(address, str) and not address.startswith("\0"):
                Path(address).unlink(missing_ok=True)


PROBE = r"""
import socket
for family, address in ADDRESSES:
    s = socket.socket(family, socket.SOCK_STREAM)
    s.settimeout(2)
    try:
        s.connect(address)
        print('CONNECTED', repr(address), s.recv(200).decode(errors='replace'))
    except OSError as exc:
        print('refused', repr(address), exc.errno)
    finally:
        s.close()
"""


def _addresses(listeners: list[Listener]) -> list[tuple[int, object]]:
    out: list[tuple[int, object]] = []
    for listener in listeners:
        family = socket.AF_INET if isinstance(listener.address, tuple) else socket.AF_UNIX
        out.append((int(family), listener.address))
    return out


def test_host_listeners_are_unreachable_from_a_script(
    box: JobServerSandbox, listeners: list[Listener]
) -> None:
    result = box.run(script=PROBE.replace("ADDRESSES", repr(_addresses(listeners))), timeout=20)
    assert result.exit_code == 0, result.stderr[-2000:]
    reached = [item.label for item in listeners if item.token.encode() in result.stdout]
    assert reached == [], f"{box.backend}: a job talked to the host's {reached}"


def test_host_listeners_are_unreachable_from_a_program(
    box: JobServerSandbox, listeners: list[Listener]
) -> None:
    source = PROBE.replace("ADDRESSES", repr(_addresses(listeners)))
    result = box.run(["python3", "-c", source], timeout=20)
    reached = [item.label for item in listeners if item.token.encode() in result.stdout]
    assert reached == [], f"{box.backend}: a job talked to the host's {reached}"


def test_the_docker_engine_and_other_sandboxes_are_unreachable(backend: str, box: JobServerSandbox) -> None:
    other = create_sandbox(backend)
    assert isinstance(other, JobServerSandbox)
    try:
        candidates = [
            "/var/run/docker.sock",
            "/run/docker.sock",
            "/run/containerd/containerd.sock",
            str(other.ipc_dir / "sock"),  # another sandbox's job server, by its host path
            str(box.ipc_dir / "sock"),  # this sandbox's own server
            "/tmp/.gymhub-ipc/sock",
            "/run/gymhub/sock",
        ]
        probe = PROBE.replace("ADDRESSES", repr([(int(socket.AF_UNIX), path) for path in candidates]))
        result = box.run(script=probe, timeout=30)
        connected = [line for line in result.stdout.decode().splitlines() if line.startswith("CONNECTED")]
        assert connected == [], f"{backend}: a job connected to {connected}"
    finally:
        other.close()
