"""The verifier against people's reviews: precision and recall by hand."""

from __future__ import annotations

from gymhub.verifiers.bench import label_agreement


def test_precision_and_recall_against_reviews() -> None:
    reviewed = [
        (1.0, True),  # passed, rightly: true positive
        (1.0, True),  # true positive
        (1.0, False),  # passed, wrongly: false positive
        (0.0, False),  # failed, wrongly: false negative
        (0.0, True),  # failed, rightly: true negative
        (0.5, True),  # partial is not a pass; rightly: true negative
    ]
    result = label_agreement(reviewed)
    assert (result["true_positives"], result["false_positives"]) == (2, 1)
    assert (result["false_negatives"], result["true_negatives"]) == (1, 2)
    assert result["precision"] == round(2 / 3, 6) and result["recall"] == round(2 / 3, 6)
    assert result["agreement"] == round(4 / 6, 6) and result["reviewed"] == 6


def test_nothing_reviewed() -> None:
    assert label_agreement([]) == {
        "reviewed": 0,
        "agreement": None,
        "precision": None,
        "recall": None,
        "true_positives": 0,
        "false_positives": 0,
        "false_negatives": 0,
        "true_negatives": 0,
    }
