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


# -- several seeds: the same task scored once per seed ----------------------------------------------------
#
# With S seeds, a stage's greedy outcomes are tasks × seeds, but the outcomes of one task under different seeds
# are not independent (a hard task is hard under every seed). The tasks are the independent units: the rates'
# intervals and the paired test below treat each task as one cluster of its seeds' outcomes.


@dataclass(frozen=True)
class ClusteredRate:
    """Pooled successes over tasks × seeds, with a Wilson 95% interval at the effective sample size.

    The design effect is the ratio of the cluster-robust variance of the pooled rate (over tasks) to the
    binomial one; the interval is Wilson's at n / design effect. Wilson, not a bootstrap, because it stays
    honest at 0/n and n/n and is a closed form; the design effect is kept in [1, n / tasks]: never narrower
    than independent episodes, never wider than one outcome per task. When every outcome agrees (0/n, n/n)
    the data say nothing about the correlation and the widest (one outcome per task) is taken.
    """

    successes: int
    total: int
    tasks: int
    design_effect: float

    @property
    def value(self) -> float:
        return self.successes / self.total if self.total else float("nan")

    @property
    def effective_total(self) -> float:
        return self.total / self.design_effect if self.total else 0.0

    @property
    def interval(self) -> tuple[float, float]:
        if not self.total:
            return (float("nan"), float("nan"))
        return wilson_interval(self.value * self.effective_total, self.effective_total)


def clustered_rate(outcomes: dict[str, list[bool]]) -> ClusteredRate:
    """task id → its outcomes (one per seed): the pooled rate with its cluster-aware interval."""
    counts = [(sum(values), len(values)) for values in outcomes.values() if values]
    total = sum(n for _, n in counts)
    successes = sum(y for y, _ in counts)
    tasks = len(counts)
    if not total:
        return ClusteredRate(0, 0, 0, 1.0)
    widest = total / tasks
    p = successes / total
    if tasks < 2 or p in (0.0, 1.0):
        return ClusteredRate(successes, total, tasks, widest)
    robust = tasks / (tasks - 1) * sum((y - p * n) ** 2 for y, n in counts) / total**2
    binomial = p * (1 - p) / total
    return ClusteredRate(successes, total, tasks, min(max(robust / binomial, 1.0), widest))


@dataclass(frozen=True)
class PairedOutcome:
    """One pair: a task under one seed, scored by stage A and by stage B."""

    task: str
    seed: str
    a: bool
    b: bool


@dataclass(frozen=True)
class StratifiedComparison:
    """B minus A over pairs (task, seed): effect, its cluster-robust interval, and the exact p-value."""

    pairs: int
    tasks: int
    won: int  # pairs B passed and A failed
    lost: int
    difference: float
    interval: tuple[float, float]
    p_value: float
    design_effect: float  # of the difference: its cluster-robust variance over the one of independent pairs
    by_seed: dict[str, tuple[int, int, int]]  # seed → (pairs, won, lost)
    test: str = "exact sign-flip test over tasks, pairs within seed"

    @property
    def discordance(self) -> float:
        """Share of pairs whose outcomes differ: what the power of a paired test hangs on."""
        return (self.won + self.lost) / self.pairs if self.pairs else float("nan")


def sign_flip_p_value(differences: list[int]) -> float:
    """Exact two-sided p of the sum of per-task differences under H0: each task's difference is as likely
    negated (the stage labels of a task exchangeable), P(|Σ ε_i d_i| ≥ |Σ d_i|) over all 2^m sign vectors.
    With one pair per task (d_i in -1, 0, 1) this is the exact McNemar test."""
    nonzero = [abs(d) for d in differences if d]
    observed = abs(sum(differences))
    if not nonzero:
        return 1.0
    counts: dict[int, int] = {0: 1}  # sum → number of sign vectors reaching it (exact integers)
    for d in nonzero:
        step: dict[int, int] = {}
        for total, count in counts.items():
            step[total + d] = step.get(total + d, 0) + count
            step[total - d] = step.get(total - d, 0) + count
        counts = step
    extreme = sum(count for total, count in counts.items() if abs(total) >= observed)
    return min(1.0, extreme / 2 ** len(nonzero))


def stratified_paired_test(pairs: list[PairedOutcome], confidence: float = 0.95) -> StratifiedComparison:
    """Stages A and B on the same tasks under several seeds; a pair is one task under one seed.

    Pairs are formed within a seed (the stratum), so a seed that trained better or worse at every stage does
    not enter the difference. A task's pairs under the different seeds share the task, so they are one
    cluster: its difference d_i = Σ_seeds (B − A). The test is exact: the sum of d_i against its distribution
    when each task's sign is flipped at random (it is McNemar's exact test with one seed). The effect is the
    mean paired difference with a cluster-robust interval (Student's t over tasks). The inference is over
    tasks given these seeds' runs; the per-seed effects are kept so a seed-dependent effect shows.
    """
    if not pairs:
        raise ValueError("no paired outcomes")
    by_task: dict[str, list[int]] = {}
    by_seed: dict[str, tuple[int, int, int]] = {}
    for pair in pairs:
        by_task.setdefault(pair.task, []).append(int(pair.b) - int(pair.a))
        n, won, lost = by_seed.get(pair.seed, (0, 0, 0))
        by_seed[pair.seed] = (n + 1, won + (pair.b and not pair.a), lost + (pair.a and not pair.b))
    total = len(pairs)
    won = sum(w for _, w, _ in by_seed.values())
    lost = sum(x for _, _, x in by_seed.values())
    difference = (won - lost) / total
    tasks = len(by_task)
    sums = [(sum(values), len(values)) for values in by_task.values()]
    independent = ((won + lost) / total - difference**2) / total
    if tasks > 1:
        robust = tasks / (tasks - 1) * sum((d - difference * n) ** 2 for d, n in sums) / total**2
        half = float(student_t.ppf(0.5 + confidence / 2, tasks - 1)) * math.sqrt(robust)
        design_effect = robust / independent if independent > 0 else 1.0
    else:
        half, design_effect = float("nan"), 1.0
    return StratifiedComparison(
        pairs=total, tasks=tasks, won=won, lost=lost, difference=difference,
        interval=(float("nan"), float("nan")) if math.isnan(half) else (max(-1.0, difference - half),
                                                                        min(1.0, difference + half)),
        p_value=sign_flip_p_value([d for d, _ in sums]), design_effect=design_effect,
        by_seed=dict(sorted(by_seed.items())))
