"""summary.json: per stage (untrained, random_init, sft, rft, grpo) and held-out split, successes over scored
episodes, errored episodes, pass@k, and the stage-to-stage tests. Every stage is evaluated on the same
tasks, so comparisons are paired: greedy against greedy with McNemar's test (one outcome per task),
sampled against sampled with a Wilcoxon signed-rank test over tasks (samples of a task are correlated),
with the tasks won and lost by family. No two-proportion test is run on these correlated samples.

Errored episodes are counted and left out of every denominator. The headline rate of a stage is its
greedy pass@1 when the eval ran a greedy pass, else its sampled successes / scored episodes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from toolgym.eval.records import RunRecords, load_run
from toolgym.eval.stage_flips import flips_between, only_split
from toolgym.eval.stats import Comparison, Rate
from toolgym.eval.summary import EvalSummary, summarize
from toolgym.eval.traces import diff_runs

COMPARISONS = (("untrained", "sft"), ("random_init", "sft"), ("sft", "rft"), ("rft", "grpo"), ("sft", "grpo"), ("untrained", "grpo"))
SPLITS = ("heldout_tasks", "heldout_env")


def split_numbers(summary: EvalSummary, split: str) -> dict[str, Any] | None:
    group = summary.group(split)
    if group is None:
        return None
    total = group.total
    numbers: dict[str, Any] = {
        "tasks": total.tasks, "episodes": total.episodes, "errored": total.errored, "scored": total.scored,
        "successes": total.passes, "pass_rate": total.passes / total.scored if total.scored else None,
        "pass_at_k": {str(k): {"value": e.value if e.available else None, "tasks": e.tasks}
                      for k, e in total.pass_at.items()},
        "by_env": {row.label: {"successes": row.passes, "scored": row.scored, "errored": row.errored}
                   for row in group.rows},
    }
    if group.greedy is not None:
        greedy = group.greedy
        numbers["greedy"] = {"episodes": greedy.episodes, "errored": greedy.errored, "scored": greedy.scored,
                             "successes": greedy.passes,
                             "pass_rate": greedy.passes / greedy.scored if greedy.scored else None}
    return numbers


def headline(numbers: dict[str, Any]) -> Rate:
    source = numbers.get("greedy") or numbers
    return Rate(int(source["successes"]), int(source["scored"]))


def sampled(numbers: dict[str, Any]) -> Rate | None:
    """Sampled successes / scored episodes, when the eval ran sampled trials (not greedy-only)."""
    if numbers.get("greedy_only") or not numbers.get("scored"):
        return None
    return Rate(int(numbers["successes"]), int(numbers["scored"]))


def _rate_fields(a: Rate, b: Rate) -> dict[str, Any]:
    return {"from_rate": f"{a.successes}/{a.total}", "to_rate": f"{b.successes}/{b.total}",
            "difference_pp": round(100 * (b.value - a.value), 3)}


def _paired_fields(test: Comparison | None) -> dict[str, Any]:
    """The paired test's fields; without paired episodes there is no test (never an unpaired one)."""
    if test is None:
        return {"p_value": None, "test": "none: no paired episodes"}
    return {"p_value": test.p_value, "test": test.test, "paired_episodes": test.a.total,
            "paired_difference_pp": round(100 * test.difference, 3),
            "ci95_pp": [round(100 * max(-1.0, test.interval[0]), 3), round(100 * min(1.0, test.interval[1]), 3)]}


PairedKey = tuple[str, str, str, str]  # (from stage, to stage, split, measure)


def paired_tests(runs: dict[str, RunRecords]) -> dict[PairedKey, Comparison]:
    """Per comparison, split and measure (greedy, sampled): the paired test over the episodes both stages scored."""
    found: dict[PairedKey, Comparison] = {}
    for before, after in COMPARISONS:
        if before not in runs or after not in runs:
            continue
        for split in SPLITS:
            a, b = only_split(runs[before], split), only_split(runs[after], split)
            for measure, records in (("greedy", (a.greedy, b.greedy)), ("sampled", (a.sampled, b.sampled))):
                if not (records[0] and records[1]):
                    continue
                test = diff_runs(a, b, greedy=measure == "greedy").paired_test
                if test is not None:
                    found[(before, after, split, measure)] = test
    return found


