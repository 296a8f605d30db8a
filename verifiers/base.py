"""The verifier base class, for the :class:`~gymhub.env.Verifier` protocol (which lives in the
core, beside the envs that use it, and is re-exported by ``gymhub.verifiers``).
"""

from __future__ import annotations

from typing import Any

from gymhub.types import PathEvent, Task, Trajectory, Verdict, state_fingerprint
from gymhub.verifiers.rlvp import RuleContext, build_rules


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
