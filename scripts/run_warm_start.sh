#!/usr/bin/env bash
# A warm start on a hand-written market: a day of the market logged, a world fitted to its events,
# agents pre-trained in that world, then the live A/B test with the learner starting from them.
#
#   1. scripts/run_market.sh MARKET 1 OUT/logged (DUMP=1): one day played, the learner cold
#      (manual bids, then within +-0.2 of them), its events copied to OUT/logged/events.jsonl;
#   2. rtb fit: the world fitted to those events and its check (manual bids replayed on it against
#      the log), and the cluster map with the fitted history;
#   3. rtb train --world: DCMAB pre-trained in the fitted world, one seed, for the learned arm;
#   4. scripts/run_market.sh MARKET DAYS OUT/live with INIT (that seed's best model) and CLUSTERS.
#
#   scripts/run_warm_start.sh [MARKET_DIR] [DAYS] [OUT]
#   defaults: configs/markets/metro, 4, out/markets/<name>-warm; RTB as run_market.sh's.
# Writes OUT/fit/{world.json,clusters.json,check.txt}, OUT/train/ (the pre-training report),
# OUT/live/ab/report.{json,md,html} (the A/B report of the warm-started days) and
# OUT/live/day0/report.* (the first live day's alone, with its own interval).
set -euo pipefail
cd "$(dirname "$0")/.."
M=${1:-configs/markets/metro}
DAYS=${2:-4}
NAME=$(basename "$M")
OUT=${3:-out/markets/$NAME-warm}
RTB=${RTB:-build/release/rtb}
rm -rf "$OUT"
mkdir -p "$OUT/fit"
echo "run_warm_start: 1/4 a logged day (scripts/run_market.sh $M 1)"
DUMP=1 scripts/run_market.sh "$M" 1 "$OUT/logged" > "$OUT/logged.txt"
echo "run_warm_start: 2/4 rtb fit"
"$RTB" fit --events "$OUT/logged/events.jsonl" --bidder-config "$OUT/logged/bidder.yaml" \
  --out "$OUT/fit/world.json" --clusters-out "$OUT/fit/clusters.json" | tee "$OUT/fit/check.txt"
echo "run_warm_start: 3/4 rtb train --world (dcmab, one seed)"
"$RTB" train --world "$OUT/fit/world.json" --algo dcmab --seeds 1 --out "$OUT/train" --quiet \
  2> "$OUT/train.log"
grep -A4 "^| method | agent 1" "$OUT/train/report.md" | head -4
echo "run_warm_start: 4/4 the live A/B test, warm-started ($DAYS days)"
DUMP=1 INIT="$OUT/train/dcmab/seed0/best" CLUSTERS="$OUT/fit/clusters.json" \
  scripts/run_market.sh "$M" "$DAYS" "$OUT/live" | tee "$OUT/live.txt" | grep -v '^{"day"'
# The first live day alone: its events (by the auctions' simulated clock), its own report.
python3 - "$OUT/live/events.jsonl" "$OUT/live/day0.jsonl" <<'PY'
import json, sys
with open(sys.argv[2], "w") as out:
    for line in open(sys.argv[1]):
        if json.loads(line).get("sim_ms", 0) < 86_400_000:
            out.write(line)
PY
"$RTB" report --events "$OUT/live/day0.jsonl" --bidder-config "$OUT/live/bidder.yaml" \
  --bucket-minutes 60 --out "$OUT/live/day0" | grep "revenue per share" | sed "s/^/day 0 alone: /"
python3 - "$OUT/live/exchange.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    if not line.startswith('{"day"'):
        continue
    d = json.loads(line)
    a = d["arms"]
    print("day %d: learned / manual revenue %.3fx, spend %.3fx (exchange's accounting, equal shares)"
          % (d["day"], a["learned"]["revenue"] / a["manual"]["revenue"],
             a["learned"]["cost"] / a["manual"]["cost"]))
PY
