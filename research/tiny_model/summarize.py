"""Markdown tables from run logs: per-skill held-out accuracy over CPU-minutes; SFT success over CPU-s.

python research/tiny_model/summarize.py pretrain main1 [--first]
python research/tiny_model/summarize.py sft rand1 base1
"""
import json, sys
from pathlib import Path

RUNS = Path(__file__).resolve().parent / "runs"
SKILLS = ["copy_entity", "copy_number", "copy_date", "copy_enum", "copy_id", "copy_context", "copy_from_result",
          "copy_from_context", "select_extreme", "select_filter", "select_extreme_answer", "select_filter_answer",
          "date_relative", "answer_quote", "answer_field", "answer_list", "count", "refuse", "turn_start"]


def pretrain(name: str, key: str = "exact") -> None:
    rows = [json.loads(l) for l in (RUNS / f"{name}.jsonl").open()]
    evals = [r for r in rows if "eval_step" in r]
    present = [s for s in SKILLS if s in evals[-1][key]]
    print(f"| step | CPU-min | loss | tok acc | " + " | ".join(present) + " |")
    print("|" + "---|" * (4 + len(present)))
    for e in evals:
        print(f"| {e['eval_step']} | {e['cpu_s']/60:.1f} | {e['loss']:.3f} | {e['token_accuracy']:.3f} | "
              + " | ".join(f"{e[key].get(s, float('nan')):.2f}" for s in present) + " |")
    print("n per skill:", {s: evals[-1]["counts"].get(s) for s in present})


def sft(names: list[str]) -> None:
    for name in names:
        rows = [json.loads(l) for l in (RUNS / f"sft_{name}.jsonl").open()]
        print(f"## {name}: {rows[0]['args']['model']} random_init={rows[0]['args']['random_init']} lr={rows[0]['args']['lr']}")
        for r in rows:
            if "eval_at_cpu_s" in r:
                print(f"- {r['eval_at_cpu_s']:.0f} CPU-s, step {r['step']}, {r['seen']} episodes: "
                      f"**{r['success']}/{r['n']}** (partial {r['partial']:.3f}) {r['per_family']}")


if __name__ == "__main__":
    if sys.argv[1] == "pretrain":
        pretrain(sys.argv[2], "first" if "--first" in sys.argv else "exact")
    else:
        sft(sys.argv[2:])
