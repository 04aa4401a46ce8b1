"""pass@k, pass^k, Wilson intervals and the seed report's significance numbers."""

from __future__ import annotations

import itertools
import math

import pytest
from scipy.stats import binomtest

from toolgym.eval.passk import mean_over_tasks, pass_at_k, pass_hat_k
from toolgym.eval.stats import Rate, mcnemar_test, two_proportion_test, wilson_interval


def _brute(n: int, c: int, k: int, all_must_pass: bool) -> float:
    outcomes = [True] * c + [False] * (n - c)
    subsets = list(itertools.combinations(range(n), k))
    hits = 0
    for subset in subsets:
        picked = [outcomes[i] for i in subset]
        hits += all(picked) if all_must_pass else any(picked)
    return hits / len(subsets)


@pytest.mark.parametrize("n", range(1, 9))
def test_pass_at_k_and_pass_hat_k_match_brute_force(n: int) -> None:
    for c in range(n + 1):
        for k in range(1, n + 1):
            assert pass_at_k(n, c, k) == pytest.approx(_brute(n, c, k, False))
            assert pass_hat_k(n, c, k) == pytest.approx(_brute(n, c, k, True))


def test_pass_at_k_needs_enough_samples() -> None:
    with pytest.raises(ValueError, match="at least 4 samples"):
        pass_at_k(3, 1, 4)


def test_mean_over_tasks() -> None:
    assert mean_over_tasks([(4, 0), (4, 4)], 1) == pytest.approx(0.5)
    assert mean_over_tasks([(4, 2), (4, 2)], 4, "pass^k") == 0.0


@pytest.mark.parametrize("successes,total", [(0, 10), (10, 10), (19, 180), (24, 180), (1, 3), (57, 100)])
def test_wilson_matches_scipy(successes: int, total: int) -> None:
    expected = binomtest(successes, total).proportion_ci(confidence_level=0.95, method="wilson")
    low, high = wilson_interval(successes, total)
    assert low == pytest.approx(expected.low, abs=1e-9)
    assert high == pytest.approx(expected.high, abs=1e-9)


def test_seed_report_two_proportion_numbers() -> None:
    """24/180 vs 19/180: p ≈ 0.42, 95% CI about [-3.92, +9.47] pp (the seed's report)."""
    result = two_proportion_test(Rate(19, 180), Rate(24, 180))
    assert result.p_value == pytest.approx(0.42, abs=0.005)
    assert 100 * result.interval[0] == pytest.approx(-3.92, abs=0.01)
    assert 100 * result.interval[1] == pytest.approx(9.47, abs=0.01)
    assert 100 * result.difference == pytest.approx(2.78, abs=0.01)
    assert "24/180 vs 19/180" in str(result)


def test_mcnemar_counts_only_discordant_pairs() -> None:
    a = [True, True, False, False, False, False, False, False]
    b = [True, False, True, True, True, True, True, False]
    result = mcnemar_test(a, b)
    assert result.p_value == pytest.approx(binomtest(5, 6, 0.5).pvalue)
    assert result.difference == pytest.approx(4 / 8)
    assert mcnemar_test(a, a).p_value == 1.0


def test_rate_prints_numerator_and_denominator() -> None:
    text = str(Rate(24, 180))
    assert text.startswith("24/180 (13.3%")
    assert math.isnan(Rate(0, 0).value)
