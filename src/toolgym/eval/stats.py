"""Confidence intervals and significance tests for success rates.

A rate is always reported with its numerator and denominator; these functions say how much
it can be trusted (Wilson intervals) and whether two runs differ: a two-proportion z-test only for
independent samples; for the same tasks scored twice, McNemar on one outcome per task (greedy) and a
Wilcoxon signed-rank test on per-task success fractions (several samples per task, which are not
independent of each other).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from scipy.stats import binomtest, norm, wilcoxon
from scipy.stats import t as student_t


@dataclass(frozen=True)
class Rate:
    """successes / total, with a Wilson 95% interval; prints as '24/180 (13.3%, 95% CI 9.1–19.1%)'."""

    successes: int
    total: int

    @property
    def value(self) -> float:
        return self.successes / self.total if self.total else float("nan")

    @property
    def interval(self) -> tuple[float, float]:
        return wilson_interval(self.successes, self.total)

    def __str__(self) -> str:
        if not self.total:
            return f"{self.successes}/0 (n/a)"
        low, high = self.interval
        return f"{self.successes}/{self.total} ({100 * self.value:.1f}%, 95% CI {100 * low:.1f}–{100 * high:.1f}%)"


def wilson_interval(successes: int, total: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval: sane at 0/n and n/n, unlike the normal approximation."""
    if total <= 0:
        return (float("nan"), float("nan"))
    if not 0 <= successes <= total:
        raise ValueError(f"successes {successes} outside [0, {total}]")
    z = norm.ppf(0.5 + confidence / 2)
    p = successes / total
    denominator = 1 + z * z / total
    centre = (p + z * z / (2 * total)) / denominator
    half = z * math.sqrt(p * (1 - p) / total + z * z / (4 * total * total)) / denominator
    return (max(0.0, centre - half), min(1.0, centre + half))


@dataclass(frozen=True)
class Comparison:
    """B minus A: the difference of rates, its CI, and the test's p-value."""

    a: Rate
    b: Rate
    difference: float
    interval: tuple[float, float]
    p_value: float
    test: str

    def __str__(self) -> str:
        low, high = self.interval
        return (
            f"{self.b.successes}/{self.b.total} vs {self.a.successes}/{self.a.total}: "
            f"{100 * self.difference:+.2f} pp (95% CI {100 * low:+.2f} to {100 * high:+.2f} pp), "
            f"p = {self.p_value:.3g} ({self.test})"
        )


def two_proportion_test(a: Rate, b: Rate, confidence: float = 0.95) -> Comparison:
    """Two-sided z-test with pooled variance; Wald interval of the difference (unpooled)."""
    if not a.total or not b.total:
        raise ValueError("both rates need a non-zero denominator")
    p1, p2 = a.value, b.value
    pooled = (a.successes + b.successes) / (a.total + b.total)
    se_pooled = math.sqrt(pooled * (1 - pooled) * (1 / a.total + 1 / b.total))
    difference = p2 - p1
    p_value = 1.0 if se_pooled == 0 else 2 * norm.sf(abs(difference) / se_pooled)
    se = math.sqrt(p1 * (1 - p1) / a.total + p2 * (1 - p2) / b.total)
    z = norm.ppf(0.5 + confidence / 2)
    return Comparison(a, b, difference, (difference - z * se, difference + z * se), float(p_value), "two-proportion z-test")


def newcombe_interval(a: Rate, b: Rate, confidence: float = 0.95) -> tuple[float, float]:
    """Interval of b − a from the two Wilson intervals (Newcombe's hybrid score, method 10).

    Unlike the Wald interval it stays within [−1, 1] and is not zero-width at 0/n or n/n, so
    small before/after tables (0/6 → 6/6) get an honest interval.
    """
    if not a.total or not b.total:
        raise ValueError("both rates need a non-zero denominator")
    low_a, high_a = wilson_interval(a.successes, a.total, confidence)
    low_b, high_b = wilson_interval(b.successes, b.total, confidence)
    difference = b.value - a.value
    low = difference - math.sqrt((b.value - low_b) ** 2 + (high_a - a.value) ** 2)
    high = difference + math.sqrt((high_b - b.value) ** 2 + (a.value - low_a) ** 2)
    return (max(-1.0, low), min(1.0, high))


def mcnemar_test(a_passed: list[bool], b_passed: list[bool]) -> Comparison:
    """Paired test over the same tasks: exact binomial on the discordant pairs."""
    if len(a_passed) != len(b_passed):
        raise ValueError(f"paired results differ in length: {len(a_passed)} vs {len(b_passed)}")
    only_b = sum(1 for x, y in zip(a_passed, b_passed, strict=True) if y and not x)
    only_a = sum(1 for x, y in zip(a_passed, b_passed, strict=True) if x and not y)
    discordant = only_a + only_b
    p_value = 1.0 if discordant == 0 else binomtest(only_b, discordant, 0.5).pvalue
    n = len(a_passed)
    a = Rate(sum(a_passed), n)
    b = Rate(sum(b_passed), n)
    difference = (only_b - only_a) / n if n else 0.0
    # Interval of the paired difference (Wald on the paired proportions).
    if n:
        var = (only_a + only_b) / n - difference**2
        half = 1.96 * math.sqrt(max(var, 0.0) / n)
    else:
        half = float("nan")
    return Comparison(a, b, difference, (difference - half, difference + half), float(p_value),
                      f"McNemar exact ({only_b} only-B vs {only_a} only-A)")


def paired_task_test(a_fractions: list[float], b_fractions: list[float], a: Rate, b: Rate) -> Comparison:
    """Paired over tasks: each task's success fraction under A and under B (its samples averaged first,
    since samples of one task are correlated); Wilcoxon signed-rank on the non-zero differences.

    `a` and `b` are the episode rates shown beside it; the difference and its interval (Student's t)
    are of the mean per-task fraction.
    """
    if len(a_fractions) != len(b_fractions):
        raise ValueError(f"paired results differ in length: {len(a_fractions)} vs {len(b_fractions)}")
    differences = [y - x for x, y in zip(a_fractions, b_fractions, strict=True)]
    n = len(differences)
    mean = sum(differences) / n if n else 0.0
    nonzero = [d for d in differences if d != 0]
    p_value = float(wilcoxon(nonzero).pvalue) if nonzero else 1.0
    if n > 1:
        sd = math.sqrt(sum((d - mean) ** 2 for d in differences) / (n - 1))
        half = float(student_t.ppf(0.975, n - 1)) * sd / math.sqrt(n)
    else:
        half = float("nan")
    better = sum(1 for d in differences if d > 0)
    worse = sum(1 for d in differences if d < 0)
    return Comparison(a, b, mean, (mean - half, mean + half), p_value,
                      f"Wilcoxon signed-rank over {n} tasks ({better} better, {worse} worse)")