def load_stage_runs(eval_dirs: dict[str, Path]) -> dict[str, RunRecords]:
    """Each stage's eval episodes, read once for the results and the flips."""
    return {stage: load_run(folder, name=stage) for stage, folder in eval_dirs.items()}


def stage_results(runs: dict[str, RunRecords], ks: list[int]) -> dict[str, dict[str, Any]]:
    results: dict[str, dict[str, Any]] = {}
    for stage, run in runs.items():
        summary = summarize(run, ks)
        results[stage] = {split: n for split in SPLITS if (n := split_numbers(summary, split)) is not None}
        if not run.sampled:  # a greedy-only eval (trials 0): no sampled episodes to report beside it
            for numbers in results[stage].values():
                numbers["greedy_only"] = True
    return results


FlipKey = tuple[str, str, str]  # (from stage, to stage, split)


def task_flips(runs: dict[str, RunRecords]) -> dict[FlipKey, dict[str, Any]]:
    """Per comparison and split: tasks won and lost, by `env/family`, and McNemar's test on the paired
    episodes (the greedy passes when both evals ran one, as the headline does)."""
    found: dict[FlipKey, dict[str, Any]] = {}
    for before, after in COMPARISONS:
        if before not in runs or after not in runs:
            continue
        for split in SPLITS:
            item = flips_between(runs[before], runs[after], split)
            if item is None or item.paired_test is None:
                continue
            families = sorted(set(item.won) | set(item.lost))
            found[(before, after, split)] = {
                "tasks_won": sum(item.won.values()), "tasks_lost": sum(item.lost.values()),
                "by_family": {f: {"won": item.won[f], "lost": item.lost[f]} for f in families},
                "paired_p_value": item.paired_test.p_value, "paired_test": item.paired_test.test,
            }
    return found


def comparisons(results: dict[str, dict[str, Any]], flips: dict[FlipKey, dict[str, Any]] | None = None,
                paired: dict[PairedKey, Comparison] | None = None) -> list[dict[str, Any]]:
    """Each comparison on the headline measure (and on the sampled trials beside a greedy headline), with
    its paired test where both stages' episodes are given."""
    found = []
    for before, after in COMPARISONS:
        for split in SPLITS:
            a, b = results.get(before, {}).get(split), results.get(after, {}).get(split)
            if a is None or b is None:
                continue
            rate_a, rate_b = headline(a), headline(b)
            if not rate_a.total or not rate_b.total:
                continue
            measure = "greedy" if "greedy" in a else "sampled"
            found.append({"from": before, "to": after, "split": split, "measure": measure,
                          **_rate_fields(rate_a, rate_b),
                          **_paired_fields((paired or {}).get((before, after, split, measure))),
                          **(flips or {}).get((before, after, split), {})})
            sampled_a, sampled_b = sampled(a), sampled(b)
            if measure == "greedy" and sampled_a is not None and sampled_b is not None:  # the trials beside it
                found.append({"from": before, "to": after, "split": split, "measure": "sampled",
                              **_rate_fields(sampled_a, sampled_b),
                              **_paired_fields((paired or {}).get((before, after, split, "sampled")))})
    return found


def _gain(verdict: dict[str, Any], name: str, a: dict[str, Any], b: dict[str, Any], gain_points: float,
          test: Comparison | None) -> None:
    """`name`_gain_points, its paired p-value and whether it meets the promised gain, on the headline rates."""
    rate_a, rate_b = headline(a), headline(b)
    if not (rate_a.total and rate_b.total):
        return
    gain = 100 * (rate_b.value - rate_a.value)
    verdict[f"{name}_gain_points"] = round(gain, 3)
    verdict[f"{name}_gain_paired_p_value"] = test.p_value if test is not None else None
    verdict[f"{name}_meets_gain"] = gain >= gain_points


