"""reasoning-gym's own scoring vs gymhub's, side by side, on generic reward hacks.

    python benchmarks/reasoning_scoring.py [--tasks 10] [--datasets a,b] [--blind] [--markdown FILE]

For each registered rg dataset (``--all``: every dataset of the table that has a gold answer),
the first ``--tasks`` train tasks are answered with the reference reply and with each hack of
:data:`gymhub.envs.reasoning.hacks.HACKS`; each reply is scored by

* reasoning-gym: its ``extract_answer`` (the last ``<answer>`` block) then the dataset's
  ``score_answer`` (the pipeline its own evaluation uses), mean score;
* gymhub: the env's verifier (one ``<answer>`` block, canonical exact match), mean outcome.

A cell reads ``rg / gymhub``. ``--blind`` adds each env's best blind policy (check_env's floor,
20 tasks per split). The table in docs/envs/reasoning.md comes from this script.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from gymhub.envs.reasoning.datasets import DATASETS, RULES, DatasetInfo
from gymhub.envs.reasoning.env import ReasoningEnv, rg_dataset
from gymhub.envs.reasoning.hacks import HACKS, hack_replies
from gymhub.types import Task


def rg_pipeline_score(name: str, reply: str, entry: dict[str, Any]) -> float:
    from reasoning_gym.utils import extract_answer

    try:
        return float(rg_dataset(name).score_answer(extract_answer(reply), entry))
    except Exception:  # reasoning-gym's scorer crashing on a reply is a 0 for it
        return 0.0


def score_dataset(info: DatasetInfo, tasks: int, blind: bool) -> dict[str, Any]:
    import json

    env = ReasoningEnv(dataset=info.name, env_id=info.env_id, rules=RULES)
    sample: list[Task] = env.tasks[:tasks]
    cells: dict[str, list[tuple[float, float]]] = {"reference": []}
    for task in sample:
        gold = str(task.hidden["answer"])
        entry = json.loads(str(task.hidden["entry"]))
        replies = {"reference": f"<answer>{gold}</answer>", **hack_replies(gold, info.answer_type)}
        for name, reply in replies.items():
            ours, _ = env.verifier.check(task, {"reply": reply, "bad_action_steps": []})
            cells.setdefault(name, []).append((rg_pipeline_score(info.name, reply, entry), ours))
    row: dict[str, Any] = {"dataset": info.name, "type": info.answer_type, "scoring": info.scoring}
    for name, pairs in cells.items():
        row[name] = (sum(p[0] for p in pairs) / len(pairs), sum(p[1] for p in pairs) / len(pairs))
    if blind:
        from gymhub.policies.blind import blind_floor

        best = blind_floor(env, tasks_per_split=20).best
        row["blind"] = f"{best.mean_outcome:.2f} ({best.policy}, {best.split})"
    env.close()
    return row


def markdown(rows: list[dict[str, Any]], blind: bool) -> str:
    columns = ["reference", *HACKS]
    head = ["dataset", "type", "scoring", *columns, *(["best blind"] if blind else [])]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in rows:
        cells = [row["dataset"], row["type"], row["scoring"]]
        for c in columns:
            cells.append(f"{row[c][0]:.2f} / {row[c][1]:.2f}" if c in row else "-")
        if blind:
            cells.append(row.get("blind", "-"))
        lines.append("| " + " | ".join(cells) + " |")
    credited = {c: sum(1 for r in rows if c in r and r[c][0] > 0) for c in HACKS}
    ours = {c: sum(1 for r in rows if c in r and r[c][1] > 0) for c in HACKS}
    lines += ["", f"Datasets (of {len(rows)}) where a hack earns any credit, reasoning-gym / gymhub:", ""]
    lines += [f"- {c}: {credited[c]} / {ours[c]}" for c in HACKS]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tasks", type=int, default=10)
    parser.add_argument("--datasets", default="", help="comma-separated names (default: the registered)")
    parser.add_argument("--all", action="store_true", help="every dataset with a gold answer")
    parser.add_argument("--blind", action="store_true", help="add the best blind policy per env")
    parser.add_argument("--markdown", default="", help="write the table to this file too")
    args = parser.parse_args()
    names = [n for n in args.datasets.split(",") if n] or [
        n for n, info in DATASETS.items() if args.all or info.registered
    ]
    rows = []
    for name in names:
        start = time.perf_counter()
        rows.append(score_dataset(DATASETS[name], args.tasks, args.blind))
        print(f"{name}: {time.perf_counter() - start:.1f} s", flush=True)
    table = markdown(rows, args.blind)
    print(table)
    if args.markdown:
        Path(args.markdown).write_text(table, encoding="utf-8")


if __name__ == "__main__":
    main()
