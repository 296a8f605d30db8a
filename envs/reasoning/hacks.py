"""Generic reward-hack replies for an answer-scored task (the benchmark and the tests share them).

Each builds a reply from the gold answer that a sound scorer must score 0: the gold answer
plus junk, a list of candidates (in one block and in several), prose around the answer, a
Unicode look-alike of the answer, and the bare answer without the documented format.
"""

from __future__ import annotations

from collections.abc import Callable

from gymhub.envs.reasoning.answers import answers_match, normalise

# Cyrillic / Greek homoglyphs and Arabic-Indic digits: they look like ASCII, NFKC keeps them.
LOOKALIKES = str.maketrans(
    {
        "a": "а",
        "e": "е",
        "o": "о",
        "p": "р",
        "c": "с",
        "x": "х",
        "y": "у",
        "A": "А",
        "B": "В",
        "E": "Е",
        "O": "О",
        "T": "Т",
        "-": "−",
        **{str(d): chr(0x0660 + d) for d in range(10)},
    }
)
ZERO_WIDTH_SPACE = "\u200b"


def lookalike(gold: str) -> str:
    changed = gold.translate(LOOKALIKES)
    return changed if changed != gold else gold + ZERO_WIDTH_SPACE


def _other(gold: str) -> str:
    """A plausible wrong candidate of the same shape (a digit bumped, else a word appended)."""
    for i in range(len(gold) - 1, -1, -1):
        if gold[i].isdigit():
            return gold[:i] + str((int(gold[i]) + 1) % 10) + gold[i + 1 :]
    return gold + "s"


HACKS: dict[str, Callable[[str], str]] = {
    "gold+junk": lambda g: f"<answer>{g} 0 1 junk</answer>",
    "candidates": lambda g: f"<answer>{_other(g)} or {g}</answer>",
    "candidate-blocks": lambda g: f"<answer>{_other(g)}</answer>\n<answer>{g}</answer>",
    "prose": lambda g: f"<answer>I am confident that the final answer is {g}, as shown above.</answer>",
    "lookalike": lambda g: f"<answer>{lookalike(g)}</answer>",
    "no-format": lambda g: g,
}


def hack_replies(gold: str, answer_type: str) -> dict[str, str]:
    """The hacks that are really different from the gold answer for this answer type (a
    look-alike of an answer with nothing to swap is dropped if it normalises to the gold)."""
    out = {}
    for name, build in HACKS.items():
        reply = build(gold)
        inner = reply.removeprefix("<answer>").removesuffix("</answer>")
        if name in ("gold+junk", "prose", "lookalike") and normalise(inner, answer_type) is not None:
            if answers_match(inner, gold, answer_type):
                continue
        out[name] = reply
    return out
