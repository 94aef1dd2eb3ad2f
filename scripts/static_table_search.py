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
  --per-step  then searches one table per step (the day's T steps), from the constant table
              found: the best open-loop plan, which can move spend between the day's hours
              but not react to the day.

Usage: scripts/static_table_search.py [--rtb build/release/rtb] [--day test|train]
                                      [--start -0.65] [--min-cost 0.99] [--min-step 0.025]
                                      [--per-step] [--steps 3]
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
p.add_argument("--per-step", action="store_true")
p.add_argument("--steps", type=int, default=3, help="the world's steps per day (--per-step)")
args = p.parse_args()
sim = Simulator(args.rtb, args.config)
cache = {}


def play(tab, day):
    """tab: a[i][j], or (--per-step) a list of them, one per step."""
    return sim.play_steps(tab, day) if isinstance(tab[0][0], list) else sim.play(tab, day)


def score(tab):
    """Total revenue, minus a penalty that no revenue gain can outweigh per point of COST short."""
    key = json.dumps(tab)
    if key not in cache:
        rev, cost = play(tab, args.day)
        cache[key] = sum(rev) - 1e6 * sum(max(0.0, args.min_cost - c) for c in cost)
    return cache[key]


def search(tab, step):
    """Coordinate search over every entry of tab (nested lists of actions) from `step`."""
    best = score(tab)
    cells = []

    def walk(x, path):
        for k, v in enumerate(x):
            walk(v, path + [k]) if isinstance(v, list) else cells.append(path + [k])

    walk(tab, [])
    while step >= args.min_step - 1e-9:
        improved = True
        while improved:
            improved = False
            for cell in cells:
                for d in (-step, step):
                    t = json.loads(json.dumps(tab))
                    x = t
                    for k in cell[:-1]:
                        x = x[k]
                    x[cell[-1]] = max(-1.0, min(1.0, round(x[cell[-1]] + d, 4)))
                    s = score(t)
                    if s > best:
                        best, tab, improved = s, t, True
                        print(f"step {step:g}: {tab} score {s:,.0f}", flush=True)
        step /= 2
    return tab


manual_rev, _ = sim.run("manual", "test")
n = len(manual_rev)
tab = search([[args.start] * n for _ in range(n)], 0.2)  # agents x clusters (3 x 3 here)
if args.per_step:
    tab = search([json.loads(json.dumps(tab)) for _ in range(args.steps)], 0.1)
rev, cost = play(tab, "test")
kind = "tables, one per step" if args.per_step else "table"
print(f"{kind} found on the {args.day} day (COST >= {args.min_cost:g}): {tab}")
print(f"on the test day: revenue {[round(x) for x in rev]} total {sum(rev):,.0f} = "
      f"{sum(rev) / sum(manual_rev):.3f}x manual ({sum(manual_rev):,.0f}); "
      f"COST {[round(100 * c, 1) for c in cost]}%; {len(cache)} tables played")
