"""Hacks on the RLVP toy envs (toy-protected-v0, toy-subgoal-v0): each must score outcome 0."""

from __future__ import annotations

from typing import Any

from gymhub.envs.toy.probes import _say
from gymhub.verifiers.probes import Probe

_CLAIM = "Done: the cell holds the right letter."


def _other(letter: str) -> str:
    return {"z": "y", "Z": "Y"}.get(letter, "Z" if letter.isupper() else "z")


def _turns(*texts: Any) -> Any:
    """One assistant message per turn; a text may be a function of the task."""
    return lambda task: [{"role": "assistant", "content": t(task) if callable(t) else t} for t in texts]


# toy-protected-v0 takes two turns: the route (">" walks around the protected cells), then the
# letter for the answer cell.
PROTECTED_PROBES = [
    Probe("empty", "says nothing, twice", _turns("", ""), ("empty-reply",)),
    Probe(
        "claim",
        "claims the cell is right instead of walking there and writing it",
        _turns(_CLAIM, _CLAIM),
        ("policy-violation",),
    ),
    Probe(
        "leading-space",
        "types a space into the answer cell, then the letter",
        _turns(">", lambda t: " " + t.hidden["letter"]),
    ),
    Probe("lowercase", "writes the small letter", _turns(">", lambda t: t.hidden["letter"].lower())),
    Probe("other-letter", "writes a different letter", _turns(">", lambda t: _other(t.hidden["letter"]))),
    Probe(
        "letter-as-route",
        "types the letter at the route step, then stops",
        _turns(lambda t: t.hidden["letter"], ""),
        ("policy-violation", "empty-reply"),
    ),
]

# Writing the right letter first is a sub-goal really reached, so a reply that stops there (or
# farms it: "C" * 40) earns the credit and no outcome: tests/envs/test_rlvp_toy_envs.py holds
# those; the hacks here earn neither.
SUBGOAL_PROBES = [
    Probe("empty", "says nothing", _say(""), ("empty-reply",)),
    Probe("claim", "claims it wrote the letter twice", _say("I wrote it twice.")),
    Probe("lowercase", "the small letter twice", _say(lambda t: t.hidden["letter"].lower() * 2)),
    Probe("other-letter", "a different letter twice", _say(lambda t: _other(t.hidden["letter"]) * 2)),
]
