"""The ``gymhub`` command line (typer + rich).

Human output goes to the terminal; with ``--json`` exactly one JSON document is printed on
stdout and nothing else (progress and warnings go to stderr).

Every user error (a bad option, an unreachable database, a missing extra) is one line on
stderr, ``error: ...``, and exit status 2; ``--debug`` (anywhere on the line, or
``GYMHUB_DEBUG=1``) shows the traceback instead.
"""

from __future__ import annotations

import asyncio
import functools
import importlib.util
import json
import os
import sys
import time
import traceback
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from pydantic import BaseModel
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Column, Table
from typer.core import TyperGroup
from typer.exceptions import TyperException

from gymhub.errors import GymhubError

if TYPE_CHECKING:
    from typer._click.core import Command, Context  # the click that typer ships and TyperGroup is built on

PART_COMMANDS = "gymhub.cli"  # the entry-point group through which parts add commands


class _CoreAndPartCommands(TyperGroup):
    """The core's commands, then those the parts contribute through the ``gymhub._cli``
    entry-point group: each names a ``typer.Typer`` (a command group) or a function (one
    command), imported only when it is run or listed, so a core command never imports a part."""

    def list_commands(self, ctx: Context) -> list[str]:
        core = super().list_commands(ctx)
        return core + sorted(name for name in _part_entry_points() if name not in core)

    def get_command(self, ctx: Context, name: str) -> Command | None:
        found = super().get_command(ctx, name)
        entry = _part_entry_points().get(name) if found is None else None
        return found if entry is None else _part_command(name, entry.load())


@functools.cache
def _part_entry_points() -> dict[str, metadata.EntryPoint]:
    return {ep.name: ep for ep in metadata.entry_points(group=PART_COMMANDS)}


def _part_command(name: str, target: Any) -> Command:
    if isinstance(target, typer.Typer):
        group = typer.main.get_group(target)
        group.name = name
        return group
    single = typer.Typer()
    single.command(name)(target)
    return typer.main.get_command(single)


