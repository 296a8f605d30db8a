"""The ``gymhub`` command line (typer + rich).

Human output goes to the terminal; with ``--json`` exactly one JSON document is printed on
stdout and nothing else (progress and warnings go to stderr).

Every user error (a bad option, an unreachable database, a missing extra) is one line on
stderr, ``error: ...``, and exit status 2; ``--debug`` (anywhere on the line, or
``GYMHUB_DEBUG=1``) shows the traceback instead.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Column, Table
from typer.exceptions import TyperException

from gymhub.errors import GymhubError

app = typer.Typer(
    help="gymhub: sandboxed environments for LLM agents, with verifiers.",
    no_args_is_help=True,
    add_completion=False,
)
out = Console()
if not out.is_terminal:  # piped (logs, CI): wide enough that tables are not cut to "…"
    out = Console(width=160)
err = Console(stderr=True)


def main(argv: list[str] | None = None) -> None:
    """The console script: runs a command; user errors are one line, never a traceback."""
    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args or os.environ.get("GYMHUB_DEBUG", "") not in ("", "0")
    args = [a for a in args if a != "--debug"]
    try:
        code = typer.main.get_command(app).main(args=args, prog_name="gymhub", standalone_mode=False)
    except TyperException as exc:  # bad option, missing argument, value out of range
        ctx = getattr(exc, "ctx", None)
        if type(exc).__name__ == "NoArgsIsHelpError" and ctx is not None:  # `gymhub` alone: the help
            sys.stdout.write(ctx.get_help() + "\n")
            sys.exit(0)
        if debug:
            traceback.print_exc()
        command = ctx.command_path if ctx is not None else "gymhub"
        _error_line(f"{exc.format_message()} (see `{command} --help`)")
        code = getattr(exc, "exit_code", 2)
    except typer.Abort:
        _error_line("aborted")
        code = 130
    except GymhubError as exc:
        if debug:
            traceback.print_exc()
        _error_line(str(exc))
        code = 2
    except Exception as exc:  # a bug, or a failure nobody turned into a GymhubError yet
        if debug:
            raise
        _error_line(f"{type(exc).__name__}: {exc} (rerun with --debug for the traceback)")
        code = 1
    sys.exit(code if isinstance(code, int) else 0)


def _error_line(message: str) -> None:
    """``error: ...`` on stderr, as one line (plain text: no markup, no wrapping)."""
    sys.stderr.write("error: " + " ".join(message.split()) + "\n")


def _version(value: bool) -> None:
    if value:
        from gymhub import __version__

        print(f"gymhub {__version__}")
        raise typer.Exit()


@app.callback()
def _global_options(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
    debug: bool = typer.Option(False, "--debug", help="Show tracebacks of errors (anywhere on the line)."),
) -> None:
    """gymhub: sandboxed environments for LLM agents, with verifiers."""


def _require_extra(extra: str, *modules: str) -> None:
    """Fail before any work when an optional extra is not installed, naming the pip command."""
    missing = [m for m in modules if not _importable(m)]
    if missing:
        raise GymhubError(f"this needs {', '.join(missing)}: pip install 'gymhub[{extra}]'")


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent package missing, or a module set to None
        return False


def _check_out_path(path: str) -> Path:
    """An output file whose folder exists (checked before any work)."""
    target = Path(path).expanduser()
    if target.is_dir():
        raise GymhubError(f"--out {path} is a folder: give a file path")
    if not target.parent.is_dir():
        raise GymhubError(f"--out {path}: the folder {target.parent} does not exist")
    return target


def _emit_json(document: Any) -> None:
    sys.stdout.write(json.dumps(document, indent=2, default=str) + "\n")


@app.command("list")
def list_command(
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
    ids: bool = typer.Option(False, "--ids", help="Print only the ids."),
    family: str = typer.Option("", "--family", help="Only this family's envs (e.g. reasoning)."),
) -> None:
    """List every registered environment."""
    from gymhub.registry import list_envs

    specs = [s for s in list_envs() if not family or s.family == family]
    if as_json:
        _emit_json([s.model_dump() for s in specs])
    elif ids:
        for s in specs:
            print(s.id)
    else:
        table = Table("id", "family", "version", "sandbox", "source", "description")
        for s in specs:
            table.add_row(s.id, s.family, s.version, s.sandbox, s.source, s.description)
        out.print(table)


@app.command("info")
def info_command(env_id: str, as_json: bool = typer.Option(False, "--json")) -> None:
    """Show one environment's spec, task counts, tools and RLVP rules."""
    from gymhub.registry import load_probes, make, spec

    env_spec = spec(env_id)
    env = make(env_id)
    splits = {s: sum(1 for t in env.all_tasks if t.split == s) for s in ("train", "eval")}
    rules = [
        {
            "id": r.id,
            "weight": r.weight,
            "kind": r.kind,
            "value": r.value,
            "description": " ".join((type(r).__doc__ or "").split()),
        }
        for r in getattr(env.verifier, "rules", [])
    ]
    doc = {
        **env_spec.model_dump(),
        "tasks": splits,
        "verifier_id": env.verifier.id,
        "verifier_version": env.verifier.version,
        "beta": env.reward_config.beta,
        "rules": rules,
        "tools": [t["function"]["name"] for t in env.tools()],
        "probes": [p.name for p in load_probes(env_id)],
    }
    env.close()
    if as_json:
        _emit_json(doc)
        return
    table = Table(show_header=False)
    for key in (
        "id",
        "family",
        "description",
        "version",
        "entry_point",
        "sandbox",
        "verifier_id",
        "verifier_version",
        "task_set",
        "tasks",
        "tools",
        "beta",
        "probes",
        "kwargs",
        "source",
    ):
        table.add_row(key, str(doc[key]))
    out.print(table)
    rule_table = Table("rule", "kind", "base value", "weight", "description", title="RLVP rules")
    for r in rules:
        rule_table.add_row(r["id"], r["kind"], str(r["value"]), str(r["weight"]), r["description"])
    out.print(rule_table)


