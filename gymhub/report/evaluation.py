"""``gymhub eval``: K samples per task, then pass@k for every k <= K, from the store.

The samples are an ordinary stored run (``gymhub rollout`` with G = K, the ``eval`` split by
default), so ``gymhub report`` shows it like any other; the pass@k table is computed from the
store's counts (:meth:`TrajectoryStore.pass_counts`), never from memory of the rollout.
"""

from __future__ import annotations

from typing import Any

from gymhub.report.pass_at_k import pass_at_k_table
from gymhub.store import TrajectoryStore


def eval_document(store: TrajectoryStore, run_id: str) -> dict[str, Any]:
    """The ``--json`` document of ``gymhub eval``: the run and its pass@k table."""
    run = store.get_run(run_id)
    counts = store.pass_counts(run_id)
    table = pass_at_k_table(counts, run.group_size)
    return {
        "run_id": run.id,
        "env_id": run.env_id,
        "policy": run.policy,
        "split": run.split,
        "k": run.group_size,
        "tasks": len(counts),
        "trajectories": sum(n for n, _ in counts.values()),
        "passed": sum(c for _, c in counts.values()),
        "pass_at_k": [row.model_dump() for row in table.overall],
        "per_task": [row.model_dump() for row in table.tasks],
    }
