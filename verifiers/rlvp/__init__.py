"""RLVP path signals: a library of small deterministic rules.

A rule looks at one step of a trajectory (and, where it must, the final state or the outcome
details) and emits :class:`~gymhub.types.PathEvent` s: penalties (value < 0) for verifiable
violations, progress credits (value > 0) for sub-goals that were really reached. Each env
declares its rules and their weights in ``registry.yaml``; a rule's base value is scaled by
its weight.
"""

from __future__ import annotations

from gymhub.verifiers.rlvp.base import Rule, RuleContext
from gymhub.verifiers.rlvp.rules import RULES


def build_rules(weights: dict[str, float]) -> list[Rule]:
    """Instantiate the named rules with their weights (a KeyError names the unknown rule)."""
    unknown = sorted(set(weights) - set(RULES))
    if unknown:
        raise KeyError(f"unknown RLVP rule(s) {unknown}; known: {sorted(RULES)}")
    return [RULES[name](weight=float(w)) for name, w in sorted(weights.items())]


__all__ = ["RULES", "Rule", "RuleContext", "build_rules"]