MAX_SEED = 2**63 - 1


@app.command("rollout")
def rollout_command(
    env_id: str = typer.Argument(..., help="An env id, or 'all' for every registered env."),
    policy: str | None = typer.Option(
        None, help="reference[:variant] | openai:URL[#model] | hf:PATH (default: reference)."
    ),
    tasks: int | None = typer.Option(None, "--tasks", min=1, help="Number of tasks (default: all)."),
    group_size: int | None = typer.Option(
        None, "--group-size", "-g", min=1, help="Samples per task, G (default: 1)."
    ),
    concurrency: int = typer.Option(1, "--concurrency", "-c", min=1, help="Parallel episodes."),
    split: str | None = typer.Option(None, help="train | eval (default: train)."),
    db: str = typer.Option("gymhub.db", help="Store URL or SQLite file path."),
    seed: int | None = typer.Option(
        None, min=0, max=MAX_SEED, help="Run seed; per-episode seeds derive from it (default: 0)."
    ),
    resume: str | None = typer.Option(None, help="Continue this run id; skip what is stored."),
    sandbox: str | None = typer.Option(
        None, help="Sandbox backend: local | bwrap | docker (default: the spec's)."
    ),
    run_id: str | None = typer.Option(None, "--run-id", help="Name the new run."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON document."),
    backend: str = typer.Option("local", help="local | ray (env workers as Ray actors)."),
    address: str | None = typer.Option(None, help="Ray cluster address (default: a local Ray)."),
) -> None:
    """Roll a policy out on an env, store every trajectory, print a summary."""
    from gymhub.registry import list_envs, spec
    from gymhub.rollout_engine import check_sandbox_backend
    from gymhub.store import open_store

    if split not in (None, "train", "eval"):
        raise GymhubError(f"--split must be train or eval, not {split!r}")
    if resume is not None and env_id == "all":
        raise GymhubError("--resume continues one run: name its env, not 'all'")
    if resume is not None and run_id is not None:
        raise GymhubError("--run-id names a new run; --resume continues one: give only one of them")
    if backend not in ("local", "ray"):
        raise GymhubError(f"--backend must be local or ray, not {backend!r}")
    if backend == "local" and address:
        raise GymhubError("--address names a Ray cluster: use it with --backend ray")
    if backend == "ray":
        _require_extra("ray", "ray")
    env_ids = [s.id for s in list_envs()] if env_id == "all" else [spec(env_id).id]
    check_sandbox_backend(sandbox)
    store = open_store(db)
    try:
        if run_id is not None and store.find_run(run_id) is not None:
            raise GymhubError(
                f"run {run_id!r} already exists in {db}: choose another --run-id, "
                f"or continue it with --resume {run_id}"
            )
        summaries = []
        for one_env in env_ids:
            summary = _rollout_one(
                store,
                db,
                one_env,
                policy,
                tasks,
                group_size,
                concurrency,
                split,
                seed,
                resume,
                run_id if len(env_ids) == 1 else None,
                as_json,
                sandbox,
                backend,
                address,
            )
            summaries.append(summary)
    finally:
        store.close()
    if as_json:
        _emit_json(summaries[0] if len(summaries) == 1 else {"runs": summaries})
    else:
        _print_summary(summaries, db)
    failed = [s for s in summaries if s["new_trajectories"] > 0 and s["new_errors"] == s["new_trajectories"]]
    if failed:
        for s in failed:
            _error_line(
                f"every trajectory of run {s['run_id']} ({s['env_id']}) errored; "
                f"first error: {s['first_error']}"
            )
        raise typer.Exit(1)


def _episode_backend(name: str, address: str | None) -> Any:
    if name == "ray":
        from gymhub.ray_backend import RayBackend

        return RayBackend(address)
    return "local"


def _rollout_one(
    store: Any,
    db: str,
    env_id: str,
    policy: str | None,
    tasks: int | None,
    group_size: int | None,
    concurrency: int,
    split: str | None,
    seed: int | None,
    resume: str | None,
    run_id: str | None,
    quiet: bool,
    sandbox: str | None = None,
    backend: str = "local",
    address: str | None = None,
) -> dict[str, Any]:
    from gymhub.rollout_engine import arollout, plan_run

    if resume is not None:
        run = store.get_run(resume)
        if run.env_id != env_id:
            raise GymhubError(
                f"run {resume!r} rolls out {run.env_id}, not {env_id}: "
                f"`gymhub rollout {run.env_id} --db {db} --resume {resume}`"
            )
        if policy is not None and policy != run.policy:
            raise GymhubError(f"run {resume!r} was rolled out with --policy {run.policy}, not {policy}")
        if tasks is not None and tasks != len(run.task_ids):
            raise GymhubError(f"run {resume!r} has {len(run.task_ids)} tasks, not --tasks {tasks}")
        if sandbox is not None and run.config.get("env_kwargs", {}).get("sandbox") != sandbox:
            raise GymhubError(
                f"run {resume!r} was rolled out with another sandbox: resume it without --sandbox"
            )
        policy = run.policy
    policy = policy or "reference"
    plan = plan_run(
        env_id,
        policy,
        tasks=tasks if resume is None else None,
        group_size=group_size,
        concurrency=concurrency,
        split=split,
        seed=seed,
        env_kwargs={"sandbox": sandbox} if sandbox else None,
        store=store,
        run_id=resume or run_id,
        resume=resume is not None,
    )
    rid = plan.run_id
    if not quiet:
        err.print(
            f"run [bold]{rid}[/bold]: {env_id} × {policy}, {len(plan.tasks)} tasks × G={plan.group_size}",
            soft_wrap=True,
        )
    total = plan.todo
    start = time.perf_counter()
    progress = Progress(
        TextColumn(env_id),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        disable=quiet or not err.is_terminal,
        transient=False,
    )
    new_errors: list[str] = []

    def finished(trajectory: Any) -> None:
        progress.advance(bar)
        if trajectory.status == "errored":
            new_errors.append(trajectory.error or "?")

    async def drive() -> None:
        async for _ in arollout(
            env_id,
            policy,
            store=store,
            concurrency=concurrency,
            on_trajectory=finished,
            backend=_episode_backend(backend, address),
            plan=plan,
        ):
            pass

    try:
        with progress:
            bar = progress.add_task(env_id, total=total)
            asyncio.run(drive())
    except KeyboardInterrupt:
        done = len(store.stored_keys(rid))
        _error_line(
            f"interrupted: run {rid} has {done} of {len(plan.tasks) * plan.group_size} trajectories stored; "
            f"continue it with: gymhub rollout {env_id} --db {db} --resume {rid}"
        )
        raise typer.Exit(130) from None
    elapsed = time.perf_counter() - start
    stored = store.load_trajectories(rid)
    verdicts = [t.verdict for t in stored if t.verdict is not None]
    return {
        "run_id": rid,
        "env_id": env_id,
        "policy": policy,
        "split": plan.split,
        "tasks": len(plan.tasks),
        "group_size": plan.group_size,
        "trajectories": len(stored),
        "new_trajectories": total,
        "errors": sum(1 for t in stored if t.status == "errored"),
        "new_errors": len(new_errors),
        "first_error": new_errors[0] if new_errors else None,
        "verifier_errors": sum(1 for v in verdicts if v.errored),
        "mean_outcome": _mean([v.outcome for v in verdicts]),
        "mean_path_signal": _mean([v.path_signal for v in verdicts]),
        "pass_rate": _mean([1.0 if v.outcome >= 1.0 else 0.0 for v in verdicts]),
        "trajectories_per_s": round(total / elapsed, 2) if elapsed > 0 else None,
        "elapsed_s": round(elapsed, 3),
    }


def _mean(values: list[float]) -> float | None:
    return round(sum(values) / len(values), 6) if values else None


def _print_summary(summaries: list[dict[str, Any]], db: str) -> None:
    run_width = max(len(s["run_id"]) for s in summaries)
    env_width = max(len(s["env_id"]) for s in summaries)
    table = Table(
        Column("env", no_wrap=True, min_width=env_width, overflow="fold"),
        Column("run", no_wrap=True, min_width=run_width, overflow="fold"),  # never cut to "…"
        "tasks",
        "trajectories",
        "mean outcome",
        "mean path signal",
        "pass rate",
        "errors",
        "traj/s",
        title=f"rollout summary ({db})",
    )
    for s in summaries:
        table.add_row(
            s["env_id"],
            s["run_id"],
            str(s["tasks"]),
            str(s["trajectories"]),
            _fmt(s["mean_outcome"]),
            _fmt(s["mean_path_signal"]),
            _fmt(s["pass_rate"]),
            str(s["errors"] + s["verifier_errors"]),
            _fmt(s["trajectories_per_s"]),
        )
    out.print(table)
    for s in summaries:
        print(f"run {s['run_id']} ({s['env_id']}): {s['trajectories']} trajectories in {db}")


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


@app.command("verify")
def verify_command(
    path: str = typer.Argument(..., help="A JSONL export of trajectories."),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Replay and re-verify stored trajectories; report every verdict that changed in any field."""
    from gymhub.reverify import reverify
    from gymhub.store.export import read_jsonl_lines

    if Path(path).is_dir():
        raise GymhubError(f"{path} is a folder: give a JSONL file (gymhub export RUN --out FILE)")
    try:
        records = read_jsonl_lines(path)
    except (OSError, ValueError) as exc:
        raise GymhubError(f"cannot read trajectories from {path}: {exc}") from exc
    if not records:
        raise GymhubError(f"{path} holds no trajectories (an empty file): nothing to verify")
    trajectories = [t for _, t in records]
    line_of = {t.id: number for number, t in records}
    results = reverify(trajectories)
    changed = [r for r in results if r.changed or r.error]
    doc: dict[str, Any] = {
        "checked": len(results),
        "changed": len(changed),
        "skipped_errored": len(trajectories) - len(results),
        "mismatches": [
            {
                "line": line_of.get(r.trajectory_id),
                "trajectory_id": r.trajectory_id,
                "task_id": r.task_id,
                "changed_fields": r.changed_fields,
                "stored_digest": r.stored.digest if r.stored else None,
                "fresh_digest": r.fresh.digest if r.fresh else None,
                "stored_outcome": r.stored.outcome if r.stored else None,
                "fresh_outcome": r.fresh.outcome if r.fresh else None,
                "error": r.error,
            }
            for r in changed
        ],
    }
    if as_json:
        _emit_json(doc)
    else:
        print(f"checked {doc['checked']} trajectories of {path}: {doc['changed']} changed")
        for m in doc["mismatches"]:
            what = m["error"] or (
                f"{', '.join(m['changed_fields'])} differ; "
                f"outcome {m['stored_outcome']} -> {m['fresh_outcome']}"
            )
            print(f"  {path}:{m['line']}: trajectory {m['trajectory_id']} (task {m['task_id']}): {what}")
    if changed:
        raise typer.Exit(1)


@app.command("rlvp-report")
def rlvp_report_command(
    runs: list[str] = typer.Argument(..., help="One or more run ids."),
    db: str = typer.Option("gymhub.db", help="Store URL or SQLite file path."),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Does the path signal separate rollouts where the outcome does not? Per env."""
    from gymhub.registry import load_part
    from gymhub.store import open_store

    store = open_store(db, create=False)
    trajectories = []
    try:
        for run in runs:
            store.get_run(run)
            trajectories += store.load_trajectories(run)
    finally:
        store.close()
    report = load_part("gymhub.verifiers.reachability:reachability_report")(trajectories)
    if as_json:
        _emit_json(report)
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
            _fmt(r["zero_variance_groups"]),
            _fmt(r["recovered"]),
            _fmt(r["corr_phi_outcome"]),
            _fmt(r["mean_outcome"]),
            _fmt(r["mean_path_signal"]),
        )
    out.print(table)
    rules = Table("env", "rule", "firing rate", title="rule firing rates")
    for env_id, r in report.items():
        for rule, rate in r["rule_rates"].items():
            rules.add_row(env_id, rule, _fmt(rate))
    out.print(rules)


@app.command("eval")
def eval_command(
    env_id: str = typer.Argument(..., help="The env to evaluate on."),
    policy: str = typer.Option("reference", help="reference[:variant] | openai:URL[#model] | hf:PATH."),
    k: int = typer.Option(..., "--k", min=1, help="Samples per task, K: pass@k for every k <= K."),
    tasks: int | None = typer.Option(None, "--tasks", min=1, help="Number of tasks (default: all)."),
    split: str = typer.Option("eval", help="train | eval."),
    db: str = typer.Option("gymhub.db", help="Store URL or SQLite file path."),
    seed: int | None = typer.Option(None, min=0, max=MAX_SEED, help="Run seed (default: 0)."),
    concurrency: int = typer.Option(1, "--concurrency", "-c", min=1, help="Parallel episodes."),
    run_id: str | None = typer.Option(None, "--run-id", help="Name the run."),
    as_json: bool = typer.Option(False, "--json", help="Print run_id and the pass@k table as JSON."),
) -> None:
    """K samples per task, stored as a run; unbiased pass@k (k <= K) per task and overall."""
    from gymhub.registry import spec
    from gymhub.report.evaluation import eval_document
    from gymhub.store import open_store

    if split not in ("train", "eval"):
        raise GymhubError(f"--split must be train or eval, not {split!r}")
    spec(env_id)
    store = open_store(db)
    try:
        if run_id is not None and store.find_run(run_id) is not None:
            raise GymhubError(f"run {run_id!r} already exists in {db}: choose another --run-id")
        summary = _rollout_one(
            store, db, env_id, policy, tasks, k, concurrency, split, seed, None, run_id, as_json
        )
        doc = eval_document(store, summary["run_id"])
    finally:
        store.close()
    if as_json:
        _emit_json(doc)
        return
    table = Table(
        "k", "pass@k", "95% interval (bootstrap over tasks)", "tasks", title=f"pass@k of run {doc['run_id']}"
    )
    for row in doc["pass_at_k"]:
        table.add_row(
            str(row["k"]), _fmt(row["mean"]), f"{_fmt(row['low'])} - {_fmt(row['high'])}", str(row["tasks"])
        )
    out.print(table)
    print(
        f"run {doc['run_id']} ({env_id}): {doc['trajectories']} trajectories in {db}; "
        f"see `gymhub report {doc['run_id']} --db {db}`"
    )


@app.command("report")
def report_command(
    runs: list[str] = typer.Argument(..., help="One run id, or two to compare (A then B)."),
    db: str = typer.Option("gymhub.db", help="Store URL or SQLite file path."),
    output: str = typer.Option("report.html", "-o", "--out", help="The HTML file to write."),
    metrics: str | None = typer.Option(
        None, "--metrics", help="A `gymhub train` metrics.jsonl: adds its training curves."
    ),
) -> None:
    """One self-contained HTML report of stored runs (opens from file://, nothing fetched)."""
    from gymhub.report.html_report import write_report
    from gymhub.store import open_store

    target = _check_out_path(output)
    store = open_store(db, create=False)
    try:
        for run in runs:
            store.get_run(run)  # an unknown id fails before anything is written
        stats = write_report(store, runs, target, metrics_path=metrics)
    finally:
        store.close()
    err.print(
        f"wrote {target}: {stats.trajectories} trajectories, {stats.bytes / 1e6:.1f} MB", soft_wrap=True
    )


@app.command("review")
def review_command(
    run: str = typer.Argument(..., help="The run whose verdicts people review."),
    db: str = typer.Option("gymhub.db", help="Store URL or SQLite file path."),
    host: str = typer.Option("127.0.0.1", help="Bind address (loopback by default)."),
    port: int = typer.Option(8000, help="Port (0: any free one)."),
) -> None:
    """Serve a run's report where people mark verdicts right or wrong (stored in the store)."""
    from gymhub.store import open_store

    _require_extra("serve", "fastapi", "uvicorn")
    if host not in LOOPBACK_HOSTS:
        raise GymhubError("gymhub review takes no token: bind it to loopback (and tunnel if you must)")
    store = open_store(db, create=False)
    try:
        store.get_run(run)
    finally:
        store.close()
    import uvicorn

    from gymhub.server import create_app

    _serve_printing_url(
        uvicorn, create_app(db=db, review=True), host, port, f"review of run {run}: open /runs/{run}"
    )


def _label_agreement(run: str, db: str, as_json: bool) -> None:
    """`gymhub bench verifiers --labels RUN`: the verifier's verdicts against people's reviews."""
    from gymhub.registry import load_part
    from gymhub.store import open_store

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
    result = {"run_id": run} | load_part("gymhub.verifiers.bench:label_agreement")(reviewed)
    if as_json:
        _emit_json(result)
        return
    table = Table(
        "run", "reviewed", "agreement", "precision", "recall", "FP", "FN", title="verifier vs people"
    )
    table.add_row(
        run,
        str(result["reviewed"]),
        _fmt(result["agreement"]),
        _fmt(result["precision"]),
        _fmt(result["recall"]),
        str(result["false_positives"]),
        str(result["false_negatives"]),
    )
    out.print(table)


bench_app = typer.Typer(help="Benchmarks.", no_args_is_help=True)
app.add_typer(bench_app, name="bench")


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
    from pathlib import Path

    from gymhub.registry import list_envs, load_part

    if labels is not None:
        _label_agreement(labels, db, as_json)
        return
    bench_env = load_part("gymhub.verifiers.bench:bench_env")
    chosen = env_ids or [s.id for s in list_envs()]
    results = []
    for env_id in chosen:
        if not as_json:
            err.print(f"benchmarking the verifier of {env_id} ...")
        results.append(bench_env(env_id, tasks=tasks, repeats=repeats, mutants_per_task=mutants))
    folder = Path(out_dir)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "verifier_bench.json").write_text(json.dumps(results, indent=2))
    load_part("gymhub.verifiers.bench:plot")(results, str(folder / "verifier_bench.png"))
    if as_json:
        _emit_json([{k: v for k, v in r.items() if k != "latencies_ms"} for r in results])
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
            _fmt(r["verifications_per_s"]["1 thread"]),
            _fmt(r["verifications_per_s"]["2 threads"]),
            _fmt(r["latency_ms"]["p50"]),
            _fmt(r["latency_ms"]["p95"]),
            _fmt(r["latency_ms"]["p99"]),
            _fmt(r["determinism_rate"]),
            _fmt(r["precision"]),
            _fmt(r["recall"]),
            _fmt(r["hack_resistance"]),
        )
    out.print(table)
    out.print(load_part("gymhub.verifiers.bench:blind_floor_table")(results))
    for r in results:
        for name in r["false_positives"]:
            out.print(f"[red]false positive[/red] {r['env_id']} {name}")
        for name in r["false_negatives"]:
            out.print(f"[red]false negative[/red] {r['env_id']} {name}")
    err.print(f"wrote {folder / 'verifier_bench.json'} and {folder / 'verifier_bench.png'}")