app = typer.Typer(
    cls=_CoreAndPartCommands,
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


def require_extra(extra: str, *modules: str) -> None:
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


def emit_json(document: Any) -> None:
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
        emit_json([s.model_dump() for s in specs])
    elif ids:
        for s in specs:
            print(s.id)
    else:
        table = Table("id", "family", "version", "sandbox", "source", "description")
        for s in specs:
            table.add_row(s.id, s.family, s.version, s.sandbox, s.source, s.description)
        out.print(table)


class RuleInfo(BaseModel):
    """One RLVP rule of an env, as ``gymhub info`` shows it."""

    id: str
    weight: int | float
    kind: str
    value: int | float
    description: str


class EnvInfo(BaseModel):
    """What ``gymhub info`` adds to an env's spec: what the built env holds (its ``verifier`` id,
    the spec's own where it declares one, and its ``rules``, a list of :class:`RuleInfo`, stand
    in the JSON for the spec's fields)."""

    tasks: dict[str, int]
    verifier: str
    verifier_version: str
    beta: float
    rules: list[RuleInfo]
    tools: list[str]
    probes: list[str]


@app.command("info")
def info_command(env_id: str, as_json: bool = typer.Option(False, "--json")) -> None:
    """Show one environment's spec, task counts, tools and RLVP rules."""
    from gymhub.registry import load_probes, make, spec

    env_spec = spec(env_id)
    env = make(env_id)
    splits = {s: sum(1 for t in env.all_tasks if t.split == s) for s in ("train", "eval")}
    rules = [
        RuleInfo(
            id=r.id,
            weight=r.weight,
            kind=r.kind,
            value=r.value,
            description=" ".join((type(r).__doc__ or "").split()),
        )
        for r in getattr(env.verifier, "rules", [])
    ]
    info = EnvInfo(
        tasks=splits,
        verifier=env.verifier.id,
        verifier_version=env.verifier.version,
        beta=env.reward_config.beta,
        rules=rules,
        tools=[t["function"]["name"] for t in env.tools()],
        probes=[p.name for p in load_probes(env_id)],
    )
    env.close()
    doc = {**env_spec.model_dump(), **info.model_dump()}
    if as_json:
        emit_json(doc)
        return
    table = Table(show_header=False)
    for key in (
        "id",
        "family",
        "description",
        "version",
        "entry_point",
        "sandbox",
        "verifier",
        "verifier_version",
        "outcome",
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
        rule_table.add_row(r.id, r.kind, str(r.value), str(r.weight), r.description)
    out.print(rule_table)


MAX_SEED = 2**63 - 1


class RunHeadline(BaseModel):
    """A run as its listings open: id, env, policy, split, tasks × G."""

    run_id: str
    env_id: str
    policy: str
    split: str
    tasks: int
    group_size: int


class RolloutSummary(RunHeadline):
    """``gymhub rollout --json``: one run's counts and means (``{"runs": [...]}`` for several)."""

    trajectories: int
    new_trajectories: int
    errors: int
    new_errors: int
    first_error: str | None
    verifier_errors: int
    mean_outcome: float | None
    mean_path_signal: float | None
    pass_rate: float | None
    trajectories_per_s: float | None
    elapsed_s: float


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
    from gymhub._rollout_engine import ROLLOUT_BACKENDS, check_sandbox_backend
    from gymhub.registry import list_envs, spec
    from gymhub.store import open_store

    if split not in (None, "train", "eval"):
        raise GymhubError(f"--split must be train or eval, not {split!r}")
    if resume is not None and env_id == "all":
        raise GymhubError("--resume continues one run: name its env, not 'all'")
    if resume is not None and run_id is not None:
        raise GymhubError("--run-id names a new run; --resume continues one: give only one of them")
    if backend not in ROLLOUT_BACKENDS:
        raise GymhubError(f"--backend must be one of {', '.join(ROLLOUT_BACKENDS)}, not {backend!r}")
    if backend == "local" and address:
        raise GymhubError("--address names a Ray cluster: use it with --backend ray")
    if backend == "ray":
        require_extra("ray", "ray")
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
        dumped = [s.model_dump() for s in summaries]
        emit_json(dumped[0] if len(dumped) == 1 else {"runs": dumped})
    else:
        _print_summary(summaries, db)
    failed = [s for s in summaries if s.new_trajectories > 0 and s.new_errors == s.new_trajectories]
    if failed:
        for s in failed:
            _error_line(
                f"every trajectory of run {s.run_id} ({s.env_id}) errored; first error: {s.first_error}"
            )
        raise typer.Exit(1)


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
) -> RolloutSummary:
    from gymhub._rollout_engine import arollout, plan_run, rollout_backend

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
            backend=rollout_backend(backend, address),
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
    return RolloutSummary(
        run_id=rid,
        env_id=env_id,
        policy=policy,
        split=plan.split,
        tasks=len(plan.tasks),
        group_size=plan.group_size,
        trajectories=len(stored),
        new_trajectories=total,
        errors=sum(1 for t in stored if t.status == "errored"),
        new_errors=len(new_errors),
        first_error=new_errors[0] if new_errors else None,
        verifier_errors=sum(1 for v in verdicts if v.errored),
        mean_outcome=_mean([v.outcome for v in verdicts]),
        mean_path_signal=_mean([v.path_signal for v in verdicts]),
        pass_rate=_mean([1.0 if v.outcome >= 1.0 else 0.0 for v in verdicts]),
        trajectories_per_s=round(total / elapsed, 2) if elapsed > 0 else None,
        elapsed_s=round(elapsed, 3),
    )


def _mean(values: list[float]) -> float | None:
    return round(sum(values) / len(values), 6) if values else None


def _print_summary(summaries: list[RolloutSummary], db: str) -> None:
    run_width = max(len(s.run_id) for s in summaries)
    env_width = max(len(s.env_id) for s in summaries)
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
            s.env_id,
            s.run_id,
            str(s.tasks),
            str(s.trajectories),
            fmt_float(s.mean_outcome),
            fmt_float(s.mean_path_signal),
            fmt_float(s.pass_rate),
            str(s.errors + s.verifier_errors),
            fmt_float(s.trajectories_per_s),
        )
    out.print(table)
    for s in summaries:
        print(f"run {s.run_id} ({s.env_id}): {s.trajectories} trajectories in {db}")


