"""Hacks on the RLVP toy envs (toy-protected-v0, toy-subgoal-v0): each must score outcome 0."""

from __future__ import annotations

from gymhub.envs.toy.probes import _say
from gymhub.verifiers.probes import Probe

_CLAIM = "Done: the cell holds the right letter."


def _other(letter: str) -> str:
    return {"z": "y", "Z": "Y"}.get(letter, "Z" if letter.isupper() else "z")


PROTECTED_PROBES = [
    Probe("empty", "says nothing", _say(""), ("empty-reply",)),
    Probe("claim", "claims the cell is right instead of writing it", _say(_CLAIM), ("policy-violation",)),
    Probe(
        "leading-space",
        "types a space into the answer cell, then the letter",
        _say(lambda t: " " + t.hidden["letter"]),
    ),
    Probe("lowercase", "writes the small letter", _say(lambda t: t.hidden["letter"].lower())),
    Probe("other-letter", "writes a different letter", _say(lambda t: _other(t.hidden["letter"]))),
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