def acceptance(results: dict[str, dict[str, Any]], split: str, sft_min: float, gain_points: float,
               flips: dict[FlipKey, dict[str, Any]] | None = None,
               paired: dict[PairedKey, Comparison] | None = None) -> dict[str, Any]:
    """The quickstart's promise, evaluated (reported, not enforced): SFT's rate, and each later stage's gain
    (RFT over SFT, GRPO over RFT and over SFT) with its paired test; with `flips`, GRPO's tasks won and lost."""
    paired = paired or {}
    sft, rft, grpo, untrained, control = (results.get(s, {}).get(split)
                                          for s in ("sft", "rft", "grpo", "untrained", "random_init"))
    verdict: dict[str, Any] = {"split": split, "sft_min_pass_rate": sft_min, "grpo_min_gain_points": gain_points}
    if untrained is not None:
        verdict["untrained"] = str(headline(untrained))
    if control is not None:  # the same SFT from random weights: what the pre-trained base adds
        verdict["random_init"] = str(headline(control))
    if sft is not None:
        rate = headline(sft)
        verdict["sft"] = str(rate)
        verdict["sft_meets_min"] = bool(rate.total and rate.value >= sft_min)
    if rft is not None:
        verdict["rft"] = str(headline(rft))
    if grpo is not None:
        verdict["grpo"] = str(headline(grpo))
    measure = "greedy" if sft is not None and "greedy" in sft else "sampled"
    for name, before, after, a, b in (("rft", "sft", "rft", sft, rft), ("grpo_over_rft", "rft", "grpo", rft, grpo),
                                      ("grpo", "sft", "grpo", sft, grpo)):
        if a is not None and b is not None:
            _gain(verdict, name, a, b, gain_points, paired.get((before, after, split, measure)))
    if sft is not None and grpo is not None:
        sampled_sft, sampled_grpo = sampled(sft), sampled(grpo)
        if sampled_sft is not None and sampled_grpo is not None and "greedy" in sft:  # what GRPO optimises
            verdict["sft_sampled"], verdict["grpo_sampled"] = str(sampled_sft), str(sampled_grpo)
            verdict["grpo_sampled_gain_points"] = round(100 * (sampled_grpo.value - sampled_sft.value), 3)
            test = paired.get(("sft", "grpo", split, "sampled"))
            verdict["grpo_sampled_gain_paired_p_value"] = test.p_value if test is not None else None
        flipped = (flips or {}).get(("sft", "grpo", split))
        if flipped is not None:
            verdict["grpo_tasks_won"], verdict["grpo_tasks_lost"] = flipped["tasks_won"], flipped["tasks_lost"]
    return verdict


def teacher_numbers(results: Path) -> dict[str, Any] | None:
    """The teacher's own pass rate and, for an imperfect teacher, its mistakes: what SFT imitated."""
    if not results.is_file():
        return None
    run = load_run(results.parent, name="teacher")
    scored = [r for r in run.all if not r.errored]
    mistakes: dict[str, dict[str, int]] = {}
    for record in scored:
        kind = (record.row.get("episode") or {}).get("teacher_mistake") or "none"
        entry = mistakes.setdefault(kind, {"episodes": 0, "successes": 0})
        entry["episodes"] += 1
        entry["successes"] += int(record.passed)
    successes = sum(r.passed for r in scored)
    return {"episodes": len(run.all), "scored": len(scored), "errored": len(run.all) - len(scored),
            "successes": successes, "pass_rate": successes / len(scored) if scored else None,
            "mistakes": dict(sorted(mistakes.items()))}


def write_if_changed(path: Path, data: dict[str, Any]) -> bool:
    """Write JSON only when its content changed (a re-run that did nothing leaves files, and mtimes, alone)."""
    text = json.dumps(data, indent=2, sort_keys=True, default=str, allow_nan=False) + "\n"
    if path.is_file() and path.read_text(encoding="utf-8") == text:
        return False
    temporary = path.with_suffix(path.suffix + ".tmp")
    temporary.write_text(text, encoding="utf-8")
    temporary.replace(path)
    return True
