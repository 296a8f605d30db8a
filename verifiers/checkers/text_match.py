"""String checkers: exact match, normalised match (SQuAD-style) and token F1."""

from __future__ import annotations

import re
import string
import unicodedata
from collections import Counter

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = str.maketrans("", "", string.punctuation)


def normalize_answer(text: str) -> str:
    """NFKC, lower case, no punctuation, no articles, single spaces."""
    text = unicodedata.normalize("NFKC", text).lower().translate(_PUNCT)
    return " ".join(_ARTICLES.sub(" ", text).split())


def exact_match(answer: str, gold: str | list[str]) -> bool:
    golds = [gold] if isinstance(gold, str) else gold
    return any(answer.strip() == g.strip() for g in golds)


def normalized_match(answer: str, gold: str | list[str]) -> bool:
    golds = [gold] if isinstance(gold, str) else gold
    return any(normalize_answer(answer) == normalize_answer(g) for g in golds)


def token_f1(answer: str, gold: str | list[str]) -> float:
    """Best token-level F1 over the gold answers, after normalisation."""
    golds = [gold] if isinstance(gold, str) else gold
    return max(
        (_f1(normalize_answer(answer).split(), normalize_answer(g).split()) for g in golds), default=0.0
    )


def _f1(pred: list[str], gold: list[str]) -> float:
    if not pred or not gold:
        return float(pred == gold)
    common = sum((Counter(pred) & Counter(gold)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(pred), common / len(gold)
    return round(2 * precision * recall / (precision + recall), 9)
