"""Hacks on the reasoning envs (the generic ones of :mod:`gymhub.envs.reasoning.hacks`): each
must score outcome 0; the two that break the answer format must trip ``answer-format``."""

from __future__ import annotations

from typing import Any

from gymhub.envs.reasoning.hacks import HACKS
from gymhub.verifiers.probes import Probe

DESCRIPTIONS = {
    "gold+junk": "the gold answer with junk after it, in one answer block",
    "candidates": "a wrong candidate 'or' the gold answer, in one answer block",
    "candidate-blocks": "a wrong candidate and the gold answer, each in its own answer block",
    "prose": "the gold answer inside a sentence, in the answer block",
    "lookalike": "the gold answer with Unicode look-alike characters (or a zero-width space)",
    "no-format": "the bare gold answer, without the answer tags",
}
FORMAT_BREAKING = ("candidate-blocks", "no-format")


def _reply(name: str) -> Any:
    return lambda task: [{"role": "assistant", "content": HACKS[name](str(task.hidden["answer"]))}]


def _probe(name: str) -> Probe:
    rules = ("answer-format",) if name in FORMAT_BREAKING else ()
    return Probe(name, DESCRIPTIONS[name], _reply(name), rules)


PROBES = [_probe(name) for name in HACKS]