sandbox_app = typer.Typer(help="Sandbox backends.", no_args_is_help=True)
app.add_typer(sandbox_app, name="sandbox")


@sandbox_app.command("build-image")
def build_image_command(
    tag: str = typer.Option("gymhub-sandbox:bookworm", help="Image tag."),
    mirror: str | None = typer.Option(None, help="Debian mirror (default: the one apt uses)."),
    force: bool = typer.Option(False, help="Rebuild even if the recipe is unchanged."),
) -> None:
    """Build the docker backend's default image locally (debootstrap + docker import)."""
    from gymhub.registry import load_part

    err.print("building the sandbox image (about 90 s) ...")
    out.print(load_part("gymhub.sandboxes.image_build:build_image")(tag, mirror=mirror, force=force))


@sandbox_app.command("prune")
def sandbox_prune_command() -> None:
    """Remove docker sandbox containers and sandbox cgroups left behind by killed processes."""
    from gymhub.registry import load_part

    cgroups = load_part("gymhub.sandboxes.job_cgroup:prune_cgroups")()
    out.print(f"removed {len(cgroups)} orphaned sandbox cgroup(s)")
    removed = load_part("gymhub.sandboxes.docker_backend:prune_containers")()
    out.print(f"removed {len(removed)} orphaned sandbox container(s) {' '.join(removed)}".rstrip())


