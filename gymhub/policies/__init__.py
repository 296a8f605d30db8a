"""Policies: anything that answers a chat with an assistant message.

All share one protocol (:class:`~gymhub.policies.base.Policy`). ``make_policy("scheme:arg")``
builds one by name from :data:`POLICY_SCHEMES`: ``reference[:variant]``, ``openai:URL[#model]``,
``hf:PATH``, ``blind:KIND`` (:mod:`gymhub.policies.blind`).
"""

from __future__ import annotations

from typing import Any

from gymhub.errors import GymhubError
from gymhub.policies.base import Policy, PolicyReply
from gymhub.registry import load_part

# scheme -> "module:factory"; a factory takes the text after "scheme:" (or "") and options.
POLICY_SCHEMES: dict[str, str] = {
    "reference": "gymhub.policies.reference:ReferencePolicy.from_spec",
    "openai": "gymhub.policies.openai_policy:OpenAIPolicy.from_spec",
    "hf": "gymhub.policies.hf_policy:HFPolicy.from_spec",
    "blind": "gymhub.policies.blind:BlindPolicy.from_spec",
}


def make_policy(spec: str | Policy, **options: Any) -> Policy:
    """Build a policy from ``"scheme:argument"``; a Policy object is returned as is."""
    if not isinstance(spec, str):
        return spec
    scheme, _, argument = spec.partition(":")
    if scheme not in POLICY_SCHEMES:
        raise GymhubError(
            f"unknown policy {spec!r}; use one of {', '.join(s + ':...' for s in POLICY_SCHEMES)}"
        )
    return load_part(POLICY_SCHEMES[scheme])(argument, **options)


__all__ = ["POLICY_SCHEMES", "Policy", "PolicyReply", "make_policy"]
