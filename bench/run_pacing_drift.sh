#!/usr/bin/env bash
# The learned pacing agent against RLB on drifting and on stationary synthetic campaigns, 3
# seeds each (a seed is a campaign of its own and the agent's training seed): per c0, the
# agent's expected clicks against RLB's on the held-out test log, per seed, with their mean,
# standard deviation and range. The agent is trained on the campaign summary and the training
# log alone (its last 20% of days held out to choose on); on a drifting campaign its base is
# RLB's program on the market by part of the day when that does better there.
# Usage: bench/run_pacing_drift.sh [EPISODES=400] [SEEDS="1 2 3"]; runs
# bench/run_pacing_compare.sh for each (world, seed); output out/pacing-compare[-drift]-SEED.
set -euo pipefail
cd "$(dirname "$0")/.."
EPISODES=${1:-400}
SEEDS=${2:-1 2 3}
C0S="0.03125 0.0625 0.125 0.25 0.5"
for drift in 1 0; do
  for seed in $SEEDS; do
    DRIFT=$drift bench/run_pacing_compare.sh "$EPISODES" "$C0S" "$seed" > /dev/null 2>&1
    # The seed-1 runs write to the unsuffixed folders: keep every seed's under its own name.
    if [ "$seed" = 1 ]; then
      src=out/pacing-compare; [ "$drift" = 0 ] || src=$src-drift
      rm -rf "$src-1" && mv "$src" "$src-1"
    fi
  done
done
python3 - "$SEEDS" $C0S <<'PY'
import json, statistics, sys
seeds, c0s = sys.argv[1].split(), sys.argv[2:]
for world, suffix in (("drifting", "-drift"), ("stationary", "")):
    print("%s campaigns: pacing vs RLB, expected clicks on the test log (%s seeds)" %
          (world, len(seeds)))
    print("%-8s %s %8s %7s %14s  %s" % ("c0", " ".join("%8s" % ("seed " + s) for s in seeds),
                                        "mean", "sd", "range", "ahead by more than sd"))
    for c0 in c0s:
        gains = []
        for s in seeds:
            ms = {m["name"]: m for m in json.load(open(
                "out/pacing-compare%s-%s/c0-%s.json" % (suffix, s, c0)))["methods"]}
            gains.append(100 * (ms["pacing"]["expected_clicks"] / ms["rlb"]["expected_clicks"] - 1))
        mean = statistics.mean(gains)
        sd = statistics.stdev(gains) if len(gains) > 1 else 0.0
        ok = min(gains) > 0 and mean > sd
        print("%-8s %s %+7.2f%% %6.2f%% [%+.2f, %+.2f]  %s" % (
            c0, " ".join("%+7.2f%%" % g for g in gains), mean, sd, min(gains), max(gains),
            "yes" if ok else ("no" if world == "drifting" else
                              ("at least RLB's" if min(gains) >= -1e-9 else "BELOW RLB"))))
PY
