#!/usr/bin/env python3
"""How much does one agent's bidding move the others' revenue? (evidence for learner/README.md)

From a table of a = BASE for every agent and cluster, moves one agent's row at a time and
prints every agent's test-day revenue and COST, then the largest change of another agent's
revenue. Usage: scripts/coupling_check.py [build/release/rtb] [base] [simulator config]
"""
import os, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sim_tables import Simulator

sim = Simulator(sys.argv[1] if len(sys.argv) > 1 else "build/release/rtb",
                sys.argv[3] if len(sys.argv) > 3 else None)
base = float(sys.argv[2]) if len(sys.argv) > 2 else -0.65

ref, _ = sim.play([[base] * 3 for _ in range(3)])
worst = 0.0
for i in range(3):
    for v in (-0.75, -0.55, -0.45, -0.3):
        tab = [[base] * 3 for _ in range(3)]
        tab[i] = [v] * 3
        rev, cost = sim.play(tab)
        others = [abs(rev[o] - ref[o]) / ref[o] for o in range(3) if o != i]
        worst = max(worst, *others)
        print(f"agent {i+1} row {v:+.2f}: revenue {[round(x) for x in rev]} "
              f"COST {[round(100*c, 1) for c in cost]}%")
print(f"largest change of another agent's revenue: {100*worst:.1f}%")
