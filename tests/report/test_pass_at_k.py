"""pass@k: the unbiased estimator by hand, the table, and the bootstrap interval."""

from __future__ import annotations

import math

import pytest

from gymhub.report.pass_at_k import bootstrap_interval, pass_at_k, pass_at_k_table


def test_estimator_by_hand() -> None:
    assert pass_at_k(5, 2, 2) == pytest.approx(1 - 3 / 10)  # 1 - C(3,2)/C(5,2)
    assert pass_at_k(8, 1, 1) == pytest.approx(1 / 8)  # pass@1 is the pass rate
    assert pass_at_k(8, 0, 4) == 0.0
    assert pass_at_k(4, 2, 3) == 1.0  # every 3 of the 4 include a pass
    with pytest.raises(ValueError):
        pass_at_k(4, 5, 1)


def test_estimator_is_unbiased_by_enumeration() -> None:
    """pass@k equals the share of all k-subsets of the n samples holding at least one pass."""
    from itertools import combinations

    samples = [1, 0, 0, 1, 0, 0, 0]
    for k in range(1, len(samples) + 1):
        subsets = list(combinations(samples, k))
        share = sum(1 for s in subsets if any(s)) / len(subsets)
        assert pass_at_k(len(samples), sum(samples), k) == pytest.approx(share)


def test_table_per_task_and_overall() -> None:
    table = pass_at_k_table({"a": (4, 1), "b": (4, 4), "c": (4, 0), "d": (2, 1)}, 4)
    by_task = {t.task_id: t for t in table.tasks}
    assert by_task["a"].pass_at == {1: 0.25, 2: 0.5, 3: 0.75, 4: 1.0}
    assert set(by_task["d"].pass_at) == {1, 2}  # a task with 2 samples has no pass@3
    overall = {o.k: o for o in table.overall}
    assert overall[1].mean == pytest.approx((0.25 + 1 + 0 + 0.5) / 4)
    assert overall[3].tasks == 3 and overall[3].mean == pytest.approx((0.75 + 1 + 0) / 3)
    for o in table.overall:
        assert o.low <= o.mean <= o.high


def test_bootstrap_interval_is_deterministic_and_brackets_the_mean() -> None:
    values = [0.0, 0.25, 1.0, 1.0, 0.5, 0.0, 0.75, 1.0]
    low, high = bootstrap_interval(values)
    assert (low, high) == bootstrap_interval(values)
    assert low < math.fsum(values) / len(values) < high
    assert 0.0 <= low and high <= 1.0
    assert bootstrap_interval([0.5]) == (0.5, 0.5)
