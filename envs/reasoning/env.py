"""``rg-<dataset>-v0``: one reasoning-gym dataset as a single-reply gymhub env.

The task set is procedural: train items come from seeds ``[t, t + TRAIN_DRAWS)`` and eval
items from ``[EVAL_SEED_BASE + t, EVAL_SEED_BASE + t + EVAL_DRAWS)`` (``t = task_seed *
SEED_STRIDE``), disjoint ranges. gymhub splits every task by its content
(:func:`gymhub.types.content_split`, so a task two envs share is in the same split in both): an
item is kept only where its content split agrees with its seed range (about 4 in 5 train
draws, 1 in 5 eval draws), and a repeated question is kept once. The question (with the
answer-format line) is the public prompt; the gold answer and the generator's entry
(question, answer, metadata) are hidden.

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

TRAIN_DRAWS = 60  # seeds drawn for train; about 4 in 5 are kept (content split "train")
EVAL_DRAWS = 60  # seeds drawn for eval; about 1 in 5 are kept (content split "eval")
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


def generate_items(name: str, seed: int, size: int) -> list[dict[str, Any]]:
    """``size`` items of dataset ``name`` from seeds ``seed ..``, as plain JSON (entry order)."""
    import reasoning_gym

    items = []
    # some generators print progress dots; stdout may carry a CLI's JSON, so it is kept clean
    with contextlib.redirect_stdout(io.StringIO()):
        dataset = reasoning_gym.create_dataset(name, size=size, seed=seed)
        for index in range(size):
            entry = dataset[index]
            items.append(json.loads(json.dumps(dict(entry), default=str, sort_keys=True)))
    return items


def rg_score(name: str, answer: str, entry: dict[str, Any]) -> float:
    """reasoning-gym's own ``score_answer`` for ``name`` (any exception scores 0)."""
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

    def __init__(self, *, dataset: str, **kwargs: Any) -> None:
        if dataset not in DATASETS:
            raise GymhubError(f"unknown reasoning-gym dataset {dataset!r}")
        self.dataset: DatasetInfo = DATASETS[dataset]
        super().__init__(**kwargs)

    def load_tasks(self) -> list[Task]:
        base = self.task_seed * SEED_STRIDE
        seen: set[str] = set()
        train = self._tasks("train", base, TRAIN_DRAWS, seen)
        return train + self._tasks("eval", EVAL_SEED_BASE + base, EVAL_DRAWS, seen)

    def _tasks(self, split: str, seed: int, size: int, seen: set[str]) -> list[Task]:
        info = self.dataset
        tasks = []
        for offset, entry in enumerate(generate_items(info.name, seed, size)):
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
