#!/usr/bin/env python3
"""How much does one agent's bidding move the others' revenue? (evidence for learner/README.md)

From a table of a = BASE for every agent and cluster, moves one agent's row at a time and
prints every agent's test-day revenue and COST, then the largest change of another agent's
revenue. Usage: scripts/coupling_check.py [build/release/rtb] [base]
"""
import json, os, subprocess, sys, tempfile

rtb = sys.argv[1] if len(sys.argv) > 1 else "build/release/rtb"
base = float(sys.argv[2]) if len(sys.argv) > 2 else -0.65
tmp = tempfile.mkdtemp()


def run(tab):
    path = os.path.join(tmp, "t.json")
    json.dump({"format": "rtb.action_table", "schema_version": 1, "actions": tab}, open(path, "w"))
    subprocess.run([rtb, "simulate", "--policy", path, "--out", tmp, "--quiet"], check=True,
                   stdout=subprocess.DEVNULL)
    r = json.load(open(os.path.join(tmp, "report.json")))
    return [a["revenue"] for a in r["agents"]], [a["cost_over_budget"] for a in r["agents"]]


ref, _ = run([[base] * 3 for _ in range(3)])
worst = 0.0
for i in range(3):
    for v in (-0.75, -0.55, -0.45, -0.3):
        tab = [[base] * 3 for _ in range(3)]
        tab[i] = [v] * 3
        rev, cost = run(tab)
        others = [abs(rev[o] - ref[o]) / ref[o] for o in range(3) if o != i]
        worst = max(worst, *others)
        print(f"agent {i+1} row {v:+.2f}: revenue {[round(x) for x in rev]} "
              f"COST {[round(100*c, 1) for c in cost]}%")
print(f"largest change of another agent's revenue: {100*worst:.1f}%")
