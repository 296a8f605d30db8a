"""Hardened answer scoring for the reasoning envs: one final answer, a canonical form, exact match.

A reply must hold exactly one ``<answer>...</answer>`` block (:func:`extract_final_answer`);
zero blocks or several (a list of candidates, each in its own tags) score 0. The text inside is
brought to a canonical form for the dataset's answer type (:data:`NORMALISERS`) and compared
with the gold answer's canonical form for equality. Nothing here gives partial credit or
credit for *containing* the gold answer: ``"42 or 43"`` is not ``42``.

Canonical forms, per answer type:

* ``integer`` — an optional sign and ASCII digits (``+7`` is ``7``, ``007`` is ``7``);
* ``number`` — an integer, a decimal (``0.50``), a fraction (``3/4``) or scientific notation,
  compared as an exact rational number;
* ``list`` — comma-separated items (or whitespace-separated when there is no comma), each
  item compared as a number when both are numbers, else as a word; order matters;
* ``set`` — as ``list``, order ignored (duplicates kept);
* ``grid`` — rows on lines, cells separated by whitespace; row and cell order matter;
* ``word`` — case-folded, inner whitespace collapsed, one trailing full stop dropped;
* ``expression`` — all whitespace removed, case kept (``x**2 + 1`` is ``x**2+1``);
* ``structure`` — a Python/JSON literal (nested lists, dicts, strings, numbers), compared as
  canonical JSON (order kept, whitespace and quote style ignored);
* ``text`` — leading/trailing whitespace dropped, inner whitespace collapsed, case kept.

Unicode: the text is NFKC-normalised (full-width ``４２`` is ``42``) and then must be ASCII for
the numeric types, so look-alikes (Cyrillic ``а``, Arabic-Indic digits, a minus sign ``−``
other than ``-``) do not match by accident.
"""

from __future__ import annotations

import ast
import json
import re
import unicodedata
from fractions import Fraction
from typing import Literal

AnswerType = Literal["integer", "number", "list", "set", "grid", "word", "expression", "text", "structure"]
ANSWER_TYPES: tuple[AnswerType, ...] = (
    "integer",
    "number",
    "list",
    "set",
    "grid",
    "word",
    "expression",
    "text",
    "structure",
)
ANSWER_FORMAT = (
    "Put your final answer, and nothing else, between <answer> and </answer> tags, once, "
    "at the end of your reply."
)
MAX_ANSWER_CHARS = 10_000  # an answer block longer than this is no answer

_BLOCK = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)
_OPEN = re.compile(r"<answer>")
_INTEGER = re.compile(r"[+-]?\d+")
_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")
_FRACTION = re.compile(r"[+-]?\d+\s*/\s*\d+")


def extract_final_answer(reply: str) -> tuple[str | None, str]:
    """The text of the reply's one ``<answer>`` block, or ``(None, why not)``."""
    blocks = _BLOCK.findall(reply)
    opened = len(_OPEN.findall(reply))
    if not blocks:
        return None, "no <answer>...</answer> block"
    if len(blocks) > 1 or opened > 1:
        return None, f"{max(len(blocks), opened)} <answer> blocks; exactly one is allowed"
    if len(blocks[0]) > MAX_ANSWER_CHARS:
        return None, f"the answer block is over {MAX_ANSWER_CHARS} characters"
    return blocks[0], "one answer block"


def _nfkc(text: str) -> str:
    return unicodedata.normalize("NFKC", text)


def _ascii(text: str) -> str | None:
    return text if text.isascii() else None


def parse_integer(text: str) -> int | None:
    text = _nfkc(text).strip()
    if _ascii(text) is None or not _INTEGER.fullmatch(text):
        return None
    return int(text)


def parse_number(text: str) -> Fraction | None:
    """An exact rational from an integer, decimal, fraction or scientific-notation string."""
    text = _nfkc(text).strip()
    if _ascii(text) is None:
        return None
    if _FRACTION.fullmatch(text):
        num, _, den = text.partition("/")
        if int(den) == 0:
            return None
        return Fraction(int(num.replace(" ", "")), int(den))
    if _NUMBER.fullmatch(text):
        try:
            return Fraction(text)
        except (ValueError, ZeroDivisionError):
            return None
    return None


def normalise_word(text: str) -> str:
    text = " ".join(_nfkc(text).split()).casefold()
    return text[:-1].rstrip() if text.endswith(".") else text


def _item(text: str) -> str:
    """One list item's canonical form: its exact number if it is one, else the word."""
    number = parse_number(text)
    return f"#{number}" if number is not None else normalise_word(text)


def split_items(text: str) -> list[str]:
    text = _nfkc(text).strip()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    if not text.strip():
        return []
    parts = text.split(",") if "," in text else text.split()
    return [_item(part.strip().strip("'\"")) for part in parts]


def parse_structure(text: str) -> str | None:
    """Canonical JSON of a JSON or Python literal (``json.loads``, else ``ast.literal_eval``)."""
    text = _nfkc(text).strip()
    if not text or len(text) > MAX_ANSWER_CHARS or not text.isascii():
        return None
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            return None
    try:
        return json.dumps(value, sort_keys=True, separators=(",", ":"))
    except (TypeError, ValueError):
        return None


def normalise(text: str, answer_type: AnswerType) -> str | None:
    """The canonical form of ``text`` as an answer of ``answer_type``, or None if it is not one."""
    if answer_type == "integer":
        value = parse_integer(text)
        return None if value is None else str(value)
    if answer_type == "number":
        number = parse_number(text)
        return None if number is None else str(number)
    if answer_type in ("list", "set"):
        items = split_items(text)
        if not items or any(not item for item in items):
            return None
        return "\x1f".join(sorted(items) if answer_type == "set" else items)
    if answer_type == "grid":
        rows = [" ".join(row.split()) for row in _nfkc(text).strip().splitlines()]
        rows = [row for row in rows if row]
        return "\n".join(rows) if rows else None
    if answer_type == "word":
        word = normalise_word(text)
        return word or None
    if answer_type == "expression":
        expression = "".join(_nfkc(text).split())
        return expression or None
    if answer_type == "text":
        plain = " ".join(_nfkc(text).split())
        return plain or None
    if answer_type == "structure":
        return parse_structure(text)
    raise ValueError(f"unknown answer type {answer_type!r}; known: {ANSWER_TYPES}")


def answers_match(answer: str, gold: str, answer_type: AnswerType) -> bool:
    """Exact equality of canonical forms; an answer with no canonical form never matches."""
    got = normalise(answer, answer_type)
    return got is not None and got == normalise(gold, answer_type)


def infer_answer_type(golds: list[str]) -> AnswerType:
    """The narrowest type every gold answer of a sample parses as (how the table was built)."""
    if all(parse_integer(g) is not None for g in golds):
        return "integer"
    if all(parse_number(g) is not None for g in golds):
        return "number"
    if any("\n" in g.strip() for g in golds):
        return "grid"
    if all(len(split_items(g)) > 1 or "," in g for g in golds) and all("," in g for g in golds):
        return "list"
    if all(len(g.split()) <= 3 for g in golds):
        return "word"
    return "text"
