"""Verifier benchmarking: speed, determinism, agreement with labels, hack resistance.

For each env, a labelled set of trajectories is built from its tasks:

* positives — the reference solutions (``reference``, ``reference-tool``);
* negatives — the stored wrong solutions, mutants of the reference (:mod:`mutation`), and the
  env's reward-hack probes.

Each is played through the env once (its final state and trajectory captured), then the
verifier alone is timed ``repeats`` times on it. Reported: verifications/s (1 and 2 worker
threads), latency p50/p95/p99, determinism (all repeats byte-identical to the env's verdict),
precision and recall of "outcome == 1" against the labels, and hack resistance (share of
probes scored 0). Every false positive and false negative is listed by name.

Beside the labels, the blind-policy floor (:func:`gymhub.policies.blind.blind_floor`): each
blind policy's mean outcome per split, on ``tasks`` sampled tasks of each split.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import gymhub
from gymhub.env import Env, message_from_openai
from gymhub.policies.blind import BLIND_FLOOR, BlindFloorReport, blind_floor
from gymhub.registry import load_probes
from gymhub.types import Message, Task, Trajectory
from gymhub.verifiers.checkers.code_extraction import extract_code
from gymhub.verifiers.mutation import mutants

POSITIVE = ("reference", "reference-tool")


@dataclass(frozen=True)
class Case:
    name: str  # "task_id:kind:variant"
    task: Task
    actions: list[Message]
    positive: bool
    kind: str  # reference | wrong | mutant | probe


@dataclass
class Played:
    case: Case
    state: Any
    trajectory: Trajectory
    verdict_json: str
    outcome: float


def labelled_cases(env_id: str, tasks: list[Task], mutants_per_task: int = 3) -> list[Case]:
    probes = load_probes(env_id)
    cases = []
    for index, task in enumerate(tasks):
        for variant, script in sorted((task.hidden.get("solutions") or {}).items()):
            actions = [message_from_openai(m) for m in script]
            positive = variant in POSITIVE
            cases.append(
                Case(
                    f"{task.id}:{'reference' if positive else 'wrong'}:{variant}",
                    task,
                    actions,
                    positive,
                    "reference" if positive else "wrong",
                )
            )
            if variant == "reference":
                cases += _mutant_cases(task, actions, mutants_per_task)
        for probe in probes:
            if probe.slow and index > 0:
                continue  # one task is enough for probes that run into a time limit
            actions = [message_from_openai(m) for m in probe.actions(task)]
            cases.append(Case(f"{task.id}:probe:{probe.name}", task, actions, False, "probe"))
    return cases


def _mutant_cases(task: Task, actions: list[Message], limit: int) -> list[Case]:
    code = extract_code(actions[-1]) if actions else None
    if not code or limit <= 0:
        return []
    try:
        found = mutants(code, limit)
    except SyntaxError:
        return []
    return [
        Case(
            f"{task.id}:mutant:{m.name}",
            task,
            [*actions[:-1], Message(role="assistant", content=f"```python\n{m.source}```")],
            False,
            "mutant",
        )
        for m in found
    ]


async def _play(env: Env, case: Case) -> Played:
    await env.areset(options={"task_id": case.task.id})
    info: dict[str, Any] = {}
    for action in case.actions * 20:
        _, _, terminated, truncated, info = await env.astep(action)
        if terminated or truncated:
            break
    verdict = info["verdict"]
    return Played(
        case, await env.final_state(), env.episode_trajectory, verdict.model_dump_json(), verdict.outcome
    )


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def bench_env(
    env_id: str,
    *,
    tasks: int = 20,
    repeats: int = 3,
    mutants_per_task: int = 3,
    env_kwargs: dict[str, Any] | None = None,
) -> dict[str, Any]:
    env = gymhub.make(env_id, **(env_kwargs or {}))
    chosen = env.tasks[:tasks]
    cases = labelled_cases(env_id, chosen, mutants_per_task)

    async def play_all() -> list[Played]:
        return [await _play(env, case) for case in cases]

    played = asyncio.run(play_all())
    latencies: list[float] = []
    stable = 0
    for p in played:
        runs = []
        for _ in range(repeats):
            start = time.perf_counter()
            verdict = env.verifier.verify(p.case.task, p.state, p.trajectory)
            latencies.append(time.perf_counter() - start)
            runs.append(verdict.model_dump_json())
        stable += all(r == p.verdict_json for r in runs)
    throughput = {}
    for workers in (1, 2):
        start = time.perf_counter()
        with ThreadPoolExecutor(workers) as pool:
            list(pool.map(lambda p: env.verifier.verify(p.case.task, p.state, p.trajectory), played))
        throughput[workers] = len(played) / (time.perf_counter() - start)
    floor = blind_floor(env, tasks_per_split=tasks)
    env.close()
    return _summary(env_id, env, played, latencies, stable, throughput) | {
        "blind_floor": _floor_summary(floor)
    }


def _floor_summary(report: BlindFloorReport) -> dict[str, Any]:
    """policy -> split -> mean outcome, the best of them, and whether the env is exempt."""
    means: dict[str, dict[str, float]] = {}
    for score in report.scores:
        means.setdefault(score.policy, {})[score.split] = score.mean_outcome
    return {
        "limit": BLIND_FLOOR,
        "exempt": gymhub.spec(report.env_id).outcome != "task",
        "tasks_per_split": report.tasks_per_split,
        "seconds": report.seconds,
        "mean_outcome": means,
        "best": report.best.model_dump(),
    }


def blind_floor_table(results: list[dict[str, Any]]) -> Any:
    """The blind floor of each benchmarked env as a rich table: mean outcome per policy and
    split, over the limit in red (an env whose outcome is format-only says "exempt")."""
    from rich.table import Table

    policies = sorted({p for r in results for p in r["blind_floor"]["mean_outcome"]})
    table = Table("env", "split", *[p.removeprefix("blind:") for p in policies], title="blind-policy floor")
    for r in results:
        floor = r["blind_floor"]
        for split in ("train", "eval"):
            cells = []
            for policy in policies:
                value = floor["mean_outcome"].get(policy, {}).get(split)
                text = "-" if value is None else f"{value:.3f}"
                over = value is not None and value > floor["limit"] and not floor["exempt"]
                cells.append(f"[red]{text}[/red]" if over else text)
            label = r["env_id"] + (
                f" ({gymhub.spec(r['env_id']).outcome}, exempt)" if floor["exempt"] else ""
            )
            table.add_row(label, split, *cells)
    return table


def _summary(
    env_id: str,
    env: Env,
    played: list[Played],
    latencies: list[float],
    stable: int,
    throughput: dict[int, float],
) -> dict[str, Any]:
    passed = [p for p in played if p.outcome >= 1.0]
    tp = [p for p in passed if p.case.positive]
    fp = [p for p in passed if not p.case.positive]
    fn = [p for p in played if p.case.positive and p.outcome < 1.0]
    probes = [p for p in played if p.case.kind == "probe"]
    by_kind: dict[str, dict[str, int]] = {}
    for p in played:
        entry = by_kind.setdefault(p.case.kind, {"cases": 0, "scored_1": 0})
        entry["cases"] += 1
        entry["scored_1"] += p.outcome >= 1.0
    return {
        "env_id": env_id,
        "verifier": env.verifier.id,
        "verifier_version": env.verifier.version,
        "cases": len(played),
        "by_kind": by_kind,
        "verifications_per_s": {"1 thread": round(throughput[1], 2), "2 threads": round(throughput[2], 2)},
        "latency_ms": {
            q: round(_percentile(latencies, v) * 1000, 3)
            for q, v in (("p50", 0.5), ("p95", 0.95), ("p99", 0.99))
        },
        "latencies_ms": [round(x * 1000, 3) for x in latencies],
        "determinism_rate": round(stable / len(played), 6),
        "precision": round(len(tp) / len(passed), 6) if passed else None,
        "recall": round(len(tp) / (len(tp) + len(fn)), 6) if tp or fn else None,
        "hack_resistance": round(sum(p.outcome == 0.0 for p in probes) / len(probes), 6) if probes else None,
        "false_positives": sorted(p.case.name for p in fp),
        "false_negatives": sorted(p.case.name for p in fn),
        "mean_latency_ms": round(statistics.mean(latencies) * 1000, 3),
    }


def plot(results: list[dict[str, Any]], path: str) -> None:
    """Latency distribution and quality figures per env, as one PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
    import numpy as np

    every = [x for r in results for x in r["latencies_ms"] if x > 0]
    bins = np.logspace(np.log10(min(every)), np.log10(max(every)), 50)  # timeouts sit 100x out
    for r in results:
        left.hist(r["latencies_ms"], bins=bins, alpha=0.6, label=r["env_id"])
    left.set_xscale("log")
    left.set_xlabel("verification latency (ms, log scale)")
    left.set_ylabel("count")
    left.set_title("latency")
    left.legend()
    metrics = ["precision", "recall", "determinism_rate", "hack_resistance"]
    width = 0.8 / max(1, len(results))
    for i, r in enumerate(results):
        values = [r[m] if r[m] is not None else 0 for m in metrics]
        right.bar([m + i * width for m in range(len(metrics))], values, width, label=r["env_id"])
    right.set_xticks([m + width * (len(results) - 1) / 2 for m in range(len(metrics))], metrics)
    right.set_ylim(0, 1.05)
    right.set_title("agreement with labels")
    right.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def label_agreement(reviewed: list[tuple[float, bool]]) -> dict[str, Any]:
    """The verifier against people: each item is (the verdict's outcome, "verdict right?").

    The truth of a reviewed trajectory is the verifier's call when the person says the verdict
    is right, and the opposite call when they say it is wrong. Precision and recall are those
    of "outcome == 1" against that truth, as for the labelled cases of :func:`bench_env`.
    """
    said_pass = [outcome >= 1.0 for outcome, _ in reviewed]
    truly_pass = [p if right else not p for p, (_, right) in zip(said_pass, reviewed, strict=True)]
    tp = sum(1 for p, t in zip(said_pass, truly_pass, strict=True) if p and t)
    fp = sum(1 for p, t in zip(said_pass, truly_pass, strict=True) if p and not t)
    fn = sum(1 for p, t in zip(said_pass, truly_pass, strict=True) if not p and t)
    agreed = sum(1 for _, right in reviewed if right)
    return {
        "reviewed": len(reviewed),
        "agreement": round(agreed / len(reviewed), 6) if reviewed else None,
        "precision": round(tp / (tp + fp), 6) if tp + fp else None,
        "recall": round(tp / (tp + fn), 6) if tp + fn else None,
        "true_positives": tp,
        "false_positives": fp,
        "false_negatives": fn,
        "true_negatives": len(reviewed) - tp - fp - fn,
    }
