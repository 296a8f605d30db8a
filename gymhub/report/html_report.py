"""``gymhub report``: one self-contained HTML file about one or more stored runs.

The file holds everything it shows (inline CSS, JS and SVG; nothing is fetched, so it opens
from ``file://``). It is written in one streaming pass per run over the store:

* each trajectory becomes a compact row of the trajectory table (one JSON array, columns in
  :data:`ROW_COLUMNS`) and a ``<script type="application/json" id="d-ID">`` block holding its
  turns, verdict and path events, which the page parses only when that trajectory is opened
  (so a report of 10,000 trajectories opens in well under 2 s);
* the run's figures (:class:`~gymhub.report.run_summary.RunDigest`) come last, with the page's
  script, once every trajectory has been counted.

The details go through a temporary file, so memory stays flat whatever the run's size.
"""

from __future__ import annotations

import json
import math
import shutil
import tempfile
from importlib import resources
from pathlib import Path
from typing import Any, TextIO

from pydantic import BaseModel

from gymhub.errors import GymhubError
from gymhub.report.run_summary import STATUSES, TASK_COLUMNS, RunDigest
from gymhub.store import TrajectoryStore, VerdictLabel
from gymhub.types import Trajectory, Turn

ROW_COLUMNS = (
    "id",
    "run",
    "task_id",
    "sample",
    "outcome",
    "path_signal",
    "status",
    "turns",
    "rules",
    "total_s",
    "label",
)
LABEL_CODES = {None: 0, True: 1, False: 2}  # not reviewed | verdict right | verdict wrong
MAX_MESSAGE_CHARS = 20_000  # longer message texts are cut in the viewer (the store keeps them whole)
TOKEN_PREVIEW = 32
DATA_MARKER = "<!--GYMHUB_DATA-->"
# metrics.jsonl keys of `gymhub train` drawn as curves: chart title -> keys (those present are drawn)
TRAINING_CURVES: dict[str, tuple[str, ...]] = {
    "outcome": ("outcome_mean", "reward_mean"),
    "path signal": ("path_signal_mean",),
    "KL": ("kl", "mismatch/kl_approx"),
    "sampler-trainer mismatch": ("mismatch/abs_logprob_diff_mean", "mismatch/abs_logprob_diff_max"),
    "clip fraction": ("clip_fraction",),
    "time split (s)": ("time/generate_s", "time/train_s", "time/verify_s"),
}


class ReportStats(BaseModel):
    """What was written: the file, its size and how many trajectories it holds."""

    path: str
    runs: list[str]
    trajectories: int
    bytes: int


def write_report(
    store: TrajectoryStore,
    run_ids: list[str],
    path: str | Path,
    *,
    metrics_path: str | Path | None = None,
    review_url: str | None = None,
) -> ReportStats:
    """Write the report of ``run_ids`` (two runs: with a per-task comparison) to ``path``."""
    target = Path(path)
    with open(target, "w", encoding="utf-8") as out:
        count = render_report(store, run_ids, out, metrics_path=metrics_path, review_url=review_url)
    return ReportStats(path=str(target), runs=list(run_ids), trajectories=count, bytes=target.stat().st_size)


def render_report(
    store: TrajectoryStore,
    run_ids: list[str],
    out: TextIO,
    *,
    metrics_path: str | Path | None = None,
    review_url: str | None = None,
) -> int:
    """Stream the page to ``out``; returns the number of trajectories in it.

    ``review_url``: where the page POSTs a person's review of a verdict (``gymhub review``);
    without it the page shows the stored reviews read-only.
    """
    if not run_ids:
        raise GymhubError("name at least one run id")
    runs = [store.get_run(run_id) for run_id in dict.fromkeys(run_ids)]
    metrics = read_training_metrics(metrics_path) if metrics_path else None
    head, _, tail = _template().partition(DATA_MARKER)
    out.write(head)
    digests: list[RunDigest] = []
    reviews: list[int] = []
    total = 0
    with tempfile.TemporaryFile("w+", encoding="utf-8") as details:
        out.write('<script type="application/json" id="gh-rows">[')
        for run_index, run in enumerate(runs):
            digest = RunDigest(run)
            labels = store.labels(run.id)
            for t in store.iter_trajectories(run.id):
                status = digest.add(t)
                label = labels.get(t.id)
                out.write(("," if total else "") + _json(_row(t, run_index, status, label)))
                details.write(f'<script type="application/json" id="d-{_attr(t.id)}">')
                details.write(_json(trajectory_detail(t, label)))
                details.write("</script>\n")
                total += 1
            digests.append(digest)
            reviews.append(len(labels))
        out.write("]</script>\n")
        details.seek(0)
        shutil.copyfileobj(details, out)
    summaries = []
    for digest, reviewed in zip(digests, reviews, strict=True):
        prompts = store.task_prompts(sorted(digest.tasks))
        summaries.append(digest.summary(prompts) | {"reviewed": reviewed})
    data = {
        "row_columns": ROW_COLUMNS,
        "task_columns": TASK_COLUMNS,
        "statuses": STATUSES,
        "runs": summaries,
        "comparison": compare_runs(digests[0], digests[1]) if len(digests) == 2 else None,
        "training": metrics,
        "review_url": review_url,
    }
    out.write(f'<script type="application/json" id="gh-data">{_json(data)}</script>\n')
    out.write(tail)
    return total