def fmt_float(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


class VerdictMismatch(BaseModel):
    """One trajectory whose fresh verdict differs from the stored one (or whose replay failed)."""

    line: int | None
    trajectory_id: str
    task_id: str
    changed_fields: list[str]
    stored_digest: str | None
    fresh_digest: str | None
    stored_outcome: float | None
    fresh_outcome: float | None
    error: str | None


class VerifyReport(BaseModel):
    """``gymhub verify --json``."""

    checked: int
    changed: int
    skipped_errored: int
    mismatches: list[VerdictMismatch]


@app.command("verify")
def verify_command(
    path: str = typer.Argument(..., help="A JSONL export of trajectories."),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Replay and re-verify stored trajectories; report every verdict that changed in any field."""
    from gymhub._reverify import reverify
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
    report = VerifyReport(
        checked=len(results),
        changed=len(changed),
        skipped_errored=len(trajectories) - len(results),
        mismatches=[
            VerdictMismatch(
                line=line_of.get(r.trajectory_id),
                trajectory_id=r.trajectory_id,
                task_id=r.task_id,
                changed_fields=r.changed_fields,
                stored_digest=r.stored.digest if r.stored else None,
                fresh_digest=r.fresh.digest if r.fresh else None,
                stored_outcome=r.stored.outcome if r.stored else None,
                fresh_outcome=r.fresh.outcome if r.fresh else None,
                error=r.error,
            )
            for r in changed
        ],
    )
    if as_json:
        emit_json(report.model_dump())
    else:
        print(f"checked {report.checked} trajectories of {path}: {report.changed} changed")
        for m in report.mismatches:
            what = m.error or (
                f"{', '.join(m.changed_fields)} differ; outcome {m.stored_outcome} -> {m.fresh_outcome}"
            )
            print(f"  {path}:{m.line}: trajectory {m.trajectory_id} (task {m.task_id}): {what}")
    if changed:
        raise typer.Exit(1)


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
        doc = eval_document(store, summary.run_id)
    finally:
        store.close()
    if as_json:
        emit_json(doc)
        return
    table = Table(
        "k", "pass@k", "95% interval (bootstrap over tasks)", "tasks", title=f"pass@k of run {doc['run_id']}"
    )
    for row in doc["pass_at_k"]:
        table.add_row(
            str(row["k"]),
            fmt_float(row["mean"]),
            f"{fmt_float(row['low'])} - {fmt_float(row['high'])}",
            str(row["tasks"]),
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

    require_extra("serve", "fastapi", "uvicorn")
    if host not in LOOPBACK_HOSTS:
        raise GymhubError("gymhub review takes no token: bind it to loopback (and tunnel if you must)")
    store = open_store(db, create=False)
    try:
        store.get_run(run)
    finally:
        store.close()
    import uvicorn

    from gymhub.server import create_app

    serve_printing_url(
        uvicorn, create_app(db=db, review=True), host, port, f"review of run {run}: open /runs/{run}"
    )


@app.command("new-env")
def new_env_command(
    name: str = typer.Argument(..., help="The env's name, e.g. my-env (registered as my-env-v0)."),
    family: str = typer.Option("code", help="code | terminal | search | mcp"),
    out_dir: str = typer.Option(".", "--out", help="Where to create the package folder."),
) -> None:
    """Scaffold a working environment package: env, task file, verifier rule, references, test."""
    from pathlib import Path

    from gymhub._scaffold import scaffold

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

    require_extra("serve", "fastapi", "uvicorn")
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
    serve_printing_url(uvicorn, app_, host, port, f"serving {', '.join(env_ids) if env_ids else 'every env'}")


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


def serve_printing_url(uvicorn: Any, asgi_app: Any, host: str, port: int, what: str) -> None:
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
    require_extra("envs", "fastmcp")
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
        require_extra("export", "pyarrow")
    target = _check_out_path(out_path)
    store = open_store(db, create=False)
    try:
        store.get_run(run)
        trajectories = store.load_trajectories(run)
    finally:
        store.close()
    count = EXPORTERS[format](trajectories, target)
    err.print(f"wrote {count} trajectories to {target}", soft_wrap=True)


class StoredRun(RunHeadline):
    """``gymhub runs --json``: one run and how much of it is stored."""

    expected: int
    stored: int
    errored: int


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
    rows = [
        StoredRun(
            run_id=r.id,
            env_id=r.env_id,
            policy=r.policy,
            split=r.split,
            tasks=len(r.task_ids),
            group_size=r.group_size,
            expected=len(r.task_ids) * r.group_size,
            stored=counts.get(r.id, (0, 0))[0],
            errored=counts.get(r.id, (0, 0))[1],
        )
        for r in runs
    ]
    if as_json:
        emit_json([row.model_dump() for row in rows])
        return
    run_width = max((len(row.run_id) for row in rows), default=3)
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
            row.run_id,
            row.env_id,
            row.policy,
            row.split,
            f"{row.tasks} × {row.group_size}",
            f"{row.stored}/{row.expected}",
            str(row.errored),
        )
    out.print(table)


if __name__ == "__main__":
    main()