@sandbox_app.command("check")
def sandbox_check_command() -> None:
    """Which sandbox backends work on this machine, and why not where they do not."""
    from gymhub.registry import load_part

    table = Table("backend", "status")
    for name, target in (
        ("local", "gymhub.sandboxes.local:local_available"),
        ("local-unsafe", None),
        ("bwrap", "gymhub.sandboxes.bwrap:bwrap_available"),
        ("docker", "gymhub.sandboxes.docker_backend:docker_available"),
    ):
        reason = load_part(target)() if target else None
        status = "ok" if reason is None else f"unavailable: {reason}"
        table.add_row(name, "ok: no isolation at all" if name == "local-unsafe" else status)
    out.print(table)


@app.command("new-env")
def new_env_command(
    name: str = typer.Argument(..., help="The env's name, e.g. my-env (registered as my-env-v0)."),
    family: str = typer.Option("code", help="code | terminal | search | mcp"),
    out_dir: str = typer.Option(".", "--out", help="Where to create the package folder."),
) -> None:
    """Scaffold a working environment package: env, task file, verifier rule, references, test."""
    from pathlib import Path

    from gymhub.scaffold import scaffold

    root = scaffold(name, family, Path(out_dir))
    out.print(f"created {root}: `pip install -e {root}` registers {name}-v0; `pytest {root}/tests` checks it")


