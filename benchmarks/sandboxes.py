"""Sandbox backends side by side: creation, exec latency, reset, throughput.

    python benchmarks/sandboxes.py [--backends local bwrap docker] [--jobs 300]
    python benchmarks/sandboxes.py --compare-with 702debb   # before / after, in one run

One table per measure, one column per backend that works here. Medians within one run; compare
the ratios — the machine is shared and noisy. With ``--compare-with REV`` the sandbox code of
git revision REV (e.g. the one before the hardening) is extracted into a scratch package and
measured in a child process, alternating with today's code backend by backend, and the table
shows both and their ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
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
    "exec trivial Python p50 (ms)": "<= 1.33 x before",
    "reset p50 (ms)": "local/bwrap <= 20, docker <= 200",
    "jobs/s, 2 clients": ">= 0.75 x before",
    "verifications/s, 2 clients": ">= 0.75 x before",
}
ROOT = Path(__file__).resolve().parents[1]


def checkout_of(rev: str) -> Path:
    """gymhub as it was at ``rev``, laid out as installed (parts under ``gymhub/``)."""
    scratch = Path(tempfile.mkdtemp(prefix="gymhub-bench-"))
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev], check=True, capture_output=True).stdout
    src = scratch / "src"
    src.mkdir()
    subprocess.run(["tar", "-x", "-C", str(src)], input=archive, check=True)
    shutil.copytree(src / "gymhub", scratch / "gymhub")
    for part in ("envs", "verifiers", "sandboxes", "trainers"):
        shutil.copytree(src / part, scratch / "gymhub" / part)
    return scratch


def measure_in_child(path: Path, backend: str, jobs: int, seconds: float) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(path)}
    cmd = [sys.executable, str(Path(__file__).resolve()), "--backends", backend, "--jobs", str(jobs),
           "--seconds", str(seconds), "--json"]  # fmt: skip
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True, cwd=path).stdout
    return dict(json.loads(out.strip().splitlines()[-1])[backend])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--backends", nargs="+", default=["local", "bwrap", "docker"])
    parser.add_argument("--jobs", type=int, default=300)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument(
        "--compare-with", metavar="REV", help="also measure the sandboxes of git revision REV"
    )
    parser.add_argument("--json", action="store_true", help="print the results as one JSON line")
    args = parser.parse_args()
    console = Console(width=160)
    old = checkout_of(args.compare_with) if args.compare_with else None
    results: dict[str, dict[str, float]] = {}
    for backend in args.backends:
        try:
            if old is not None:  # before, then after, backend by backend: same load for both
                results[f"{backend} before"] = measure_in_child(old, backend, args.jobs, args.seconds)
            results[backend] = bench_backend(backend, args.jobs, args.seconds)
        except Exception as exc:  # a backend this machine lacks: say so, measure the others
            console.print(f"[yellow]{backend}: unavailable ({exc})[/yellow]")
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
    if args.json:
        print(json.dumps(results))
        return
    columns = list(results)
    ratios = [b for b in args.backends if b in results and f"{b} before" in results]
    table = Table(
        "measure", *columns, *[f"{b} after/before" for b in ratios], "target", title="gymhub sandbox backends"
    )
    for measure in next(iter(results.values()), {}):
        cells = [f"{results[c][measure]:,.1f}" for c in columns]
        cells += [f"{results[b][measure] / results[f'{b} before'][measure]:.2f}" for b in ratios]
        table.add_row(measure, *cells, TARGETS.get(measure, ""))
    console.print(table)


if __name__ == "__main__":
    main()
