#!/usr/bin/env python3
"""The best constant action table on the simulator's default day (evidence for learner/README.md).

A learned policy is compared with manual bids; this script gives the other end of the scale:
the action table a[i][j] (one constant action per agent and cluster, the whole day) with the
most total revenue whose every agent spends at least --min-cost of its budget, found by
coordinate search (each entry moved by +-step while the score improves, then the step halved,
from a table of --start everywhere). Each candidate is one `rtb simulate --policy` run.

  --day test  searches on the test day itself: an oracle, a ceiling no learner can be held to
              (it never sees the test day), for "how far below the best table is DCMAB?".
  --day train searches on the training day and then plays the table found on the test day:
              what tuning a static table on past data would give.

Usage: scripts/static_table_search.py [--rtb build/release/rtb] [--day test|train]
                                      [--start -0.65] [--min-cost 0.99] [--min-step 0.025]
Prints each improvement, then the table found and its test-day revenue, COST per agent and
ratio to manual bids. Deterministic: same world, same tables, same answer.
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sim_tables import Simulator

p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
p.add_argument("--rtb", default="build/release/rtb")
p.add_argument("--config", default="configs/simulator/default.yaml")
p.add_argument("--day", choices=["test", "train"], default="test")
p.add_argument("--start", type=float, default=-0.65)
p.add_argument("--min-cost", type=float, default=0.99)
p.add_argument("--min-step", type=float, default=0.025)
args = p.parse_args()
sim = Simulator(args.rtb, args.config)
cache = {}


def score(tab):
    """Total revenue, minus a penalty that no revenue gain can outweigh per point of COST short."""
    key = json.dumps(tab)
    if key not in cache:
        rev, cost = sim.play(tab, args.day)
        cache[key] = sum(rev) - 1e6 * sum(max(0.0, args.min_cost - c) for c in cost)
    return cache[key]


manual_rev, _ = sim.run("manual", "test")
n = len(manual_rev)
tab = [[args.start] * n for _ in range(n)]  # agents x clusters (3 x 3 on the default world)
best = score(tab)
step = 0.2
while step >= args.min_step - 1e-9:
    improved = True
    while improved:
        improved = False
        for i in range(len(tab)):
            for j in range(len(tab[i])):
                for d in (-step, step):
                    t = [row[:] for row in tab]
                    t[i][j] = max(-1.0, min(1.0, round(t[i][j] + d, 4)))
                    s = score(t)
                    if s > best:
                        best, tab, improved = s, t, True
                        print(f"step {step:g}: {tab} score {s:,.0f}", flush=True)
    step /= 2
rev, cost = sim.play(tab, "test")
print(f"table found on the {args.day} day (COST >= {args.min_cost:g}): {tab}")
print(f"on the test day: revenue {[round(x) for x in rev]} total {sum(rev):,.0f} = "
      f"{sum(rev) / sum(manual_rev):.3f}x manual ({sum(manual_rev):,.0f}); "
      f"COST {[round(100 * c, 1) for c in cost]}%; {len(cache)} tables played")
