"""The power calculation of a paired binary comparison, against Connor's closed form worked by hand."""

from __future__ import annotations

import math

import pytest
from scipy.stats import binomtest, norm

from toolgym.eval.power import (
    design_lines,
    detectable_difference,
    discordant_pairs,
    main,
    paired_power,
    pairs_needed,
)


def test_pairs_needed_is_connors_closed_form() -> None:
    # ψ = 0.2, δ = 0.05, α = 0.05, power 0.8: z = 1.959964, z_β = 0.841621;
    # (1.959964 · √0.2 + 0.841621 · √0.1975)² / 0.0025 = (0.876522 + 0.374027)² / 0.0025 = 625.5 → 626
    z, z_beta = norm.ppf(0.975), norm.ppf(0.8)
    exact = (z * math.sqrt(0.2) + z_beta * math.sqrt(0.2 - 0.05**2)) ** 2 / 0.05**2
    assert exact == pytest.approx(625.5, abs=0.1)
    assert pairs_needed(0.05, 0.2) == math.ceil(exact) == 626
    assert pairs_needed(-0.05, 0.2) == 626  # two-sided: the sign does not matter
    assert pairs_needed(0.05, 0.2, design_effect=1.5) == math.ceil(1.5 * exact) == 939
    # a smaller discordance needs fewer pairs for the same difference
    assert pairs_needed(0.05, 0.1) < pairs_needed(0.05, 0.2)


def test_power_and_detectable_difference_invert_the_sample_size() -> None:
    needed = pairs_needed(0.05, 0.148)
    assert paired_power(needed, 0.05, 0.148) >= 0.8 > paired_power(needed - 1, 0.05, 0.148)
    # by hand at 720 pairs: (0.05 · √720 − 1.959964 · √0.148) / √(0.148 − 0.0025) = 1.5400 → Φ = 0.9382
    score = (0.05 * math.sqrt(720) - norm.ppf(0.975) * math.sqrt(0.148)) / math.sqrt(0.148 - 0.0025)
    assert paired_power(720, 0.05, 0.148) == pytest.approx(norm.cdf(score), abs=1e-12) == pytest.approx(0.938, abs=5e-4)
    smallest = detectable_difference(720, 0.148)
    assert paired_power(720, smallest, 0.148) == pytest.approx(0.8, abs=1e-6)
    assert 0.03 < smallest < 0.05
    # a design effect of 1.5 is 720 pairs counting as 480
    assert paired_power(720, 0.05, 0.148, design_effect=1.5) == pytest.approx(paired_power(480, 0.05, 0.148), abs=1e-12)
    assert math.isnan(detectable_difference(10, 0.148))  # not even δ = ψ is found with power 0.8 in 10 pairs


def test_a_difference_larger_than_the_discordance_is_refused() -> None:
    with pytest.raises(ValueError, match=r"needs a discordance in \[0\.1, 1\)"):
        pairs_needed(0.1, 0.05)
    with pytest.raises(ValueError, match="discordance"):
        paired_power(100, 0.0, 0.2)


def test_discordant_pairs_from_a_quoted_net_change_and_mcnemar_p() -> None:
    # the quickstart's RFT → GRPO: +3 of 71 at p = 0.38 (seed 0), +6 at p = 0.21 (seed 1)
    assert discordant_pairs(3, 0.38, 71) == (4, 1) and binomtest(4, 5).pvalue == pytest.approx(0.375, abs=1e-12)
    assert discordant_pairs(6, 0.21, 71) == (11, 5)
    assert discordant_pairs(2, 0.63, 71) == (3, 1)  # 0.625, quoted rounded half up
    assert discordant_pairs(12, 0.0005, 71, digits=1) == (12, 0)
    with pytest.raises(ValueError, match="splits of discordant pairs fit"):
        discordant_pairs(3, 0.5, 71)  # no split gives 0.50


def test_the_command_prints_the_study_design(capsys: pytest.CaptureFixture[str]) -> None:
    main(["--mcnemar", "3:0.38", "--mcnemar", "6:0.21", "--over", "71", "--tasks", "240", "--seeds", "3"])
    out = capsys.readouterr().out
    assert "discordance: 21/142 = 0.148" in out
    assert f"needs {pairs_needed(0.05, 21 / 142)} pairs" in out
    assert out.splitlines()[-1] == design_lines(240, 3, 21 / 142, 0.05)[-1]
    assert "power 0.8 for 5 points holds up to a design effect of 1.56 (within-task correlation ρ ≤ 0.28)" in out
    # 720 / 462 = 1.558; (1.558 − 1) / 2 = 0.279
    assert design_lines(71, 1, 21 / 142, 0.05)[-1] == (
        "power 0.8 for 5 points is out of reach even with independent pairs: 71 of the 462 needed")
