"""The power of a paired comparison of two stages: how many task × seed pairs it needs, what a design detects.

Paired binary outcomes (McNemar's test), Connor's closed form (Biometrics 43, 1987): with discordance ψ (the
share of pairs whose outcomes differ) and difference δ = P(only B passes) − P(only A passes), the pairs needed
at two-sided level α and power 1 − β are

    n = (z_{1−α/2} √ψ + z_{1−β} √(ψ − δ²))² / δ²

Pairs that share a task (the same task under several seeds) are not independent: n is multiplied by the design
effect, 1 + (seeds − 1) ρ with ρ the within-task correlation of the paired differences (1: independent pairs;
the seeds report measures it). ψ cannot be below |δ|: a difference of δ needs at least that share of pairs to
differ.

    python -m toolgym.eval.power --mcnemar 3:0.38 --mcnemar 6:0.21 --over 71 --tasks 240 --seeds 3
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence

from scipy.optimize import brentq
from scipy.stats import binomtest, norm


def _check(difference: float, discordance: float) -> None:
    if not 0 < abs(difference) <= discordance <= 1 or discordance - difference**2 <= 0:
        raise ValueError(f"a difference of {difference:g} needs a discordance in [{abs(difference):g}, 1) "
                         f"(got {discordance:g}): at least that share of pairs must differ")


def pairs_needed(difference: float, discordance: float, *, alpha: float = 0.05, power: float = 0.8,
                 design_effect: float = 1.0) -> int:
    """Pairs (tasks × seeds) for a two-sided paired test at level alpha to detect `difference` with `power`."""
    _check(difference, discordance)
    z_alpha, z_beta = norm.ppf(1 - alpha / 2), norm.ppf(power)
    n = (z_alpha * math.sqrt(discordance) + z_beta * math.sqrt(discordance - difference**2)) ** 2 / difference**2
    return math.ceil(n * design_effect - 1e-9)  # the float noise of an exact n must not add a pair


def paired_power(pairs: float, difference: float, discordance: float, *, alpha: float = 0.05,
                 design_effect: float = 1.0) -> float:
    """The power of that test with `pairs` pairs (the far tail, below 1e-6 for any useful design, left out)."""
    _check(difference, discordance)
    effective = pairs / design_effect
    z_alpha = norm.ppf(1 - alpha / 2)
    score = (abs(difference) * math.sqrt(effective) - z_alpha * math.sqrt(discordance))
    return float(norm.cdf(score / math.sqrt(discordance - difference**2)))


def detectable_difference(pairs: float, discordance: float, *, alpha: float = 0.05, power: float = 0.8,
                          design_effect: float = 1.0) -> float:
    """The smallest difference detected with `power` at this discordance; nan when even δ = ψ is not."""
    if not 0 < discordance < 1:
        return float("nan")

    def short(delta: float) -> float:
        return paired_power(pairs, delta, discordance, alpha=alpha, design_effect=design_effect) - power

    # Power rises with δ once it is over one half; start where it is one half (the z score is 0).
    low = norm.ppf(1 - alpha / 2) * math.sqrt(discordance * design_effect / pairs)
    if low >= discordance or short(discordance) < 0:
        return float("nan")
    return float(brentq(short, low, discordance, xtol=1e-9))


def discordant_pairs(net: int, p_value: float, pairs: int, digits: int = 2) -> tuple[int, int]:
    """(won, lost): the one split of discordant pairs whose exact McNemar p rounds to a quoted `p_value` (to
    `digits` significant digits, half up or half even) with `net` = won − lost among `pairs`; an error when none
    or several do."""
    if not 0 < p_value <= 1:
        raise ValueError(f"McNemar p = {p_value:g}: not in (0, 1]")
    half_unit = 0.5 * 10 ** (math.floor(math.log10(p_value)) - digits + 1)
    found = []
    for discordant in range(abs(net), pairs + 1, 2):
        won = (discordant + net) // 2
        p = binomtest(won, discordant, 0.5).pvalue if discordant else 1.0
        if abs(p - p_value) <= half_unit * (1 + 1e-9):
            found.append((won, discordant - won))
    if len(found) != 1:
        raise ValueError(f"net {net:+d} with McNemar p = {p_value:g} over {pairs} pairs: "
                         f"{len(found)} splits of discordant pairs fit ({found[:4]}), not one")
    return found[0]


def design_lines(tasks: int, seeds: int, discordance: float, difference: float, *, alpha: float = 0.05,
                 power: float = 0.8, design_effects: Sequence[float] = (1.0, 1.5)) -> list[str]:
    """What a study of `tasks` held-out tasks × `seeds` seeds can tell, in the lines the docs quote."""
    pairs = tasks * seeds
    lines = [f"design: {tasks} tasks × {seeds} seeds = {pairs} pairs; discordance {discordance:.3f}; "
             f"α = {alpha:g} two-sided, power {power:g}"]
    for effect in design_effects:
        needed = pairs_needed(difference, discordance, alpha=alpha, power=power, design_effect=effect)
        reached = paired_power(pairs, difference, discordance, alpha=alpha, design_effect=effect)
        smallest = detectable_difference(pairs, discordance, alpha=alpha, power=power, design_effect=effect)
        lines.append(f"design effect {effect:g}: {100 * difference:g} points needs {needed} pairs "
                     f"({math.ceil(needed / seeds)} tasks × {seeds} seeds); this design has power {reached:.3f} for "
                     f"{100 * difference:g} points and detects {100 * smallest:.1f} points with power {power:g}")
    needed = pairs_needed(difference, discordance, alpha=alpha, power=power)
    tolerated = pairs / needed
    if tolerated < 1:
        lines.append(f"power {power:g} for {100 * difference:g} points is out of reach even with independent pairs: "
                     f"{pairs} of the {needed} needed")
    else:
        lines.append(f"power {power:g} for {100 * difference:g} points holds up to a design effect of {tolerated:.2f}"
                     + (f" (within-task correlation ρ ≤ {(tolerated - 1) / (seeds - 1):.2f})" if seeds > 1 else ""))
    return lines


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m toolgym.eval.power", description=__doc__.split("\n")[0])
    parser.add_argument("--discordance", type=float, help="share of pairs whose outcomes differ")
    parser.add_argument("--mcnemar", action="append", default=[], metavar="NET:P",
                        help="a quoted comparison (net tasks won, McNemar p) to estimate the discordance from")
    parser.add_argument("--over", type=int, default=71, help="pairs of each --mcnemar comparison")
    parser.add_argument("--difference", type=float, default=5.0, help="difference to detect, points")
    parser.add_argument("--tasks", type=int, required=True, help="held-out tasks of the design")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--alpha", type=float, default=0.05)
    parser.add_argument("--power", type=float, default=0.8)
    parser.add_argument("--design-effect", type=float, action="append", help="repeatable (default: 1 and 1.5)")
    args = parser.parse_args(argv)
    discordance = args.discordance
    if args.mcnemar:
        discordant = 0
        for quoted in args.mcnemar:
            net, _, p = quoted.partition(":")
            digits = len(p.split("e")[0].replace(".", "").lstrip("0")) or 1  # as quoted: 0.0005 has one
            try:
                won, lost = discordant_pairs(int(net), float(p), args.over, digits)
            except ValueError as exc:
                parser.error(f"--mcnemar {quoted}: {exc}")
            print(f"net {int(net):+d}, p = {float(p):g} over {args.over} pairs: {won} won, {lost} lost")
            discordant += won + lost
        discordance = discordant / (args.over * len(args.mcnemar))
        print(f"discordance: {discordant}/{args.over * len(args.mcnemar)} = {discordance:.3f}")
    if discordance is None:
        parser.error("give --discordance or --mcnemar")
    for line in design_lines(args.tasks, args.seeds, discordance, args.difference / 100, alpha=args.alpha,
                             power=args.power, design_effects=args.design_effect or (1.0, 1.5)):
        print(line)


if __name__ == "__main__":
    main()
