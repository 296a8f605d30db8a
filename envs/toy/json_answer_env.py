"""``toy-json-v0``: "reply with a JSON object with the key answer" — a format task.

The outcome is 1 when the reply is a JSON object (bare, or in a ```json fence) that has the
key ``answer``, else 0; whether the answer is also right is reported in the details and
credited as progress (RLVP), not in the outcome. In memory, no sandbox: the task a small
pretrained chat model (SmolLM2-135M-Instruct) learns in a few GRPO steps.
"""

from __future__ import annotations

import json
from typing import Any

from gymhub.envs.toy.single_reply import SingleReplyEnv
from gymhub.types import Task, content_split
from gymhub.verifiers.base import BaseVerifier
from gymhub.verifiers.checkers.structured_output import extract_json

QUESTIONS = (
    ("What is {a} + {b}?", lambda a, b: a + b),
    ("What is {a} times {b}?", lambda a, b: a * b),
    ("What is {a} minus {b}?", lambda a, b: a - b),
)
INSTRUCTION = 'Reply with a JSON object with the key "answer", and nothing else.'


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
        tasks = []
        for question, solve in QUESTIONS:
            for a in range(2, 12):
                for b in range(1, 5):
                    answer = solve(a, b)
                    prompt = f"{question.format(a=a, b=b)} {INSTRUCTION}"
                    hidden = {
                        "answer": answer,
                        "solutions": {
                            "reference": [{"role": "assistant", "content": json.dumps({"answer": answer})}],
                            "prose": [{"role": "assistant", "content": f"The answer is {answer}."}],
                            "fenced": [
                                {"role": "assistant", "content": f'```json\n{{"answer": {answer}}}\n```'}
                            ],
                        },
                    }
                    task = Task.create(self.env_id, "train", prompt, hidden)
                    tasks.append(task.model_copy(update={"split": content_split(hidden)}))
        return tasks

    def make_verifier(self) -> JsonAnswerVerifier:
        return JsonAnswerVerifier(self.rules)
