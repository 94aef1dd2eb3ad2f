#!/usr/bin/env python3
"""How much does one agent's bidding move the others' revenue? (evidence for learner/README.md)

From a base table, moves one agent's row at a time and prints every agent's test-day revenue
and COST, then the largest change of another agent's revenue. The base is a constant a = BASE
for every agent and cluster (rows moved to -0.75, -0.55, -0.45, -0.3), or an action table file
(schemas/action-table-v1.md, e.g. a trained method's action_table.json: where its policy ends
up; rows moved by -0.2, -0.1, +0.1, +0.2).
Usage: scripts/coupling_check.py [build/release/rtb] [BASE | table.json] [simulator config]
"""
import json, os, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sim_tables import Simulator

sim = Simulator(sys.argv[1] if len(sys.argv) > 1 else "build/release/rtb",
                sys.argv[3] if len(sys.argv) > 3 else None)
arg = sys.argv[2] if len(sys.argv) > 2 else "-0.65"
if os.path.isfile(arg):
    base = json.load(open(arg))["actions"]
    moves = [lambda row, d=d: [max(-1.0, min(1.0, x + d)) for x in row] for d in (-0.2, -0.1, 0.1, 0.2)]
    names = ["-0.20", "-0.10", "+0.10", "+0.20"]
else:
    base = [[float(arg)] * 3 for _ in range(3)]
    moves = [lambda row, v=v: [v] * len(row) for v in (-0.75, -0.55, -0.45, -0.3)]
    names = ["%+.2f" % v for v in (-0.75, -0.55, -0.45, -0.3)]
n = len(base)

ref, ref_cost = sim.play(base)
print(f"base: revenue {[round(x) for x in ref]} COST {[round(100*c, 1) for c in ref_cost]}%")
worst = 0.0
for i in range(n):
    for move, name in zip(moves, names):
        tab = [list(r) for r in base]
        tab[i] = move(base[i])
        rev, cost = sim.play(tab)
        others = [abs(rev[o] - ref[o]) / ref[o] for o in range(n) if o != i]
        worst = max(worst, *others)
        print(f"agent {i+1} row {name}: revenue {[round(x) for x in rev]} "
              f"COST {[round(100*c, 1) for c in cost]}%")
print(f"largest change of another agent's revenue: {100*worst:.1f}%")
