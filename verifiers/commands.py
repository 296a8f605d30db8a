"""The ``gymhub`` commands of the verifiers part: ``bench verifiers`` and ``rlvp-report``.

Registered in pyproject.toml's ``gymhub._cli`` entry-point group; :mod:`gymhub._cli` adds them
when they are run or listed. The heavy modules (the bench, matplotlib) load inside the commands.
"""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.table import Table

from gymhub._cli import emit_json, err, fmt_float, out
from gymhub.errors import GymhubError

bench_app = typer.Typer(help="Benchmarks.", no_args_is_help=True)


@bench_app.command("verifiers")
def bench_verifiers_command(
    env_ids: list[str] = typer.Argument(None, help="Envs to benchmark (default: all)."),
    tasks: int = typer.Option(20, help="Tasks per env."),
    repeats: int = typer.Option(3, help="Timed verifications per labelled trajectory."),
    mutants: int = typer.Option(3, help="Mutants of each reference solution."),
    out_dir: str = typer.Option("out/bench", "--out", help="Where the JSON and PNG go."),
    as_json: bool = typer.Option(False, "--json"),
    labels: str | None = typer.Option(
        None, "--labels", help="A run id: the verifier's agreement with people's reviews of its verdicts."
    ),
    db: str = typer.Option("gymhub.db", help="Store URL or SQLite file path (with --labels)."),
) -> None:
    """Verifier speed, determinism, precision/recall against labels, and hack resistance."""
    if labels is not None:
        _label_agreement(labels, db, as_json)
        return
    from gymhub.registry import list_envs
    from gymhub.verifiers.bench import bench_env, blind_floor_table, plot

    chosen = env_ids or [s.id for s in list_envs()]
    results = []
    for env_id in chosen:
        if not as_json:
            err.print(f"benchmarking the verifier of {env_id} ...")
        results.append(bench_env(env_id, tasks=tasks, repeats=repeats, mutants_per_task=mutants))
    folder = Path(out_dir)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "verifier_bench.json").write_text(json.dumps(results, indent=2))
    plot(results, str(folder / "verifier_bench.png"))
    if as_json:
        emit_json([{k: v for k, v in r.items() if k != "latencies_ms"} for r in results])
        return
    table = Table(
        "env",
        "cases",
        "verif/s (1 thr)",
        "verif/s (2 thr)",
        "p50 ms",
        "p95 ms",
        "p99 ms",
        "determinism",
        "precision",
        "recall",
        "hack resistance",
        title="verifier benchmark",
    )
    for r in results:
        table.add_row(
            r["env_id"],
            str(r["cases"]),
            fmt_float(r["verifications_per_s"]["1 thread"]),
            fmt_float(r["verifications_per_s"]["2 threads"]),
            fmt_float(r["latency_ms"]["p50"]),
            fmt_float(r["latency_ms"]["p95"]),
            fmt_float(r["latency_ms"]["p99"]),
            fmt_float(r["determinism_rate"]),
            fmt_float(r["precision"]),
            fmt_float(r["recall"]),
            fmt_float(r["hack_resistance"]),
        )
    out.print(table)
    out.print(blind_floor_table(results))
    for r in results:
        for name in r["false_positives"]:
            out.print(f"[red]false positive[/red] {r['env_id']} {name}")
        for name in r["false_negatives"]:
            out.print(f"[red]false negative[/red] {r['env_id']} {name}")
    err.print(f"wrote {folder / 'verifier_bench.json'} and {folder / 'verifier_bench.png'}")


def _label_agreement(run: str, db: str, as_json: bool) -> None:
    """`gymhub bench verifiers --labels RUN`: the verifier's verdicts against people's reviews."""
    from gymhub.store import open_store
    from gymhub.verifiers.bench import label_agreement

    store = open_store(db, create=False)
    try:
        store.get_run(run)
        labels = store.labels(run)
        reviewed = []
        for trajectory_id, label in sorted(labels.items()):
            t = store.load_trajectory(run, trajectory_id)
            if t is not None and t.verdict is not None:
                reviewed.append((t.verdict.outcome, label.verdict_right))
    finally:
        store.close()
    if not reviewed:
        raise GymhubError(
            f"run {run!r} has no reviewed verdicts: review some with `gymhub review {run} --db {db}`"
        )
    result = {"run_id": run} | label_agreement(reviewed)
    if as_json:
        emit_json(result)
        return
    table = Table(
        "run", "reviewed", "agreement", "precision", "recall", "FP", "FN", title="verifier vs people"
    )
    table.add_row(
        run,
        str(result["reviewed"]),
        fmt_float(result["agreement"]),
        fmt_float(result["precision"]),
        fmt_float(result["recall"]),
        str(result["false_positives"]),
        str(result["false_negatives"]),
    )
    out.print(table)


def rlvp_report_command(
    runs: list[str] = typer.Argument(..., help="One or more run ids."),
    db: str = typer.Option("gymhub.db", help="Store URL or SQLite file path."),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Does the path signal separate rollouts where the outcome does not? Per env."""
    from gymhub.store import open_store
    from gymhub.verifiers.reachability import reachability_report

    store = open_store(db, create=False)
    trajectories = []
    try:
        for run in runs:
            store.get_run(run)
            trajectories += store.load_trajectories(run)
    finally:
        store.close()
    report = reachability_report(trajectories)
    if as_json:
        emit_json(report)
        return
    table = Table(
        "env",
        "trajectories",
        "groups",
        "zero-variance groups",
        "recovered by Φ",
        "corr(Φ, O)",
        "mean O",
        "mean Φ",
        title="RLVP reachability",
    )
    for env_id, r in report.items():
        table.add_row(
            env_id,
            str(r["trajectories"]),
            str(r["groups"]),
            fmt_float(r["zero_variance_groups"]),
            fmt_float(r["recovered"]),
            fmt_float(r["corr_phi_outcome"]),
            fmt_float(r["mean_outcome"]),
            fmt_float(r["mean_path_signal"]),
        )
    out.print(table)
    rules = Table("env", "rule", "firing rate", title="rule firing rates")
    for env_id, r in report.items():
        for rule, rate in r["rule_rates"].items():
            rules.add_row(env_id, rule, fmt_float(rate))
    out.print(rules)
