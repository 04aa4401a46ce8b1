"""Per family: greedy passes and the sampled success p of each held-out task (sampled-success ceiling).

python research/tiny_model/p_table.py EVAL_DIR   (an eval folder with trial-1/ and greedy/ results)
"""
import collections
import json
import sys
from pathlib import Path

root = Path(sys.argv[1])
sampled: dict[str, list[float]] = collections.defaultdict(list)
greedy: dict[str, float] = {}
family: dict[str, str] = {}
for path in root.rglob("results.jsonl"):
    for line in path.open():
        row = json.loads(line)
        if row["status"] == "error":
            continue
        tid = row["task_id"]
        family[tid] = row["env"] + "/" + row["info"]["family"]
        (greedy.__setitem__(tid, row["reward"]) if "greedy" in str(path) else sampled[tid].append(row["reward"]))
rows = collections.defaultdict(lambda: collections.Counter())
for tid, fam in family.items():
    p = sum(sampled[tid]) / len(sampled[tid]) if sampled[tid] else float("nan")
    g = greedy.get(tid)
    c = rows[fam]
    c["n"] += 1
    c["greedy"] += int(g == 1.0)
    c["p0"] += int(p == 0)
    c["mid"] += int(0 < p < 1)
    c["p1"] += int(p == 1)
    c["fail_mid"] += int(g != 1.0 and 0 < p < 1)
    c["pass_mid"] += int(g == 1.0 and 0 < p < 1)
    c["psum"] += p
tot = collections.Counter()
print(f"{'family':40s} {'n':>3} {'greedy':>6} {'p=0':>4} {'mid':>4} {'p=1':>4} {'fail&mid':>8} {'pass&mid':>8} {'mean p':>6}")
for fam in sorted(rows):
    c = rows[fam]
    tot.update(c)
    print(f"{fam:40s} {c['n']:3d} {c['greedy']:6d} {c['p0']:4d} {c['mid']:4d} {c['p1']:4d} {c['fail_mid']:8d} {c['pass_mid']:8d} {c['psum']/c['n']:6.2f}")
print(f"{'total':40s} {tot['n']:3d} {tot['greedy']:6d} {tot['p0']:4d} {tot['mid']:4d} {tot['p1']:4d} {tot['fail_mid']:8d} {tot['pass_mid']:8d} {tot['psum']/max(tot['n'],1):6.2f}")
