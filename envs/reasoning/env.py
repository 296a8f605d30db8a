"""``rg-<dataset>-v0``: one reasoning-gym dataset as a single-reply gymhub env.

The task set is procedural: train items come from seeds ``[t, t + draws)`` and eval items
from ``[EVAL_SEED_BASE + t, EVAL_SEED_BASE + t + draws)`` (``t = task_seed * SEED_STRIDE``;
``draws`` is the dataset row's, 60 unless it is slow to generate), disjoint ranges. gymhub
splits every task by its content (:func:`gymhub.types.content_split`, so a task two envs share
is in the same split in both): an item is kept only where its content split agrees with its
seed range (about 4 in 5 train draws, 1 in 5 eval draws), and a repeated question is kept once.
The question (with the answer-format line) is the public prompt; the gold answer and the
generator's entry (question, answer, metadata) are hidden.

reasoning-gym is imported only when a task set is generated or a checker dataset is scored.
"""

from __future__ import annotations

import contextlib
import functools
import io
import json
from typing import Any, ClassVar

from gymhub.envs.reasoning.answers import ANSWER_FORMAT, answers_match, extract_final_answer
from gymhub.envs.reasoning.datasets import DATASETS, DatasetInfo
from gymhub.envs.toy.single_reply import SingleReplyEnv
from gymhub.errors import GymhubError
from gymhub.types import Task, content_split
from gymhub.verifiers.base import BaseVerifier

# of the seeds drawn per split, about 4 in 5 are kept for train and 1 in 5 for eval
EVAL_SEED_BASE = 1_000_000_000
SEED_STRIDE = 1_000_000


@functools.cache
def rg_dataset(name: str) -> Any:
    """A reasoning-gym dataset object of ``name`` (for its ``score_answer``)."""
    try:
        import reasoning_gym
    except ImportError as exc:  # pragma: no cover - the extra is missing
        raise GymhubError("the rg-* envs need reasoning-gym: pip install 'gymhub[reasoning]'") from exc
    return reasoning_gym.create_dataset(name, size=1, seed=0)


def generate_items(
    name: str, seed: int, size: int, config: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    """``size`` items of dataset ``name`` from seeds ``seed ..``, as plain JSON (entry order);
    ``config`` sets the dataset's own config fields (e.g. ``{"max_digits": 1}``)."""
    import reasoning_gym

    items = []
    # some generators print progress dots; stdout may carry a CLI's JSON, so it is kept clean
    with contextlib.redirect_stdout(io.StringIO()):
        dataset = reasoning_gym.create_dataset(name, size=size, seed=seed, **(config or {}))
        for index in range(size):
            entry = dataset[index]
            items.append(json.loads(json.dumps(dict(entry), default=str, sort_keys=True)))
    return items


def _n_queens_score(answer: str, entry: dict[str, Any]) -> float:
    # reasoning-gym's n_queens scorer also runs eval() on the answer (for its 0.5 partial
    # credit): an answer could run code in the verifier. Its 1.0 is this lookup, done here.
    return 1.0 if answer in entry["metadata"]["valid_answers"] else 0.0


# datasets whose reasoning-gym scorer evaluates the answer as Python (eval, sympy's parse_expr):
# scored by the exact part of that scorer, re-implemented without it
SAFE_SCORERS = {"n_queens": _n_queens_score}


def rg_score(name: str, answer: str, entry: dict[str, Any]) -> float:
    """reasoning-gym's own ``score_answer`` for ``name`` (any exception scores 0), or the safe
    re-implementation of :data:`SAFE_SCORERS` where that scorer would evaluate the answer."""
    if name in SAFE_SCORERS:
        return SAFE_SCORERS[name](answer, entry)
    try:
        return float(rg_dataset(name).score_answer(answer, entry))
    except Exception:  # a scorer crash on a hostile answer is a wrong answer
        return 0.0


def gold_reply(gold: str) -> str:
    return f"<answer>{gold}</answer>"


class ReasoningVerifier(BaseVerifier):
    """One ``<answer>`` block, canonical exact match (or the dataset's exact checker)."""

    id = "reasoning-answer"
    version = "1.0.0"

    def check(self, task: Task, final_state: Any) -> tuple[float, dict[str, Any]]:
        reply: str = final_state.get("reply") or ""
        hidden = task.hidden
        answer, why = extract_final_answer(reply)
        details: dict[str, Any] = {
            "answer_format": answer is not None,
            "format_problem": "" if answer is not None else why,
            "scoring": hidden["scoring"],
            "reply_chars": len(reply),
            "bad_action_steps": final_state.get("bad_action_steps", []),
        }
        if answer is None:
            return 0.0, {**details, "correct": False}
        if hidden["scoring"] == "checker":
            entry = json.loads(str(hidden["entry"]))
            correct = rg_score(str(task.metadata["dataset"]), answer.strip(), entry) == 1.0
        else:
            correct = answers_match(answer, str(hidden["answer"]), hidden["answer_type"])
        return (1.0 if correct else 0.0), {**details, "correct": correct}


class ReasoningEnv(SingleReplyEnv):
    """A reasoning-gym dataset: one question, one reply with the final answer in <answer> tags."""

    family: ClassVar[str] = "reasoning"
    version: ClassVar[str] = "0.1.0"

    def __init__(
        self, *, dataset: str, config: dict[str, Any] | None = None, draws: int | None = None, **kwargs: Any
    ) -> None:
        """``config``: fields of the dataset's reasoning-gym config (its difficulty knobs, e.g.
        ``{"min_terms": 2, "max_terms": 2}``), given as registry kwargs; ``draws``: seeds drawn
        per split. ``None`` keeps the dataset row's (with which the registered env was measured)."""
        if dataset not in DATASETS:
            raise GymhubError(f"unknown reasoning-gym dataset {dataset!r}")
        self.dataset: DatasetInfo = DATASETS[dataset]
        self.config: dict[str, Any] = dict(self.dataset.config if config is None else config)
        self.draws: int = self.dataset.draws if draws is None else draws
        super().__init__(**kwargs)

    def load_tasks(self) -> list[Task]:
        base = self.task_seed * SEED_STRIDE
        seen: set[str] = set()
        train = self._tasks("train", base, self.draws, seen)
        return train + self._tasks("eval", EVAL_SEED_BASE + base, self.draws, seen)

    def _tasks(self, split: str, seed: int, size: int, seen: set[str]) -> list[Task]:
        info = self.dataset
        tasks = []
        for offset, entry in enumerate(generate_items(info.name, seed, size, self.config)):
            prompt = f"{entry['question']}\n\n{ANSWER_FORMAT}"
            gold = str(entry["answer"])
            hidden = {
                "answer": gold,
                "answer_type": info.answer_type,
                "scoring": info.scoring,
                "entry": json.dumps(entry, sort_keys=True),
                "solutions": {"reference": [{"role": "assistant", "content": gold_reply(gold)}]},
            }
            if prompt in seen or content_split(hidden) != split:
                continue
            seen.add(prompt)
            metadata = {"dataset": info.name, "kind": info.name, "seed": seed + offset}
            tasks.append(Task.create(self.env_id, split, prompt, hidden, metadata))
        return tasks

    def make_verifier(self) -> ReasoningVerifier:
        return ReasoningVerifier(self.rules)
