"""Math answer equivalence through ``math-verify`` (sympy underneath), never a regex.

``math-verify`` bounds its work with ``signal.alarm``, which only works on a main thread, and
a hostile answer (``9^9^9^9``) can keep sympy busy for ever. So checks run in one long-lived
worker process (spawned, so no inherited threads) where the alarm works, and the host waits
with its own deadline; a worker that overruns is killed and replaced.
"""

from __future__ import annotations

import atexit
import concurrent.futures as cf
import multiprocessing
import threading

_LOCK = threading.Lock()
_POOL: cf.ProcessPoolExecutor | None = None


def _verify_in_worker(gold: str, answer: str, timeout: int) -> bool:
    from math_verify import parse, verify

    parsed_gold = parse(gold, parsing_timeout=timeout)
    parsed_answer = parse(answer, parsing_timeout=timeout)
    if not parsed_gold or not parsed_answer:
        return False
    return bool(verify(parsed_gold, parsed_answer, timeout_seconds=timeout))


def _pool() -> cf.ProcessPoolExecutor:
    global _POOL
    if _POOL is None:
        _POOL = cf.ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"))
        atexit.register(shutdown)  # before the interpreter tears down what the pool's thread needs
    return _POOL


def _discard_pool() -> None:
    global _POOL
    pool, _POOL = _POOL, None
    if pool is not None:
        for process in list(getattr(pool, "_processes", {}).values()):
            process.kill()
        pool.shutdown(wait=False, cancel_futures=True)


def math_equivalent(answer: str, gold: str, *, timeout: int = 5) -> bool:
    """True if ``answer`` is mathematically equal to ``gold`` (LaTeX or plain expressions).

    Returns False (never raises) for unparsable input or a check that runs past ``timeout``.
    """
    if len(answer) > 10_000:
        return False
    with _LOCK:  # one check at a time through the single worker
        future = _pool().submit(_verify_in_worker, gold, answer, timeout)
        try:
            return bool(future.result(timeout=timeout * 3 + 30))
        except cf.TimeoutError:
            _discard_pool()
            return False
        except Exception:  # a crashed worker or a parse error means "not equal"
            _discard_pool()
            return False


def shutdown() -> None:
    """Close the worker gracefully (nothing is in flight: every check waits for its result)."""
    global _POOL
    with _LOCK:
        pool, _POOL = _POOL, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)


__all__ = ["math_equivalent", "shutdown"]
