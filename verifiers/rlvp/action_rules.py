"""Rules on how the policy acts: malformed actions, forbidden tools, loops, empty claims."""

from __future__ import annotations

import re
from typing import Any, ClassVar

from gymhub.types import PathEvent
from gymhub.verifiers.rlvp.base import Rule, RuleContext


class InvalidActionRule(Rule):
    """Penalty: a malformed, oversized or non-UTF-8 action, or a call to an unknown tool."""

    id, kind, value = "invalid-action", "penalty", -0.25

    def evaluate(self, context: RuleContext) -> list[PathEvent]:
        steps = context.details.get("bad_action_steps") or []
        return [self.event(int(step), "the env rejected this action") for step in steps]


class EmptyReplyRule(Rule):
    """Penalty: the policy said nothing at all."""

    id, kind, value = "empty-reply", "penalty", -1.0

    def evaluate(self, context: RuleContext) -> list[PathEvent]:
        return [
            self.event(step, "empty message")
            for step, message in context.policy_steps()
            if not message.content.strip() and not message.tool_calls
        ]


class ForbiddenToolRule(Rule):
    """Penalty: a call to a forbidden tool, or with a forbidden argument value (regex)."""

    id, kind, value = "forbidden-tool", "penalty", -1.0
    defaults: ClassVar[dict[str, Any]] = {
        "tools": [],
        "arguments": {},
    }  # arguments: {tool: {arg: [regex, ...]}}

    def evaluate(self, context: RuleContext) -> list[PathEvent]:
        events = []
        for ts in context.tool_steps():
            if ts.call.name in self.params["tools"]:
                events.append(self.event(ts.step, f"called forbidden tool {ts.call.name!r}"))
                continue
            banned: dict[str, list[str]] = self.params["arguments"].get(ts.call.name, {})
            args = ts.arguments()
            for arg, patterns in sorted(banned.items()):
                value = str(args.get(arg, ""))
                hit = next((p for p in patterns if arg in args and re.search(p, value)), None)
                if hit is not None:
                    events.append(
                        self.event(ts.step, f"{ts.call.name}({arg}={value[:60]!r}) matches {hit!r}")
                    )
        return events


class RepeatedFailingCallRule(Rule):
    """Penalty: the same failing tool call (same name and arguments) repeated in a row."""

    id, kind, value = "repeated-failing-call", "penalty", -0.5
    defaults: ClassVar[dict[str, Any]] = {"max_repeats": 3}

    def evaluate(self, context: RuleContext) -> list[PathEvent]:
        events: list[PathEvent] = []
        streak: tuple[Any, ...] | None = None
        count = 0
        for ts in context.tool_steps():
            key = (ts.call.name, ts.call.arguments)
            if not ts.failed:
                streak, count = None, 0
                continue
            count = count + 1 if key == streak else 1
            streak = key
            if count == self.params["max_repeats"]:
                events.append(self.event(ts.step, f"{ts.call.name} failed {count} times in a row"))
        return events


_CLAIMS = [
    r"\ball (of )?the (unit )?tests (now )?pass",
    r"\ball (unit )?tests (now )?pass",
    r"\btests? (are|is) (now )?passing\b",
    r"\b(the )?(task|problem|issue|bug) (is|has been) (now )?(complete|completed|solved|fixed|done)\b",
]


class UnsupportedSuccessClaimRule(Rule):
    """Penalty: claiming success ("all tests pass") with no evidence step before it."""

    id, kind, value = "unsupported-success-claim", "penalty", -0.5
    defaults: ClassVar[dict[str, Any]] = {"evidence_tools": ["run_tests"], "patterns": _CLAIMS}

    def evaluate(self, context: RuleContext) -> list[PathEvent]:
        evidence_steps = sorted(
            ts.step
            for ts in context.tool_steps()
            if ts.call.name in self.params["evidence_tools"] and not ts.failed
        )
        events = []
        for step, message in context.policy_steps():
            text = message.content.lower()
            claim = next((p for p in self.params["patterns"] if re.search(p, text)), None)
            if claim and not any(s < step for s in evidence_steps):
                events.append(self.event(step, f"claims success ({claim!r}) with no prior evidence step"))
        return events


class UntestedSubmitRule(Rule):
    """Penalty: submitting without ever having run the tests successfully first."""

    id, kind, value = "untested-submit", "penalty", -0.5
    defaults: ClassVar[dict[str, Any]] = {"submit_tool": "submit", "test_tool": "run_tests"}

    def evaluate(self, context: RuleContext) -> list[PathEvent]:
        tested = False
        for ts in context.tool_steps():
            if ts.call.name == self.params["test_tool"] and not ts.failed:
                tested = True
            elif ts.call.name == self.params["submit_tool"] and not tested:
                return [self.event(ts.step, "submitted without running the tests")]
        return []


class CallsAfterFinishRule(Rule):
    """Penalty: tool calls placed after the call that ends the episode (``finish``, ``answer``)
    in the same message — the env does not run them; once per message."""

    id, kind, value = "calls-after-finish", "penalty", -0.5
    defaults: ClassVar[dict[str, Any]] = {"finish_tools": ["finish"]}

    def evaluate(self, context: RuleContext) -> list[PathEvent]:
        events = []
        for step, message in context.policy_steps():
            names = [call.name for call in message.tool_calls]
            first = next((i for i, n in enumerate(names) if n in self.params["finish_tools"]), None)
            if first is not None and first + 1 < len(names):
                after = len(names) - first - 1
                events.append(self.event(step, f"{after} call(s) after {names[first]}: {names[first + 1 :]}"))
        return events


class MultipleCandidatesRule(Rule):
    """Penalty: a final answer that hedges between several candidates ("A or B", "A / B", a list)."""

    id, kind, value = "multiple-candidates", "penalty", -0.5
    defaults: ClassVar[dict[str, Any]] = {"tool": "answer", "argument": "text"}

    def evaluate(self, context: RuleContext) -> list[PathEvent]:
        events = []
        for ts in context.tool_steps():
            if ts.call.name != self.params["tool"]:
                continue
            text = str(ts.arguments().get(self.params["argument"], ""))
            parts = [p for p in re.split(r"\bor\b|;|/|\n|\band\b", text) if p.strip()]
            if len(parts) >= 2:
                events.append(self.event(ts.step, f"{len(parts)} candidates in {text[:80]!r}"))
        return events


class SearchBudgetRule(Rule):
    """Penalty: more searches than the budget (once, at the first search over it)."""

    id, kind, value = "search-budget", "penalty", -0.5
    defaults: ClassVar[dict[str, Any]] = {"tool": "search", "budget": 6}

    def evaluate(self, context: RuleContext) -> list[PathEvent]:
        count = 0
        for ts in context.tool_steps():
            if ts.call.name == self.params["tool"]:
                count += 1
                if count == self.params["budget"] + 1:
                    return [self.event(ts.step, f"search #{count} over a budget of {self.params['budget']}")]
        return []


ACTION_RULES = (
    CallsAfterFinishRule,
    MultipleCandidatesRule,
    SearchBudgetRule,
    UntestedSubmitRule,
    InvalidActionRule,
    EmptyReplyRule,
    ForbiddenToolRule,
    RepeatedFailingCallRule,
    UnsupportedSuccessClaimRule,
)
