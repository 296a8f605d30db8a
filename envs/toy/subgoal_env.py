"""``toy-subgoal-v0``: "*-C" - reply with the letter written twice, "CC", and nothing else.

The outcome is sparse: 1 only for the whole answer, 0 for anything less. Writing the right
letter first is a verifiable sub-goal: the ``target-prefix`` progress rule credits it (once per
reply, whatever follows), so a policy that stops there collects the credit but never the
outcome, and with β·credit < 1 it always scores below one that finishes. A tiny model with a
30-character vocabulary writes "CC" by chance about once in 10^3 replies, so without the
credit GRPO sees flat groups for a long time; with it, the first letter is learned first.
"""

from __future__ import annotations

import string
from typing import Any

from gymhub.envs.toy.single_reply import SingleReplyEnv, letter_tasks
from gymhub.types import Task
from gymhub.verifiers.base import BaseVerifier

# Capital letters and a few symbols, the letter glued to a "*" (no blind reply writes it twice):
# the ~30 characters a tiny model's vocabulary can be.
LETTERS = string.ascii_uppercase
PHRASINGS = ("*-{c}", "**-{c}", "=*-{c}", ":*-{c}")


def scripted_replies(letter: str, wrong: str) -> dict[str, str | list[str]]:
    return {"reference": letter * 2, "sub-goal only": letter + wrong, "once": letter, "thrice": letter * 3}


class SubgoalVerifier(BaseVerifier):
    id = "subgoal-twice"
    version = "1.0.0"

    def check(self, task: Task, final_state: Any) -> tuple[float, dict[str, Any]]:
        reply: str = final_state.get("reply") or ""
        letter = task.hidden["letter"]
        return (1.0 if reply == letter * 2 else 0.0), {
            "first_letter_right": reply[:1] == letter,
            "length": len(reply),
            "bad_action_steps": final_state.get("bad_action_steps", []),
        }


class SubgoalEnv(SingleReplyEnv):
    def load_tasks(self) -> list[Task]:
        return letter_tasks(self.env_id, LETTERS, PHRASINGS, scripted_replies)

    def make_verifier(self) -> SubgoalVerifier:
        return SubgoalVerifier(self.rules)
