"""``toy-json-v0``: "reply with a JSON object with the key answer" — a format task.

The outcome is 1 when the reply is a JSON object (bare, or in a ```json fence) that has the
key ``answer``, else 0; whether the answer is also right is reported in the details and
credited as progress (RLVP), not in the outcome. In memory, no sandbox: the task a small
pretrained chat model (SmolLM2-135M-Instruct) learns in a few GRPO steps.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from gymhub.envs.toy.single_reply import SingleReplyEnv
from gymhub.types import Task, content_split
from gymhub.verifiers.base import BaseVerifier
from gymhub.verifiers.checkers.structured_output import extract_json

QUESTIONS = (
    ("What is {a} + {b}?", lambda a, b: a + b),
    ("What is {a} times {b}?", lambda a, b: a * b),
    ("What is {a} minus {b}?", lambda a, b: a - b),
)
FIRST_OPERANDS = range(2, 12)
SECOND_OPERANDS = range(1, 5)
INSTRUCTION = 'Reply with a JSON object with the key "answer", and nothing else.'


class ArithmeticQuestion(BaseModel):
    """One question of the format task; the answer is for the progress credit, not the outcome."""

    model_config = ConfigDict(frozen=True)

    question: str
    answer: int
    difficulty: Literal[1] = 1  # the format is the task: any reply can carry it

    def task(self, env_id: str) -> Task:
        hidden = {
            "answer": self.answer,
            "solutions": {
                "reference": [{"role": "assistant", "content": json.dumps({"answer": self.answer})}],
                "prose": [{"role": "assistant", "content": f"The answer is {self.answer}."}],
                "fenced": [{"role": "assistant", "content": f'```json\n{{"answer": {self.answer}}}\n```'}],
            },
        }
        task = Task.create(env_id, "train", f"{self.question} {INSTRUCTION}", hidden)
        return task.model_copy(update={"split": content_split(hidden)})


class JsonAnswerVerifier(BaseVerifier):
    id = "json-answer-format"
    version = "1.0.0"

    def check(self, task: Task, final_state: Any) -> tuple[float, dict[str, Any]]:
        reply: str = final_state.get("reply") or ""
        found, value = extract_json(reply)
        has_key = found and isinstance(value, dict) and "answer" in value
        correct = bool(has_key and str(value["answer"]).strip() == str(task.hidden["answer"]))
        return (1.0 if has_key else 0.0), {
            "json": found,
            "has_answer_key": bool(has_key),
            "correct": correct,
            "bad_action_steps": final_state.get("bad_action_steps", []),
        }


class JsonAnswerEnv(SingleReplyEnv):
    def load_tasks(self) -> list[Task]:
        specs = [
            ArithmeticQuestion(question=question.format(a=a, b=b), answer=solve(a, b))
            for question, solve in QUESTIONS
            for a in FIRST_OPERANDS
            for b in SECOND_OPERANDS
        ]
        return [spec.task(self.env_id) for spec in specs]

    def make_verifier(self) -> JsonAnswerVerifier:
        return JsonAnswerVerifier(self.rules)
