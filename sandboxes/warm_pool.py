"""A bounded pool of warm sandboxes: hand out ready ones, reset returned ones in the background.

``acquire()`` gives a pristine sandbox (blocking while all ``size`` are out). ``release()``
hands it back: a background thread resets it (files back to pristine, leftover processes
killed) and health-checks it; a dead one is closed and replaced. ``close()`` stops them all —
no sandbox process or container outlives the pool.
"""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Iterator
from typing import Any

from gymhub.errors import SandboxError
from gymhub.sandboxes.base import Sandbox


class SandboxPool:
    def __init__(self, backend: str = "local", size: int = 2, **options: Any) -> None:
        if size < 1:
            raise ValueError("a pool needs at least one sandbox")
        self.backend, self.size, self.options = backend, size, options
        self._ready: queue.Queue[Sandbox] = queue.Queue()
        self._returned: queue.Queue[Sandbox | None] = queue.Queue()
        self._all: set[int] = set()
        self._members: list[Sandbox] = []
        self._lock = threading.Lock()
        self._closed = False
        self.replaced = 0
        for _ in range(size):
            self._ready.put(self._new())
        self._worker = threading.Thread(target=self._recycle, name=f"gymhub-pool-{backend}", daemon=True)
        self._worker.start()

    def _new(self) -> Sandbox:
        from gymhub.sandboxes import create_sandbox

        sandbox = create_sandbox(self.backend, **self.options)
        with self._lock:
            self._members.append(sandbox)
        return sandbox

    def _forget(self, sandbox: Sandbox) -> None:
        with self._lock:
            self._members = [m for m in self._members if m is not sandbox]
        with contextlib.suppress(Exception):
            sandbox.close()

    def _recycle(self) -> None:
        while (sandbox := self._returned.get()) is not None:
            try:
                sandbox.reset()  # a reset that answers is the health check
                self._ready.put(sandbox)
            except Exception:  # dead or wedged: replace it, keep the pool at size
                self._forget(sandbox)
                self.replaced += 1
                if not self._closed:
                    try:
                        self._ready.put(self._new())
                    except Exception:  # cannot start one now; the next acquire retries
                        self._ready.put(_Placeholder())  # type: ignore[arg-type,unused-ignore]

    def acquire(self, timeout: float | None = 300.0) -> Sandbox:
        if self._closed:
            raise SandboxError("the sandbox pool is closed")
        try:
            sandbox = self._ready.get(timeout=timeout)
        except queue.Empty:
            raise SandboxError(f"no {self.backend} sandbox free within {timeout} s") from None
        if isinstance(sandbox, _Placeholder):
            sandbox = self._new()
        return sandbox

    def release(self, sandbox: Sandbox) -> None:
        if self._closed:
            self._forget(sandbox)
        else:
            self._returned.put(sandbox)

    @contextlib.contextmanager
    def sandbox(self) -> Iterator[Sandbox]:
        box = self.acquire()
        try:
            yield box
        finally:
            self.release(box)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._returned.put(None)
        self._worker.join(timeout=30)
        with self._lock:
            members, self._members = self._members, []
        for sandbox in members:
            with contextlib.suppress(Exception):
                sandbox.close()

    def __enter__(self) -> SandboxPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _Placeholder:
    """Stands in the ready queue for a sandbox that could not be started yet."""


_SHARED: dict[str, SandboxPool] = {}
_SHARED_LOCK = threading.Lock()


def shared_pool(backend: str, size: int = 2) -> SandboxPool:
    """A process-wide pool per backend (used by verifiers that need a fresh sandbox per check)."""
    with _SHARED_LOCK:
        pool = _SHARED.get(backend)
        if pool is None or pool._closed:
            pool = _SHARED[backend] = SandboxPool(backend, size)
            import atexit

            atexit.register(pool.close)
        return pool
