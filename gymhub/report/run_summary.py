"""What the report says about a run, computed in one streaming pass over its trajectories.

:class:`RunDigest` reads each trajectory once (from :meth:`TrajectoryStore.iter_trajectories`)
and keeps only running figures: counts and sums, binned histograms, one small record per task
(pass@k needs each task's samples and passes), one example per rule and per failure kind, and
the reachability counts of :mod:`gymhub.verifiers.reachability`. Memory therefore grows with
the number of tasks, never with the trajectories' turns.
"""

from __future__ import annotations

import math
from array import array
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from gymhub.registry import load_part
from gymhub.report.pass_at_k import pass_at_k_table
from gymhub.store.store import RunInfo
from gymhub.types import Trajectory

PASS_OUTCOME = 1.0  # a trajectory passes when its verdict's outcome is 1 (as in `gymhub rollout`)
OUTCOME_BINS = 10
SIGNAL_BINS = 20
EXAMPLES_PER_FAILURE = 5
MAX_FAILURE_REASONS = 1000
# The statuses of a trajectory's verdict, in the order the report lists them.
STATUSES = ("passed", "partial", "failed", "verifier error", "episode error")


def verdict_status(t: Trajectory) -> str:
    """passed (O = 1) | partial (0 < O < 1) | failed (O = 0) | verifier error | episode error."""
    if t.status == "errored" or t.verdict is None:
        return "episode error"
    if t.verdict.errored:
        return "verifier error"
    if t.verdict.outcome >= PASS_OUTCOME:
        return "passed"
    return "partial" if t.verdict.outcome > 0 else "failed"


def failure_reason(t: Trajectory) -> str:
    """The line a failure is grouped by: the error's first line, or the verdict's details."""
    text = t.error if t.status == "errored" else (t.verdict.error if t.verdict else None)
    if text:
        first = text.strip().splitlines()[0] if text.strip() else text
        return first[:160]
    if t.verdict is None:
        return "no verdict"
    shown = {k: v for k, v in sorted(t.verdict.details.items()) if isinstance(v, (int, float, str, bool))}
    return ", ".join(f"{k}={v}" for k, v in list(shown.items())[:4])[:160] or "outcome < 1"


@dataclass
class TaskTally:
    samples: int = 0
    passed: int = 0
    outcome_sum: float = 0.0
    signal_sum: float = 0.0
    errors: int = 0


@dataclass
class RuleTally:
    kind: str
    trajectories: int = 0
    events: int = 0
    value_sum: float = 0.0
    example: str = ""  # the first trajectory it fired in
    evidence: str = ""


@dataclass
class FailureGroup:
    count: int = 0
    examples: list[str] = field(default_factory=list)


