"""The reasoning envs' answer extraction and canonical forms: exact, no partial credit."""

from __future__ import annotations

import pytest

from gymhub.envs.reasoning.answers import answers_match, extract_final_answer, normalise
from gymhub.envs.reasoning.hacks import hack_replies, lookalike


def test_exactly_one_answer_block_is_required() -> None:
    assert extract_final_answer("think... <answer> 42 </answer>")[0] == " 42 "
    assert extract_final_answer("42")[0] is None
    assert extract_final_answer("<answer>41</answer> no wait <answer>42</answer>")[0] is None
    assert extract_final_answer("<answer>42</answer> <answer>")[0] is None  # a second, unclosed one
    assert extract_final_answer("<answer>" + "1" * 20_000 + "</answer>")[0] is None


@pytest.mark.parametrize(
    "answer,gold,answer_type",
    [
        ("+007", "7", "integer"),
        ("０７", "7", "integer"),  # full-width digits are the same digits (NFKC)
        ("0.50", "1/2", "number"),
        ("1e2", "100", "number"),
        ("-3/6", "-0.5", "number"),
        ("[1, 2,3]", "1,2,3", "list"),
        ("3 2 1", "1, 2, 3", "set"),
        ("1.0, b", "1, B", "list"),
        ("1  2\n 3 4 \n", "1 2\n3 4", "grid"),
        ("  Mother-In-Law. ", "mother-in-law", "word"),
        ("x**2 + 1", "x**2+1", "expression"),
        ("[[0, 1], ['a']]", '[[0,1],["a"]]', "structure"),
        ("The  Quick fox", "The Quick fox", "text"),
    ],
)
def test_equivalent_forms_match(answer: str, gold: str, answer_type: str) -> None:
    assert answers_match(answer, gold, answer_type)


@pytest.mark.parametrize(
    "answer,gold,answer_type",
    [
        ("42 or 43", "42", "integer"),
        ("The answer is 42", "42", "integer"),
        ("42.0001", "42", "number"),
        ("−3", "-3", "integer"),  # U+2212 minus is not ASCII hyphen-minus
        ("٤٢", "42", "integer"),  # Arabic-Indic digits (int() would accept them)
        ("1, 2", "1, 2, 3", "list"),
        ("1, 2, 3, 4", "1, 2, 3", "list"),
        ("3, 2, 1", "1, 2, 3", "list"),
        ("1 2\n3 4\n5 6", "1 2\n3 4", "grid"),
        ("mothеr", "mother", "word"),  # Cyrillic е
        ("mother\u200b", "mother", "word"),
        ("x**2 + 2", "x**2+1", "expression"),
        ("[[0, 1]]", "[[1, 0]]", "structure"),
        ("", "", "word"),
        ("the quick fox", "The Quick fox", "text"),
    ],
)
def test_different_answers_never_match(answer: str, gold: str, answer_type: str) -> None:
    assert not answers_match(answer, gold, answer_type)


def test_unparseable_answers_have_no_canonical_form() -> None:
    assert normalise("forty-two", "integer") is None
    assert normalise("1/0", "number") is None
    assert normalise("__import__('os')", "structure") is None
    with pytest.raises(ValueError):
        normalise("1", "colour")


@pytest.mark.parametrize("gold,answer_type", [("42", "integer"), ("mother", "word"), ("1 0\n0 1", "grid")])
def test_every_hack_differs_from_the_gold_answer(gold: str, answer_type: str) -> None:
    hacks = hack_replies(gold, answer_type)
    assert set(hacks) == {"gold+junk", "candidates", "candidate-blocks", "prose", "lookalike", "no-format"}
    assert lookalike("42") != "42" and lookalike("zzz") == "zzz\u200b"
    for reply in hacks.values():
        inner, _ = extract_final_answer(reply)
        assert inner is None or not answers_match(inner, gold, answer_type)