@app.command("serve")
def serve_command(
    env_ids: list[str] = typer.Argument(None, help="Envs to serve (default: all)."),
    host: str = typer.Option("127.0.0.1", help="Bind address (loopback by default)."),
    port: int = typer.Option(8000, help="Port."),
    token: str | None = typer.Option(
        None, envvar="GYMHUB_TOKEN", help="Bearer token (required off loopback)."
    ),
    ttl: float = typer.Option(600.0, min=0.001, help="Idle seconds before a session is closed."),
    max_sessions_per_client: int = typer.Option(
        64, "--max-sessions-per-client", min=1, help="Open sessions one client may hold."
    ),
    db: str | None = typer.Option(None, help="Also show this store's run reports at /runs (read-only)."),
    review: bool = typer.Option(False, help="With --db: people may mark verdicts right or wrong."),
) -> None:
    """Serve environments as HTTP sessions (OpenAPI at /docs and /openapi.json)."""
    from gymhub.registry import spec
    from gymhub.store import open_store

    _require_extra("serve", "fastapi", "uvicorn")
    _check_bind(host, token)
    if review and db is None:
        raise GymhubError("--review records reviews in a store: give --db")
    if db is not None:
        open_store(db, create=False).close()  # a wrong store fails here, not on the first page
    for env_id in env_ids or []:
        spec(env_id)  # an unknown id fails here, with close matches
    import uvicorn

    from gymhub.server import create_app

    app_ = create_app(
        env_ids or None,
        token=token,
        ttl_s=ttl,
        max_sessions_per_client=max_sessions_per_client,
        db=db,
        review=review,
    )
    _serve_printing_url(
        uvicorn, app_, host, port, f"serving {', '.join(env_ids) if env_ids else 'every env'}"
    )


LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")


def _check_bind(host: str, token: str | None) -> None:
    if host not in LOOPBACK_HOSTS and not token:
        raise GymhubError(f"binding to {host} exposes the envs: give --token (or GYMHUB_TOKEN)")


def _check_listen(host: str, port: int) -> None:
    """A port in use or an address not of this machine: one line, before the server starts."""
    import socket

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        with socket.socket(family) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
            probe.bind((host, port))
    except OSError as exc:
        raise GymhubError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc


def _serve_printing_url(uvicorn: Any, asgi_app: Any, host: str, port: int, what: str) -> None:
    """Run uvicorn; once it listens, print the URL (the real port, when --port 0) on stderr."""
    _check_listen(host, port)
    config = uvicorn.Config(asgi_app, host=host, port=port, log_level="warning")
    server = uvicorn.Server(config)

    async def run() -> None:
        task = asyncio.create_task(server.serve())
        while not server.started and not task.done():
            await asyncio.sleep(0.05)
        if server.started:
            bound = server.servers[0].sockets[0].getsockname()[1] if server.servers else port
            shown = f"[{host}]" if ":" in host else host
            sys.stderr.write(f"{what} at http://{shown}:{bound} (Ctrl-C stops)\n")
            sys.stderr.flush()
        await task

    try:
        asyncio.run(run())
    except (KeyboardInterrupt, SystemExit):  # uvicorn exits on a failed startup
        pass
    if not server.started:
        raise GymhubError(f"could not listen on {host}:{port} (in use, or not an address of this machine)")