@dataclass
class RunDigest:
    """Running figures of one run; :meth:`add` each trajectory, then :meth:`summary`."""

    run: RunInfo
    trajectories: int = 0
    verdicts: int = 0
    passed: int = 0
    episode_errors: int = 0
    verifier_errors: int = 0
    truncated: int = 0
    outcome_sum: float = 0.0
    signal_sum: float = 0.0
    outcome_bins: list[int] = field(default_factory=lambda: [0] * OUTCOME_BINS)
    signal_values: Counter[float] = field(default_factory=Counter)
    statuses: Counter[str] = field(default_factory=Counter)
    tasks: dict[str, TaskTally] = field(default_factory=dict)
    rules: dict[str, RuleTally] = field(default_factory=dict)
    failures: dict[tuple[str, str], FailureGroup] = field(default_factory=dict)
    total_s: array = field(default_factory=lambda: array("d"))  # 8 bytes a trajectory
    policy_s: float = 0.0
    env_s: float = 0.0
    reachability: Any = field(default=None)

    def __post_init__(self) -> None:
        self.reachability = load_part("gymhub.verifiers.reachability:ReachabilityAccumulator")()

    def add(self, t: Trajectory) -> str:
        """Count one trajectory; returns its verdict status."""
        self.trajectories += 1
        status = verdict_status(t)
        self.statuses[status] += 1
        tally = self.tasks.setdefault(t.task_id, TaskTally())
        tally.samples += 1
        self.truncated += t.truncated
        if "total_s" in t.timings:
            self.total_s.append(float(t.timings["total_s"]))
        self.policy_s += float(t.timings.get("policy_s", 0.0))
        self.env_s += float(t.timings.get("env_s", 0.0))
        if status == "episode error":
            self.episode_errors += 1
            tally.errors += 1
        if t.verdict is not None:
            self._add_verdict(t, tally, status)
        if status != "passed":
            key = (status, failure_reason(t))
            if key not in self.failures and len(self.failures) >= MAX_FAILURE_REASONS:
                key = (status, "(other reasons)")  # bounded: reasons may name ids, one per trajectory
            group = self.failures.setdefault(key, FailureGroup())
            group.count += 1
            if len(group.examples) < EXAMPLES_PER_FAILURE:
                group.examples.append(t.id)
        self.reachability.add(t)
        return status

    def _add_verdict(self, t: Trajectory, tally: TaskTally, status: str) -> None:
        v = t.verdict
        assert v is not None
        self.verdicts += 1
        self.verifier_errors += v.errored
        self.outcome_sum += v.outcome
        self.signal_sum += v.path_signal
        self.outcome_bins[min(OUTCOME_BINS - 1, int(v.outcome * OUTCOME_BINS))] += 1
        self.signal_values[round(v.path_signal, 6)] += 1
        tally.outcome_sum += v.outcome
        tally.signal_sum += v.path_signal
        if status == "passed":
            self.passed += 1
            tally.passed += 1
        seen: set[str] = set()
        for e in v.path_events:
            rule = self.rules.setdefault(e.rule, RuleTally(kind=e.kind))
            rule.events += 1
            rule.value_sum += e.value
            if e.rule not in seen:
                seen.add(e.rule)
                rule.trajectories += 1
                if not rule.example:
                    rule.example, rule.evidence = t.id, e.evidence[:500]

    def summary(self, prompts: dict[str, str]) -> dict[str, Any]:
        """The run's figures as JSON-ready data (what the page shows)."""
        run = self.run
        counts = {task_id: (t.samples, t.passed) for task_id, t in self.tasks.items()}
        table = pass_at_k_table(counts, max(run.group_size, 1)) if counts else None
        reach = self.reachability.by_env.get(run.env_id)
        sized, flat, recovered = reach.group_counts() if reach is not None else (0, 0, 0)
        reach_report = reach.report() if reach is not None else None
        return {
            "run_id": run.id,
            "env_id": run.env_id,
            "policy": run.policy,
            "split": run.split,
            "group_size": run.group_size,
            "tasks": len(self.tasks),
            "planned_tasks": len(run.task_ids),
            "trajectories": self.trajectories,
            "verdicts": self.verdicts,
            "passed": self.passed,
            "pass_rate": _ratio(self.passed, self.verdicts),
            "mean_outcome": _ratio(self.outcome_sum, self.verdicts),
            "mean_path_signal": _ratio(self.signal_sum, self.verdicts),
            "episode_errors": self.episode_errors,
            "verifier_errors": self.verifier_errors,
            "truncated": self.truncated,
            "statuses": {s: self.statuses.get(s, 0) for s in STATUSES},
            "timings": self._timings(),
            "outcome_histogram": {
                "edges": [i / OUTCOME_BINS for i in range(OUTCOME_BINS + 1)],
                "counts": self.outcome_bins,
            },
            "signal_histogram": signal_histogram(self.signal_values),
            "pass_at_k": None if table is None else [o.model_dump() for o in table.overall],
            "task_pass_at_k": {} if table is None else {t.task_id: t.pass_at for t in table.tasks},
            "rules": [
                {
                    "rule": name,
                    "kind": r.kind,
                    "trajectories": r.trajectories,
                    "firing_rate": _ratio(r.trajectories, self.verdicts),
                    "events": r.events,
                    "mean_value": _ratio(r.value_sum, r.events),
                    "example": r.example,
                    "evidence": r.evidence,
                }
                for name, r in sorted(self.rules.items())
            ],
            "reachability": {
                "groups": sized,
                "zero_variance_groups": flat,
                "separated_by_path_signal": recovered,
                "report": reach_report,
            },
            "failures": [
                {"status": status, "reason": reason, "count": g.count, "examples": g.examples}
                for (status, reason), g in sorted(
                    self.failures.items(), key=lambda item: (STATUSES.index(item[0][0]), -item[1].count)
                )
            ],
            "task_rows": [
                [
                    task_id,
                    prompts.get(task_id, "")[:300],
                    t.samples,
                    t.passed,
                    _ratio(t.outcome_sum, t.samples - t.errors),
                    _ratio(t.signal_sum, t.samples - t.errors),
                    t.errors,
                ]
                for task_id, t in sorted(self.tasks.items())
            ],
        }

    def _timings(self) -> dict[str, Any]:
        ordered = sorted(self.total_s)
        return {
            "episodes_timed": len(ordered),
            "total_s_sum": round(math.fsum(ordered), 6),
            "total_s_p50": _percentile(ordered, 0.5),
            "total_s_p95": _percentile(ordered, 0.95),
            "total_s_max": ordered[-1] if ordered else None,
            "policy_s_sum": round(self.policy_s, 6),
            "env_s_sum": round(self.env_s, 6),
        }


TASK_COLUMNS = ("task_id", "prompt", "samples", "passed", "mean_outcome", "mean_path_signal", "errors")


def signal_histogram(values: Counter[float]) -> dict[str, Any]:
    """Path-signal counts in at most SIGNAL_BINS equal bins between the smallest and largest
    value; when there are few distinct values, one bar each."""
    if not values:
        return {"edges": [], "counts": [], "labels": []}
    distinct = sorted(values)
    if len(distinct) <= SIGNAL_BINS:
        return {
            "edges": distinct,
            "counts": [values[v] for v in distinct],
            "labels": [f"{v:g}" for v in distinct],
        }
    low, high = distinct[0], distinct[-1]
    width = (high - low) / SIGNAL_BINS
    counts = [0] * SIGNAL_BINS
    for v, n in values.items():
        counts[min(SIGNAL_BINS - 1, int((v - low) / width))] += n
    edges = [low + i * width for i in range(SIGNAL_BINS + 1)]
    return {"edges": edges, "counts": counts, "labels": [f"{e:.3g}" for e in edges[:-1]]}


def _ratio(num: float, den: float) -> float | None:
    return round(num / den, 6) if den else None


def _percentile(ordered: list[float], q: float) -> float | None:
    if not ordered:
        return None
    return round(ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))], 6)
