"""The verifier protocol: ``verify(task, final_state, trajectory) -> Verdict``, pure and
deterministic.

A verifier reads the final state (never what the agent claims), evaluates its RLVP rules over
the trajectory's steps, and returns a :class:`~gymhub.types.Verdict` whose digest hashes its
inputs and result. Run twice on the same inputs it returns byte-identical verdicts.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from gymhub.types import PathEvent, Task, Trajectory, Verdict, state_fingerprint
from gymhub.verifiers.rlvp import RuleContext, build_rules


@runtime_checkable
class Verifier(Protocol):
    id: str
    version: str

    def verify(self, task: Task, final_state: Any, trajectory: Trajectory) -> Verdict: ...


class BaseVerifier:
    """Checks the outcome (subclass) and runs the configured RLVP rules (here).

    Subclasses implement :meth:`check`, returning ``(outcome, details)`` from the final state.
    ``rules`` maps rule ids from :mod:`gymhub.verifiers.rlvp` to weights.
    """

    id = "base"
    version = "0"

    def __init__(self, rules: dict[str, float] | None = None) -> None:
        self.rules = build_rules(rules or {})

    def check(self, task: Task, final_state: Any) -> tuple[float, dict[str, Any]]:
        raise NotImplementedError

    def verify(self, task: Task, final_state: Any, trajectory: Trajectory) -> Verdict:
        outcome, details = self.check(task, final_state)
        context = RuleContext(task=task, final_state=final_state, details=details, trajectory=trajectory)
        events: list[PathEvent] = []
        for rule in self.rules:
            events.extend(rule.evaluate(context))
        events.sort(key=lambda e: (e.step, e.rule))
        verdict = Verdict.build(
            verifier=self.id,
            verifier_version=self.version,
            outcome=outcome,
            path_events=events,
            details=details,
        )
        return verdict.with_digest(task.id, state_fingerprint(final_state), trajectory)
