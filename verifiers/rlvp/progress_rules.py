"""Progress rules: small credits for sub-goals that were really reached (and their penalties)."""

from __future__ import annotations

import json
import re
from typing import Any, ClassVar

from gymhub.types import PathEvent, Task
from gymhub.verifiers.rlvp.base import Rule, RuleContext, ToolStep

_PASSED = re.compile(
    r"(\d+)\s*/\s*(\d+)\s+(?:visible\s+)?tests?\s+passed|passed[:\s]+(\d+)\s*/\s*(\d+)", re.I
)


def tests_passed(text: str) -> tuple[int, int] | None:
    """``(passed, total)`` from an env's test report ("3/5 tests passed", "passed: 3/5")."""
    match = _PASSED.search(text)
    if not match:
        return None
    groups = [g for g in match.groups() if g is not None]
    return int(groups[0]), int(groups[1])


class VisibleTestsImprovedRule(Rule):
    """Progress: a test run (the env's report) passes more visible tests than any before."""

    id, kind, value = "visible-tests-improved", "progress", 1.0
    defaults: ClassVar[dict[str, Any]] = {"tool": "run_tests"}

    def evaluate(self, context: RuleContext) -> list[PathEvent]:
        best, events = 0, []
        for ts in context.tool_steps():
            if ts.call.name != self.params["tool"] or ts.result is None:
                continue
            found = tests_passed(ts.result.content)
            if found and found[1] and found[0] > best:
                events.append(
                    self.event(
                        ts.step,
                        f"{found[0]}/{found[1]} visible tests (was {best})",
                        scale=(found[0] - best) / found[1],
                    )
                )
                best = found[0]
        return events


def _reference_arguments(task: Task, tool: str) -> list[dict[str, str]]:
    """The arguments (values as text) of each call of ``tool`` in the task's reference script
    (``task.hidden["solutions"]["reference"]``, OpenAI messages); empty without one."""
    solutions = task.hidden.get("solutions")
    script = solutions.get("reference") if isinstance(solutions, dict) else None
    found: list[dict[str, str]] = []
    for message in script if isinstance(script, list) else []:
        calls = message.get("tool_calls") if isinstance(message, dict) else None
        for call in calls if isinstance(calls, list) else []:
            function = call.get("function") if isinstance(call, dict) else None
            if not isinstance(function, dict) or function.get("name") != tool:
                continue
            try:
                arguments = json.loads(function.get("arguments") or "{}")
            except (TypeError, ValueError):
                continue
            if isinstance(arguments, dict):
                found.append(_as_text(arguments))
    return found


def _as_text(arguments: dict[str, Any]) -> dict[str, str]:
    return {str(k): str(v).strip() for k, v in arguments.items()}


def on_task(task: Task, ts: ToolStep) -> bool:
    """Does this call concern the task's own entities? When the task's reference script calls
    the same tool, the call must pass the same argument values (as text: ``"1005"`` is
    ``1005``); otherwise any call of the tool does. A look-up of another customer, order or
    SKU (another task's script replayed blind) is no progress on this one."""
    wanted = _reference_arguments(task, ts.call.name)
    if not wanted:
        return True
    given = _as_text(ts.arguments())
    return any(all(given.get(k) == v for k, v in w.items()) for w in wanted)


def _first_mutations(
    context: RuleContext, preconditions: list[str], mutations: list[str]
) -> list[tuple[int, str, bool]]:
    """``(step, tool, preceded)`` for each successful mutation call; a check counts only when
    it concerns the task's own entities (:func:`on_task`)."""
    checked, out = False, []
    for ts in context.tool_steps():
        if ts.call.name in preconditions and not ts.failed and on_task(context.task, ts):
            checked = True
        elif ts.call.name in mutations and not ts.failed:
            out.append((ts.step, ts.call.name, checked))
    return out


class PreconditionBeforeMutationRule(Rule):
    """Progress: the required check (e.g. identity) was done before the first mutation."""

    id, kind, value = "precondition-before-mutation", "progress", 1.0
    defaults: ClassVar[dict[str, Any]] = {
        "preconditions": ["verify_identity"],
        "mutations": ["refund_order", "update_address"],
    }

    def evaluate(self, context: RuleContext) -> list[PathEvent]:
        done = _first_mutations(context, self.params["preconditions"], self.params["mutations"])
        if done and done[0][2]:
            return [self.event(done[0][0], f"checked before {done[0][1]}")]
        return []


