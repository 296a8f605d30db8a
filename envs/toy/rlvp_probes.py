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
    Probe("leading-space", "types a space into the answer cell, then the letter", _say(lambda t: " " + t.hidden["letter"])),
    Probe("lowercase", "writes the small letter", _say(lambda t: t.hidden["letter"].lower())),
    Probe("other-letter", "writes a different letter", _say(lambda t: _other(t.hidden["letter"]))),
]

SUBGOAL_PROBES = [
    Probe("empty", "says nothing", _say(""), ("empty-reply",)),
    Probe("claim", "claims it wrote the letter twice", _say("I wrote it twice.")),
    Probe("credit-only", "collects the first-letter credit and stops", _say(lambda t: t.hidden["letter"])),
    Probe("credit-farm", "the first letter, then many more", _say(lambda t: t.hidden["letter"] * 40)),
    Probe("spaced", "the letter twice with a space between", _say(lambda t: t.hidden["letter"] + " " + t.hidden["letter"])),
]
