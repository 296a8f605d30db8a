"""The ``gymhub`` command line (typer + rich).

Human output goes to the terminal; with ``--json`` exactly one JSON document is printed on
stdout and nothing else (progress and warnings go to stderr).
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

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


def main() -> None:
    try:
        app()
    except GymhubError as exc:
        err.print(f"[red]error:[/red] {exc}")
        sys.exit(2)


def _emit_json(document: Any) -> None:
    sys.stdout.write(json.dumps(document, indent=2, default=str) + "\n")


@app.command("list")
def list_command(
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
    ids: bool = typer.Option(False, "--ids", help="Print only the ids."),
) -> None:
    """List every registered environment."""
    from gymhub.registry import list_envs

    specs = list_envs()
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


@app.command("rollout")
def rollout_command(
    env_id: str = typer.Argument(..., help="An env id, or 'all' for every registered env."),
    policy: str = typer.Option("reference", help="reference[:variant] | openai:URL[#model] | hf:PATH"),
    tasks: int | None = typer.Option(None, "--tasks", help="Number of tasks (default: all)."),
    group_size: int = typer.Option(1, "--group-size", "-g", help="Samples per task (G)."),
    concurrency: int = typer.Option(1, "--concurrency", "-c", help="Parallel episodes."),
    split: str = typer.Option("train", help="train | eval"),
    db: str = typer.Option("gymhub.db", help="Store URL or SQLite file path."),
    seed: int = typer.Option(0, help="Run seed (per-episode seeds derive from it)."),
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
    from gymhub.registry import list_envs
    from gymhub.store import open_store

    if split not in ("train", "eval"):
        raise GymhubError(f"--split must be train or eval, not {split!r}")
    store = open_store(db)
    if resume is not None and env_id == "all":
        raise GymhubError("--resume continues one run: name its env, not 'all'")
    env_ids = [s.id for s in list_envs()] if env_id == "all" else [env_id]
    summaries = []
    for one_env in env_ids:
        summaries.append(
            _rollout_one(
                store,
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
                _episode_backend(backend, address),
            )
        )
    store.close()
    if as_json:
        _emit_json(summaries[0] if len(summaries) == 1 else {"runs": summaries})
    else:
        _print_summary(summaries, db)


def _episode_backend(name: str, address: str | None) -> Any:
    if name == "local":
        if address:
            raise GymhubError("--address names a Ray cluster: use it with --backend ray")
        return "local"
    if name == "ray":
        from gymhub.ray_backend import RayBackend

        return RayBackend(address)
    raise GymhubError(f"--backend must be local or ray, not {name!r}")


def _rollout_one(
    store: Any,
    env_id: str,
    policy: str,
    tasks: int | None,
    group_size: int,
    concurrency: int,
    split: str,
    seed: int,
    resume: str | None,
    run_id: str | None,
    quiet: bool,
    sandbox: str | None = None,
    backend: Any = "local",
) -> dict[str, Any]:
    from gymhub.registry import make
    from gymhub.rollout_engine import arollout, select_tasks

    if resume is not None:
        run = store.get_run(resume)
        env_id, policy, split, group_size, seed = (
            run.env_id,
            run.policy,
            run.split,
            run.group_size,
            run.seed,
        )
        task_list: list[Any] = run.task_ids
        rid = run.id
        skip = store.stored_keys(rid)
        env_kwargs = dict(run.config.get("env_kwargs", {}))
    else:
        env_kwargs = {"sandbox": sandbox} if sandbox else {}
        probe = make(env_id, split=split, **env_kwargs)
        chosen = select_tasks(probe, tasks)
        probe.close()
        rid = run_id or uuid.uuid4().hex[:12]
        store.create_run(
            rid,
            env_id=env_id,
            policy=policy,
            split=split,
            group_size=group_size,
            seed=seed,
            tasks=chosen,
            config={"concurrency": concurrency, "env_kwargs": env_kwargs},
        )
        task_list, skip = [t.id for t in chosen], set()
    if not quiet:
        err.print(f"run [bold]{rid}[/bold]: {env_id} × {policy}, {len(task_list)} tasks × G={group_size}")
    total = len(task_list) * group_size - len(skip)
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

    async def drive() -> None:
        async for _ in arollout(
            env_id,
            policy,
            tasks=task_list,
            group_size=group_size,
            concurrency=concurrency,
            store=store,
            run_id=rid,
            split=split,
            seed=seed,
            skip=skip,
            env_kwargs=env_kwargs,
            on_trajectory=lambda _t: progress.advance(bar),
            backend=backend,
        ):
            pass

    with progress:
        bar = progress.add_task(env_id, total=total)
        asyncio.run(drive())
    elapsed = time.perf_counter() - start
    stored = store.load_trajectories(rid)
    verdicts = [t.verdict for t in stored if t.verdict is not None]
    return {
        "run_id": rid,
        "env_id": env_id,
        "policy": policy,
        "split": split,
        "tasks": len(task_list),
        "group_size": group_size,
        "trajectories": len(stored),
        "new_trajectories": total,
        "errors": sum(1 for t in stored if t.status == "errored"),
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
    table = Table(
        "env",
        "run",
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


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


@app.command("verify")
def verify_command(
    path: str = typer.Argument(..., help="A JSONL export of trajectories."),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Re-verify stored trajectories; report every verdict whose digest changed."""
    from gymhub.reverify import reverify
    from gymhub.store.export import read_jsonl

    try:
        trajectories = read_jsonl(path)
    except (OSError, ValueError) as exc:
        raise GymhubError(f"cannot read trajectories from {path}: {exc}") from exc
    results = reverify(trajectories)
    changed = [r for r in results if r.changed or r.error]
    doc: dict[str, Any] = {
        "checked": len(results),
        "changed": len(changed),
        "skipped_errored": len(trajectories) - len(results),
        "mismatches": [
            {
                "trajectory_id": r.trajectory_id,
                "task_id": r.task_id,
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
        out.print(f"checked {doc['checked']} trajectories: {doc['changed']} changed")
        for m in doc["mismatches"]:
            out.print(
                f"  [red]changed[/red] {m['trajectory_id']} (task {m['task_id']}): "
                f"outcome {m['stored_outcome']} -> {m['fresh_outcome']} {m['error'] or ''}"
            )
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

    store = open_store(db)
    trajectories = []
    for run in runs:
        store.get_run(run)
        trajectories += store.load_trajectories(run)
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
) -> None:
    """Verifier speed, determinism, precision/recall against labels, and hack resistance."""
    from pathlib import Path

    from gymhub.registry import list_envs, load_part

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
    """Remove docker sandbox containers left behind by processes that were killed."""
    from gymhub.registry import load_part

    removed = load_part("gymhub.sandboxes.docker_backend:prune_containers")()
    out.print(f"removed {len(removed)} orphaned sandbox container(s) {' '.join(removed)}".rstrip())


@sandbox_app.command("check")
def sandbox_check_command() -> None:
    """Which sandbox backends work on this machine, and why not where they do not."""
    from gymhub.registry import load_part

    table = Table("backend", "status")
    for name, target in (
        ("local", None),
        ("bwrap", "gymhub.sandboxes.bwrap:bwrap_available"),
        ("docker", "gymhub.sandboxes.docker_backend:docker_available"),
    ):
        reason = load_part(target)() if target else None
        table.add_row(name, "ok" if reason is None else f"unavailable: {reason}")
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
    ttl: float = typer.Option(600.0, help="Idle seconds before a session is closed."),
) -> None:
    """Serve environments as HTTP sessions (OpenAPI at /docs and /openapi.json)."""
    import uvicorn

    from gymhub.server import create_app

    if host not in ("127.0.0.1", "localhost", "::1") and not token:
        raise GymhubError(f"binding to {host} exposes the envs: give --token (or GYMHUB_TOKEN)")
    uvicorn.run(
        create_app(env_ids or None, token=token, ttl_s=ttl), host=host, port=port, log_level="warning"
    )


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
    workers: int = typer.Option(2, help="Episodes verified at once."),
) -> None:
    """OpenRLHF's remote reward protocol (--remote_rm_url http://HOST:PORT/get_reward)."""
    import uvicorn

    from gymhub.registry import load_part
    from gymhub.scoring import CompletionScorer

    app_factory = load_part("gymhub.trainers.openrlhf:create_reward_app")
    scorer = CompletionScorer(env_id, workers=workers)
    uvicorn.run(app_factory(env_id, scorer=scorer), host=host, port=port, log_level="warning")


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
    host: str = typer.Option("127.0.0.1", help="Bind address for --transport http."),
    port: int = typer.Option(8001, help="Port for --transport http."),
) -> None:
    """Serve an env's tools, plus list_tasks / reset / submit, over MCP (fastmcp)."""
    from gymhub.mcp_server import build_mcp_server

    server = build_mcp_server(env_id)
    if transport == "stdio":
        server.run(transport="stdio", show_banner=False)
    elif transport == "http":
        server.run(transport="http", host=host, port=port, show_banner=False)
    else:
        raise GymhubError(f"unknown transport {transport!r}: use stdio or http")


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
        raise GymhubError(f"--format must be one of {sorted(EXPORTERS)}, not {format!r}")
    store = open_store(db)
    store.get_run(run)
    count = EXPORTERS[format](store.load_trajectories(run), out_path)
    store.close()
    err.print(f"wrote {count} trajectories to {out_path}")


if __name__ == "__main__":
    main()