def _row(t: Trajectory, run_index: int, status: str, label: VerdictLabel | None) -> list[Any]:
    v = t.verdict
    rules = sorted({e.rule for e in v.path_events}) if v is not None else []
    total_s = t.timings.get("total_s")
    return [
        t.id,
        run_index,
        t.task_id,
        t.sample_index,
        None if v is None else v.outcome,
        None if v is None else v.path_signal,
        STATUSES.index(status),
        len(t.turns),
        rules,
        None if total_s is None else round(float(total_s), 6),
        LABEL_CODES[None if label is None else label.verdict_right],
    ]


def trajectory_detail(t: Trajectory, label: VerdictLabel | None = None) -> dict[str, Any]:
    """What the viewer shows of one trajectory: every turn, the verdict, its path events."""
    v = t.verdict
    return {
        "id": t.id,
        "task_id": t.task_id,
        "env_id": t.env_id,
        "sample": t.sample_index,
        "policy": t.policy,
        "seed": t.seed,
        "status": t.status,
        "error": t.error,
        "truncated": t.truncated,
        "env_version": t.env_version,
        "verifier_version": t.verifier_version,
        "timings": t.timings,
        "turns": [_turn(turn) for turn in t.turns],
        "verdict": None
        if v is None
        else {
            "outcome": v.outcome,
            "path_signal": v.path_signal,
            "details": v.details,
            "verifier": v.verifier,
            "verifier_version": v.verifier_version,
            "digest": v.digest,
            "error": v.error,
            "path_events": [e.model_dump() for e in v.path_events],
        },
        "review": None if label is None else {"verdict_right": label.verdict_right, "note": label.note},
    }


def _turn(turn: Turn) -> dict[str, Any]:
    masked = sum(1 for m in turn.loss_mask if m == 0) if turn.loss_mask else len(turn.token_ids)
    logprobs = turn.logprobs or ()
    return {
        "source": turn.source,
        "messages": [
            {
                "role": m.role,
                "content": _cut(m.content),
                "tool_calls": [
                    {"id": c.id, "name": c.name, "arguments": _cut(c.arguments)} for c in m.tool_calls
                ],
                "tool_call_id": m.tool_call_id,
                "name": m.name,
            }
            for m in turn.messages
        ],
        "tokens": len(turn.token_ids),
        # env tokens: the observation tokens appended to the context (loss mask 0)
        "env_tokens": masked if turn.source == "env" or turn.loss_mask else 0,
        "token_preview": list(turn.token_ids[:TOKEN_PREVIEW]),
        "prompt_tokens": None if turn.prompt_token_ids is None else len(turn.prompt_token_ids),
        "logprob_mean": round(math.fsum(logprobs) / len(logprobs), 6) if logprobs else None,
        "timings": turn.timings,
    }


def _cut(text: str) -> str:
    if len(text) <= MAX_MESSAGE_CHARS:
        return text
    return text[:MAX_MESSAGE_CHARS] + f"\n… ({len(text) - MAX_MESSAGE_CHARS} more characters in the store)"


def compare_runs(a: RunDigest, b: RunDigest) -> dict[str, Any]:
    """Per task, the pass rate in run A and in run B: fixed (rose), broken (fell), unchanged."""
    rows = []
    counts = {"fixed": 0, "broken": 0, "unchanged": 0, "only in A": 0, "only in B": 0}
    for task_id in sorted(set(a.tasks) | set(b.tasks)):
        ta, tb = a.tasks.get(task_id), b.tasks.get(task_id)
        rate_a = ta.passed / ta.samples if ta else None
        rate_b = tb.passed / tb.samples if tb else None
        if rate_a is None:
            change = "only in B"
        elif rate_b is None:
            change = "only in A"
        else:
            change = "fixed" if rate_b > rate_a else "broken" if rate_b < rate_a else "unchanged"
        counts[change] += 1
        delta = None if rate_a is None or rate_b is None else round(rate_b - rate_a, 6)
        rows.append([task_id, _round(rate_a), _round(rate_b), delta, change])
    return {
        "a": a.run.id,
        "b": b.run.id,
        "counts": counts,
        "columns": ["task_id", "pass_rate_a", "pass_rate_b", "delta", "change"],
        "rows": rows,
    }


def read_training_metrics(path: str | Path) -> dict[str, Any]:
    """The curves of a ``gymhub train`` metrics.jsonl: chart -> series -> [[step, value], ...]."""
    source = Path(path)
    if not source.is_file():
        raise GymhubError(f"--metrics {path}: no such file (gymhub train writes OUTPUT_DIR/metrics.jsonl)")
    charts: dict[str, dict[str, list[list[float]]]] = {}
    with open(source, encoding="utf-8") as fh:
        for number, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise GymhubError(f"{path}, line {number}: not JSON ({exc.msg})") from None
            step = record.get("step", number)
            for chart, keys in TRAINING_CURVES.items():
                for key in keys:
                    value = record.get(key)
                    if isinstance(value, (int, float)) and math.isfinite(value):
                        charts.setdefault(chart, {}).setdefault(key, []).append([step, value])
    return {"path": str(source), "charts": charts}


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 6)


def _json(value: Any) -> str:
    """Compact JSON that is safe inside a <script> element (no '<', '>' or '&' as such)."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False, default=str)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _attr(text: str) -> str:
    return text.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;")


def _template() -> str:
    return resources.files("gymhub.report").joinpath("report_template.html").read_text(encoding="utf-8")
