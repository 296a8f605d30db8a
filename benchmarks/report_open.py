"""The HTML report at scale: memory of `gymhub report` and the time a report takes to open.

    python benchmarks/report_open.py [--sizes 10000 100000] [--open 10000] [--json out.json]

For each size, synthetic trajectories (3 turns, a verdict with path events, token ids and
log-probs on the policy turn) are written straight into a SQLite store (bulk inserts, no
rollouts), then the report is written in a child process whose peak RSS is measured: it
should stay flat as the run grows, since the report streams from the store. The report of
``--open`` trajectories is then opened in headless Chromium (tests/report/chromium_cdp.py)
three times; the page's own mark (navigation start -> tables and charts drawn, from
``performance.now()``) and the wall time until it is ready are reported (medians).
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from sqlalchemy import insert

ROOT = Path(__file__).resolve().parents[1]
G = 8
RULES = (("edit-tests", "penalty", -1.0), ("target-prefix", "progress", 0.5), ("ran-tests", "progress", 0.1))


def fill_store(db: Path, run_id: str, trajectories: int, seed: int = 0) -> float:
    """Write ``trajectories`` synthetic trajectories (G per task) of one run; returns seconds."""
    from gymhub.store import open_store
    from gymhub.store.models import PathEventRow, TrajectoryRow, TurnRow, VerdictRow
    from gymhub.types import Task

    start = time.perf_counter()
    rng = random.Random(seed)
    store = open_store(str(db))
    tasks = [
        Task.create("synthetic-v0", "eval", f"Task {i}: write a function that returns {i} squared.", {"n": i})
        for i in range(trajectories // G)
    ]
    store.create_run(
        run_id, env_id="synthetic-v0", policy="synthetic", split="eval", group_size=G, seed=seed, tasks=tasks
    )
    batch: dict[str, list[dict[str, Any]]] = {"t": [], "turn": [], "v": [], "e": []}
    for index in range(trajectories):
        task, sample = tasks[index // G], index % G
        tid = f"{run_id}-{index:07d}"
        outcome = rng.choice((0.0, 0.0, 0.5, 1.0, 1.0))
        tokens = [rng.randrange(50_000) for _ in range(60)]
        batch["t"].append(
            {
                "id": tid,
                "run_id": run_id,
                "task_id": task.id,
                "env_id": "synthetic-v0",
                "sample_index": sample,
                "policy": "synthetic",
                "seed": index,
                "env_version": "1",
                "verifier_version": "1",
                "status": "ok",
                "error": None,
                "truncated": 0,
                "timings": {"policy_s": 0.2, "env_s": 0.05, "total_s": 0.25 + rng.random()},
            }
        )
        reply = f"```python\ndef f():\n    return {index % 97} ** 2\n```\nThe function returns the square."
        turns = [
            ("env", [{"role": "user", "content": task.prompt}], [], None, []),
            ("policy", [{"role": "assistant", "content": reply}], tokens, [-0.5] * 60, [1] * 60),
            (
                "env",
                [{"role": "user", "content": f"tests: {int(outcome * 4)}/4 passed"}],
                tokens[:12],
                None,
                [0] * 12,
            ),
        ]
        for i, (source, messages, ids, logprobs, mask) in enumerate(turns):
            batch["turn"].append(
                {
                    "trajectory_id": tid,
                    "index": i,
                    "source": source,
                    "messages": messages,
                    "token_ids": ids,
                    "logprobs": logprobs,
                    "prompt_token_ids": None,
                    "loss_mask": mask,
                    "timings": {},
                }
            )
        fired = [r for r in RULES if rng.random() < 0.3]
        batch["v"].append(
            {
                "trajectory_id": tid,
                "outcome": outcome,
                "path_signal": sum(v for _, _, v in fired),
                "details": {"passed": int(outcome * 4), "total": 4},
                "verifier": "synthetic",
                "verifier_version": "1",
                "digest": f"{index:064x}",
                "error": None,
            }
        )
        for i, (rule, kind, value) in enumerate(fired):
            batch["e"].append(
                {
                    "trajectory_id": tid,
                    "index": i,
                    "step": 1,
                    "rule": rule,
                    "kind": kind,
                    "value": value,
                    "evidence": f"{rule} at step 1",
                }
            )
        if len(batch["t"]) == 2000 or index == trajectories - 1:
            with store.engine.begin() as connection:
                for key, model in (
                    ("t", TrajectoryRow),
                    ("turn", TurnRow),
                    ("v", VerdictRow),
                    ("e", PathEventRow),
                ):
                    if batch[key]:
                        connection.execute(insert(model), batch[key])
            batch = {k: [] for k in batch}
    store.close()
    return time.perf_counter() - start


def write_report_child(db: Path, run_id: str, out: Path) -> dict[str, Any]:
    """In a fresh interpreter: write the report, return seconds and peak RSS."""
    code = (
        "import json, resource, sys, time\n"
        "from gymhub.store import open_store\n"
        "from gymhub.report.html_report import write_report\n"
        "start = time.perf_counter()\n"
        "store = open_store(sys.argv[1], create=False)\n"
        "before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "stats = write_report(store, [sys.argv[2]], sys.argv[3])\n"
        "print(json.dumps({'seconds': time.perf_counter() - start, 'peak_rss_mb': "
        "resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 'rss_before_mb': before / 1024, "
        "'bytes': stats.bytes, 'trajectories': stats.trajectories}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(db), run_id, str(out)], capture_output=True, text=True, check=True
    )
    return dict(json.loads(done.stdout))


def open_times(report: Path, repeats: int = 3) -> dict[str, Any]:
    sys.path.insert(0, str(ROOT / "tests" / "report"))
    from chromium_cdp import Browser

    marks, walls = [], []
    with Browser() as browser:
        for _ in range(repeats):
            browser.open("about:blank", ready="true")
            start = time.perf_counter()
            browser.open(report.as_uri())
            walls.append(time.perf_counter() - start)
            marks.append(float(browser.evaluate("document.body.dataset.readyMs")) / 1000)
        rows = browser.evaluate("document.querySelector('#trajectories .vt-count').textContent")
        first = browser.evaluate("document.querySelector('#trajectories .vt-row a').dataset.traj")
        start = time.perf_counter()
        browser.evaluate(f"location.hash = '#traj={first}'")
        browser.wait_for(f"document.getElementById('viewer').dataset.open === '{first}'")
        open_one = time.perf_counter() - start
        browser.drain()
        errors = list(browser.errors)
    return {
        "page_mark_s": round(statistics.median(marks), 3),
        "wall_s": round(statistics.median(walls), 3),
        "all_marks_s": [round(m, 3) for m in marks],
        "open_trajectory_s": round(open_one, 3),
        "rows_shown": rows,
        "console_errors": errors,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--open", type=int, default=10_000, help="Open the report of this size in Chromium.")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    results: dict[str, Any] = {"sizes": {}}
    with tempfile.TemporaryDirectory(prefix="gymhub-report-bench-") as folder:
        for size in sorted(set(args.sizes) | {args.open}):
            db = Path(folder) / f"runs-{size}.db"
            fill_s = fill_store(db, f"synthetic-{size}", size)
            out = Path(folder) / f"report-{size}.html"
            written = write_report_child(db, f"synthetic-{size}", out)
            entry = {"fill_store_s": round(fill_s, 1), **written}
            if size == args.open:
                entry["open"] = open_times(out)
            results["sizes"][str(size)] = entry
            print(json.dumps({size: entry}), flush=True)
    self_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    results["benchmark_process_peak_rss_mb"] = round(self_rss, 1)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    from rich.console import Console
    from rich.table import Table

    table = Table(
        "trajectories", "report MB", "write s", "peak RSS MB", "open (page mark) s", "open (wall) s"
    )
    for size, entry in results["sizes"].items():
        opened = entry.get("open", {})
        table.add_row(
            size,
            f"{entry['bytes'] / 1e6:.1f}",
            f"{entry['seconds']:.1f}",
            f"{entry['peak_rss_mb']:.0f}",
            str(opened.get("page_mark_s", "-")),
            str(opened.get("wall_s", "-")),
        )
    Console().print(table)


if __name__ == "__main__":
    main()
