"""RLVP path signals: a library of small deterministic rules.

A rule looks at one step of a trajectory (and, where it must, the final state or the outcome
details) and emits :class:`~gymhub.types.PathEvent` s: penalties (value < 0) for verifiable
violations, progress credits (value > 0) for sub-goals that were really reached. Each env
declares its rules, their weights and parameters, and β in ``registry.yaml``.
"""

from __future__ import annotations

from typing import Any

from gymhub.verifiers.rlvp.action_rules import ACTION_RULES
from gymhub.verifiers.rlvp.answer_rules import ANSWER_RULES
from gymhub.verifiers.rlvp.base import Rule, RuleContext, ToolStep
from gymhub.verifiers.rlvp.code_rules import CODE_RULES
from gymhub.verifiers.rlvp.progress_rules import PROGRESS_RULES
from gymhub.verifiers.rlvp.shell_rules import SHELL_RULES

RULES: dict[str, type[Rule]] = {
    rule.id: rule for rule in (*CODE_RULES, *ACTION_RULES, *SHELL_RULES, *PROGRESS_RULES, *ANSWER_RULES)
}


def build_rules(config: dict[str, Any]) -> list[Rule]:
    """Instantiate the configured rules: ``{id: weight}`` or ``{id: {weight, **params}}``."""
    unknown = sorted(set(config) - set(RULES))
    if unknown:
        raise KeyError(f"unknown RLVP rule(s) {unknown}; known: {sorted(RULES)}")
    rules = []
    for name, spec in sorted(config.items()):
        params = dict(spec) if isinstance(spec, dict) else {"weight": spec}
        weight = float(params.pop("weight", 1.0))
        rules.append(RULES[name](weight, **params))
    return rules


__all__ = ["RULES", "Rule", "RuleContext", "ToolStep", "build_rules"]
