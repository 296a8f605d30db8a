"""Sandbox backends side by side: creation, exec latency, reset, throughput.

    python benchmarks/sandboxes.py [--backends local bwrap docker] [--jobs 300]

One table per measure, one column per backend that works here. Medians within one run; compare
the ratios — the machine is shared and noisy.
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
from collections.abc import Callable
from typing import Any

from rich.console import Console
from rich.table import Table

from gymhub.sandboxes import create_sandbox
from gymhub.verifiers.checkers.function_tests import FunctionTest, run_function_tests

TESTS5 = [FunctionTest(args=[i], expected=i * i) for i in range(5)]
SOLUTION = "def f(x):\n    return x * x\n"


def timed(fn: Callable[[], Any], n: int) -> list[float]:
    out = []
    for _ in range(n):
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
    return out


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] * 1000


def throughput(make_job: Callable[[Any], Callable[[], Any]], boxes: list[Any], seconds: float) -> float:
    counts = [0] * len(boxes)
    stop = time.perf_counter() + seconds

    def client(i: int) -> None:
        job = make_job(boxes[i])
        while time.perf_counter() < stop:
            job()
            counts[i] += 1

    threads = [threading.Thread(target=client, args=(i,)) for i in range(len(boxes))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sum(counts) / seconds


def bench_backend(backend: str, jobs: int, seconds: float) -> dict[str, float]:
    creates = []
    for _ in range(3):
        start = time.perf_counter()
        box = create_sandbox(backend)
        creates.append(time.perf_counter() - start)
        box.close()
    boxes = [create_sandbox(backend) for _ in range(2)]
    box = boxes[0]
    trivial = timed(lambda: box.run(script="pass"), jobs)
    program = timed(lambda: box.run(["python3", "-c", "pass"]), max(20, jobs // 10))
    run_function_tests(SOLUTION, "f", TESTS5, backend=backend)  # warm the shared pool
    verify = timed(lambda: run_function_tests(SOLUTION, "f", TESTS5, backend=backend), max(30, jobs // 4))

    def dirty_reset() -> None:
        box.write_file("a.txt", b"x" * 1000)
        box.write_file("d/b.txt", b"y")
        box.reset()

    resets = timed(dirty_reset, 50)
    trivial_job = lambda b: lambda: b.run(script="pass")  # noqa: E731
    verify_job = lambda b: lambda: run_function_tests(SOLUTION, "f", TESTS5, backend=backend)  # noqa: E731
    result = {
        "create (ms)": statistics.median(creates) * 1000,
        "exec trivial Python p50 (ms)": pct(trivial, 0.5),
        "exec trivial Python p95 (ms)": pct(trivial, 0.95),
        "exec new interpreter p50 (ms)": pct(program, 0.5),
        "code verification, 5 tests, p50 (ms)": pct(verify, 0.5),
        "code verification, 5 tests, p95 (ms)": pct(verify, 0.95),
        "reset p50 (ms)": pct(resets, 0.5),
        "jobs/s, 1 client": throughput(trivial_job, boxes[:1], seconds),
        "jobs/s, 2 clients": throughput(trivial_job, boxes, seconds),
        "verifications/s, 1 client": throughput(verify_job, boxes[:1], seconds),
        "verifications/s, 2 clients": throughput(verify_job, boxes, seconds),
    }
    for b in boxes:
        b.close()
    return result


TARGETS = {
    "exec trivial Python p50 (ms)": "local/bwrap <= 6, docker <= 12",
    "reset p50 (ms)": "local/bwrap <= 20, docker <= 200",
    "jobs/s, 2 clients": "local/bwrap >= 200, docker >= 100",
    "verifications/s, 2 clients": "bwrap >= 100",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--backends", nargs="+", default=["local", "bwrap", "docker"])
    parser.add_argument("--jobs", type=int, default=300)
    parser.add_argument("--seconds", type=float, default=3.0)
    args = parser.parse_args()
    console = Console(width=140)
    results: dict[str, dict[str, float]] = {}
    for backend in args.backends:
        try:
            results[backend] = bench_backend(backend, args.jobs, args.seconds)
        except Exception as exc:  # a backend this machine lacks: say so, measure the others
            console.print(f"[yellow]{backend}: unavailable ({exc})[/yellow]")
    table = Table("measure", *results, "target", title="gymhub sandbox backends")
    for measure in next(iter(results.values()), {}):
        table.add_row(measure, *[f"{r[measure]:,.1f}" for r in results.values()], TARGETS.get(measure, ""))
    console.print(table)


if __name__ == "__main__":
    main()
