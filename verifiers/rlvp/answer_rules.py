"""Rules on a final-answer reply: its format, its length, and repetition loops."""

from __future__ import annotations

from typing import Any, ClassVar

from gymhub.types import PathEvent
from gymhub.verifiers.rlvp.base import Rule, RuleContext


class AnswerFormatRule(Rule):
    """Penalty: the reply does not hold exactly one final-answer block (details["answer_format"])."""

    id, kind, value = "answer-format", "penalty", -0.5

    def evaluate(self, context: RuleContext) -> list[PathEvent]:
        if context.details.get("answer_format", True):
            return []
        steps = [step for step, _ in context.policy_steps()]
        why = str(context.details.get("format_problem") or "no single final answer")
        return [self.event(steps[-1] if steps else 0, why)]


class ReplyLengthRule(Rule):
    """Penalty: a reply longer than ``max_chars`` characters (once per reply)."""

    id, kind, value = "reply-length", "penalty", -0.25
    defaults: ClassVar[dict[str, Any]] = {"max_chars": 8000}

    def evaluate(self, context: RuleContext) -> list[PathEvent]:
        limit = int(self.params["max_chars"])
        return [
            self.event(step, f"{len(message.content)} characters (the limit is {limit})")
            for step, message in context.policy_steps()
            if len(message.content) > limit
        ]


def longest_repeat_run(text: str, min_chars: int) -> tuple[int, str]:
    """The most consecutive repeats of one line (of at least ``min_chars`` characters) in
    ``text``, and that line: how a generation stuck in a loop looks."""
    best, best_line, run, previous = 0, "", 0, None
    for line in (line.strip() for line in text.splitlines()):
        if not line:
            continue
        run = run + 1 if line == previous else 1
        previous = line
        if len(line) >= min_chars and run > best:
            best, best_line = run, line
    return best, best_line


class RepetitionLoopRule(Rule):
    """Penalty: the same line repeated ``max_repeats`` times or more in a row (a degenerate loop)."""

    id, kind, value = "repetition-loop", "penalty", -0.5
    defaults: ClassVar[dict[str, Any]] = {"max_repeats": 4, "min_chars": 8}

    def evaluate(self, context: RuleContext) -> list[PathEvent]:
        events = []
        for step, message in context.policy_steps():
            count, line = longest_repeat_run(message.content, int(self.params["min_chars"]))
            if count >= int(self.params["max_repeats"]):
                events.append(self.event(step, f"{count} repeats of {line[:60]!r}"))
        return events


ANSWER_RULES = (AnswerFormatRule, ReplyLengthRule, RepetitionLoopRule)