class MutationWithoutPreconditionRule(Rule):
    """Penalty: a mutation (refund, address change) before the required check."""

    id, kind, value = "mutation-without-precondition", "penalty", -1.0
    defaults: ClassVar[dict[str, Any]] = PreconditionBeforeMutationRule.defaults

    def evaluate(self, context: RuleContext) -> list[PathEvent]:
        done = _first_mutations(context, self.params["preconditions"], self.params["mutations"])
        return [
            self.event(step, f"{tool} before any of {self.params['preconditions']}")
            for step, tool, preceded in done
            if not preceded
        ]


class EvidenceRetrievedRule(Rule):
    """Progress: a gold document (``task.hidden[gold_key]``) was opened; credit per document."""

    id, kind, value = "evidence-retrieved", "progress", 1.0
    defaults: ClassVar[dict[str, Any]] = {"tool": "open", "argument": "doc_id", "gold_key": "gold_docs"}

    def evaluate(self, context: RuleContext) -> list[PathEvent]:
        gold = [str(g) for g in context.task.hidden.get(self.params["gold_key"], [])]
        seen: set[str] = set()
        events = []
        for ts in context.tool_steps():
            if ts.call.name != self.params["tool"] or ts.failed:
                continue
            doc = str(ts.arguments().get(self.params["argument"], ""))
            if doc in gold and doc not in seen:
                seen.add(doc)
                events.append(self.event(ts.step, f"opened gold document {doc}", scale=1 / len(gold)))
        return events


class RequiredLookupsRule(Rule):
    """Progress: each look-up the task requires (``task.metadata[key]``: public tool names) done
    successfully, once, on the task's own entities (:func:`on_task`)."""

    id, kind, value = "required-lookups", "progress", 1.0
    defaults: ClassVar[dict[str, Any]] = {"key": "required"}

    def evaluate(self, context: RuleContext) -> list[PathEvent]:
        required = [str(r) for r in context.task.metadata.get(self.params["key"], [])]
        done: set[str] = set()
        events = []
        for ts in context.tool_steps():
            if (
                ts.call.name in required
                and ts.call.name not in done
                and not ts.failed
                and on_task(context.task, ts)
            ):
                done.add(ts.call.name)
                events.append(self.event(ts.step, f"looked up with {ts.call.name}", scale=1 / len(required)))
        return events


class PolicyViolationRule(Rule):
    """Penalty: each policy violation the verifier found in the final state
    (``details["policy_violations"]``), e.g. a refund over the limit."""

    id, kind, value = "policy-violation", "penalty", -1.0

    def evaluate(self, context: RuleContext) -> list[PathEvent]:
        last = max((s for s, _ in context.policy_steps()), default=0)
        return [self.event(last, str(v)) for v in context.details.get("policy_violations", [])]


class TargetPrefixRule(Rule):
    """Progress: the reply starts with the character the task asks for (toy env)."""

    id, kind, value = "target-prefix", "progress", 0.5

    def evaluate(self, context: RuleContext) -> list[PathEvent]:
        target = str(context.task.hidden.get("letter", ""))
        return [
            self.event(step, f"starts with {target!r}")
            for step, message in context.policy_steps()
            if target and message.content.startswith(target)
        ]


class CorrectAnswerRule(Rule):
    """Progress: beyond the format the outcome scores, the answer itself is right (details["correct"])."""

    id, kind, value = "correct-answer", "progress", 0.5

    def evaluate(self, context: RuleContext) -> list[PathEvent]:
        if not context.details.get("correct"):
            return []
        steps = [step for step, _ in context.policy_steps()]
        return [self.event(steps[-1] if steps else 0, "the answer is right")]


PROGRESS_RULES = (
    RequiredLookupsRule,
    PolicyViolationRule,
    VisibleTestsImprovedRule,
    PreconditionBeforeMutationRule,
    MutationWithoutPreconditionRule,
    EvidenceRetrievedRule,
    TargetPrefixRule,
    CorrectAnswerRule,
)