train_app = typer.Typer(help="Train a policy on an env.", no_args_is_help=True)
app.add_typer(train_app, name="train")


@train_app.command("grpo")
def train_grpo_command(
    config: Path | None = typer.Option(None, help="A YAML file of GRPOConfig fields."),
    env: str | None = typer.Option(None, help="Env id."),
    model: str | None = typer.Option(None, help="A transformers folder or a built-in alias."),
    steps: int | None = typer.Option(None, help="Optimiser steps."),
    group_size: int | None = typer.Option(None, "--group-size", "-g", help="Samples per task (G)."),
    tasks_per_step: int | None = typer.Option(None, help="Tasks (groups) per step."),
    lr: float | None = typer.Option(None, help="Learning rate."),
    output_dir: str | None = typer.Option(None, help="Metrics, checkpoints and the reward curve."),
    resume: bool = typer.Option(False, help="Continue from OUTPUT_DIR/checkpoint."),
    overrides: list[str] = typer.Option([], "--set", help="Any other field: --set kl_coef=0.05"),
) -> None:
    """GRPO on an env (gymhub.trainers.grpo): metrics.jsonl, checkpoint, reward_curve.png."""
    import yaml

    from gymhub.registry import load_part

    _require_extra("train", "torch", "transformers")
    config_class = load_part("gymhub.trainers.grpo:GRPOConfig")
    given = {
        "env": env,
        "model": model,
        "steps": steps,
        "group_size": group_size,
        "tasks_per_step": tasks_per_step,
        "lr": lr,
        "output_dir": output_dir,
    }
    fields = {k: v for k, v in given.items() if v is not None}
    if resume:
        fields["resume"] = True
    for item in overrides:
        key, sep, value = item.partition("=")
        if not sep:
            raise GymhubError(f"--set takes key=value, not {item!r}")
        fields[key.strip()] = yaml.safe_load(value)
    try:
        cfg = config_class.from_yaml(config, **fields) if config else config_class(**fields)
    except TypeError as exc:
        raise GymhubError(f"bad GRPO option: {exc}") from exc
    history = load_part("gymhub.trainers.grpo:GRPOTrainer")(cfg).train()
    last = history[-1] if history else {}
    out.print(
        f"trained {cfg.steps} steps: reward {last.get('reward_mean', float('nan')):.3f}, "
        f"outcome {last.get('outcome_mean', float('nan')):.3f}; see {cfg.output_dir}/"
    )


@app.command("serve-reward")
def serve_reward_command(
    env_id: str = typer.Argument(..., help="The env whose verifier scores the completions."),
    host: str = typer.Option("127.0.0.1", help="Bind address (loopback by default)."),
    port: int = typer.Option(5000, help="Port."),
    workers: int = typer.Option(2, min=1, help="Episodes verified at once."),
) -> None:
    """OpenRLHF's remote reward protocol (--remote_rm_url http://HOST:PORT/get_reward)."""
    from gymhub.registry import load_part, spec

    _require_extra("serve", "fastapi", "uvicorn")
    spec(env_id)
    import uvicorn

    from gymhub.scoring import CompletionScorer

    app_factory = load_part("gymhub.trainers.openrlhf:create_reward_app")
    scorer = CompletionScorer(env_id, workers=workers)
    _serve_printing_url(uvicorn, app_factory(env_id, scorer=scorer), host, port, f"rewards of {env_id}")


