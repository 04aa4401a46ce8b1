"""pass@k (any of k succeeds) and pass^k (all k succeed), unbiased estimators from n samples.

pass@k = 1 - C(n-c, k) / C(n, k)   (Chen et al. 2021)
pass^k = C(c, k) / C(n, k)         (tau-bench)
Both need n >= k; each is averaged over tasks.
"""

from __future__ import annotations

from math import comb


def pass_at_k(n: int, c: int, k: int) -> float:
    """Probability that at least one of k samples drawn without replacement from n succeeds."""
    _check(n, c, k)
    if n - c < k:
        return 1.0
    return 1.0 - comb(n - c, k) / comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Probability that all k samples drawn without replacement from n succeed."""
    _check(n, c, k)
    return comb(c, k) / comb(n, k)


def _check(n: int, c: int, k: int) -> None:
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    if n < k:
        raise ValueError(f"pass@{k} needs at least {k} samples per task, got n={n}")
    if not 0 <= c <= n:
        raise ValueError(f"successes c={c} must be within [0, n={n}]")


def mean_over_tasks(counts: list[tuple[int, int]], k: int, estimator: str = "pass@k") -> float:
    """Average an estimator over tasks given (n, c) per task."""
    if not counts:
        return float("nan")
    fn = pass_at_k if estimator == "pass@k" else pass_hat_k
    return sum(fn(n, c, k) for n, c in counts) / len(counts)