@app.command("openrlhf-agent")
def openrlhf_agent_command(
    env_id: str = typer.Argument(..., help="The env the agent acts in."),
    tokenizer: str = typer.Option(..., help="The policy model's path (its chat template renders env turns)."),
    output: Path = typer.Option(Path("gymhub_agent.py"), "-o", "--output", help="Agent file to write."),
    data: Path | None = typer.Option(None, help="Also write the prompt dataset (JSONL) here."),
    split: str = typer.Option("train", help="Split of the dataset."),
) -> None:
    """Write an OpenRLHF --agent_func_path file (and its prompt dataset) for an env."""
    from gymhub.registry import load_part

    output.write_text(load_part("gymhub.trainers.openrlhf:agent_file_source")(env_id, tokenizer))
    out.print(f"wrote {output}")
    if data is not None:
        n = load_part("gymhub.trainers.openrlhf:write_dataset")(env_id, data, split)
        out.print(f"wrote {data}: {n} prompts (--input_key prompt --label_key label --apply_chat_template)")


@app.command("mcp")
def mcp_command(
    env_id: str = typer.Argument(..., help="The env to serve."),
    transport: str = typer.Option("stdio", help="stdio | http"),
    host: str = typer.Option("127.0.0.1", help="Bind address for --transport http (loopback by default)."),
    port: int = typer.Option(8001, help="Port for --transport http."),
    token: str | None = typer.Option(
        None, envvar="GYMHUB_TOKEN", help="Bearer token for --transport http (required off loopback)."
    ),
) -> None:
    """Serve an env's tools, plus list_tasks / reset / submit, over MCP (fastmcp)."""
    from gymhub.registry import spec

    if transport not in ("stdio", "http"):
        raise GymhubError(f"unknown transport {transport!r}: use stdio or http")
    _require_extra("envs", "fastmcp")
    if transport == "http":
        _check_bind(host, token)
        _check_listen(host, port)
    spec(env_id)
    from gymhub.mcp_server import build_mcp_server

    server = build_mcp_server(env_id, token=token if transport == "http" else None)
    if transport == "stdio":
        server.run(transport="stdio", show_banner=False)
    else:
        shown = f"[{host}]" if ":" in host else host
        sys.stderr.write(f"serving {env_id} over MCP at http://{shown}:{port}/mcp (Ctrl-C stops)\n")
        sys.stderr.flush()
        server.run(transport="http", host=host, port=port, show_banner=False)


@app.command("export")
def export_command(
    run: str = typer.Argument(..., help="Run id."),
    format: str = typer.Option("jsonl", "--format", help="jsonl | parquet"),
    out_path: str = typer.Option(..., "--out", help="Output file."),
    db: str = typer.Option("gymhub.db", help="Store URL or SQLite file path."),
) -> None:
    """Export a run's trajectories."""
    from gymhub.store import open_store
    from gymhub.store.export import EXPORTERS

    if format not in EXPORTERS:
        raise GymhubError(f"--format must be one of {', '.join(sorted(EXPORTERS))}, not {format!r}")
    if format == "parquet":
        _require_extra("export", "pyarrow")
    target = _check_out_path(out_path)
    store = open_store(db, create=False)
    try:
        store.get_run(run)
        trajectories = store.load_trajectories(run)
    finally:
        store.close()
    count = EXPORTERS[format](trajectories, target)
    err.print(f"wrote {count} trajectories to {target}", soft_wrap=True)


@app.command("runs")
def runs_command(
    db: str = typer.Option("gymhub.db", help="Store URL or SQLite file path."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """List the runs in a store: id, env, policy, tasks × G, trajectories stored and errored."""
    from gymhub.store import open_store

    store = open_store(db, create=False)
    try:
        runs = store.list_runs()
        counts = store.run_counts()
    finally:
        store.close()
    rows: list[dict[str, Any]] = [
        {
            "run_id": r.id,
            "env_id": r.env_id,
            "policy": r.policy,
            "split": r.split,
            "tasks": len(r.task_ids),
            "group_size": r.group_size,
            "expected": len(r.task_ids) * r.group_size,
            "stored": counts.get(r.id, (0, 0))[0],
            "errored": counts.get(r.id, (0, 0))[1],
        }
        for r in runs
    ]
    if as_json:
        _emit_json(rows)
        return
    run_width = max((len(row["run_id"]) for row in rows), default=3)
    table = Table(
        Column("run", no_wrap=True, min_width=run_width, overflow="fold"),  # never cut to "…"
        "env",
        "policy",
        "split",
        "tasks × G",
        "stored",
        "errored",
        title=f"runs in {db}",
    )
    for row in rows:
        table.add_row(
            row["run_id"],
            row["env_id"],
            row["policy"],
            row["split"],
            f"{row['tasks']} × {row['group_size']}",
            f"{row['stored']}/{row['expected']}",
            str(row["errored"]),
        )
    out.print(table)


if __name__ == "__main__":
    main()
