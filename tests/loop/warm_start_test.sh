#!/usr/bin/env bash
# The warm start on the hand-written market, short: a logged day (scripts/run_market.sh, DUMP=1),
# `rtb fit` on its events (with the cluster map's fitted history), `rtb train --world` for two
# episodes, then a live day with `rtb learn --init` from that model and the fitted cluster map
# (INIT, CLUSTERS). Checks:
#   - the fit's check holds within 10% on the short day, the world and the map are written, the
#     map carries the fitted history;
#   - the pre-training ran in the fitted world (its report says so) and left a best model;
#   - the live learner started from that model (not cold), on the config's market, and closed
#     every step of the day; the report has both arms and says it was warm-started.
set -euo pipefail
RTB=$1
SRC=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cd "$SRC"
export RTB REQUESTS=${REQUESTS:-4000}
DUMP=1 scripts/run_market.sh configs/markets/metro 1 "$T/logged" > "$T/logged.log" 2>&1 ||
  { tail -30 "$T/logged.log"; exit 1; }
[[ -s $T/logged/events.jsonl ]] || { echo "no events dumped"; exit 1; }
"$RTB" fit --events "$T/logged/events.jsonl" --bidder-config "$T/logged/bidder.yaml" \
  --out "$T/fit/world.json" --clusters-out "$T/fit/clusters.json" --tolerance 0.1 | tee "$T/fit.txt"
grep -q "within (tolerance 10%)" "$T/fit.txt"
/usr/bin/python3 - "$T/fit/clusters.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
h = m["history"]
assert len(h["revenue"]) == 24 and len(h["revenue"][0]) == 4, h.keys()
assert sum(map(sum, h["revenue"])) > 0 and sum(map(sum, h["cost"])) > 0
assert len(m["users"]) > 1000
PY
"$RTB" train --world "$T/fit/world.json" --algo dcmab --seeds 1 --episodes 2 --out "$T/train" \
  --quiet > "$T/train.log" 2>&1 || { tail -20 "$T/train.log"; exit 1; }
grep -q "a world fitted to logged events" "$T/train/report.md"
[[ -d $T/train/dcmab/seed0/best ]] || { echo "no best model"; exit 1; }
INIT="$T/train/dcmab/seed0/best" CLUSTERS="$T/fit/clusters.json" \
  scripts/run_market.sh configs/markets/metro 1 "$T/live" > "$T/live.log" 2>&1 ||
  { tail -30 "$T/live.log"; exit 1; }
L=$T/live/logs/learn.log
grep -q "starting from the offline-trained agents in $T/train/dcmab/seed0/best" "$L" ||
  { grep learner: "$L" | head; echo "not warm-started"; exit 1; }
! grep -q "cold start (no checkpoint)" "$L" || { echo "the learner started cold"; exit 1; }
grep -q "36 advertisers, 3 agents, 4 consumer clusters, 24 steps" "$L"
for s in $(seq 0 23); do
  grep -q "closed day 0 step $s:" "$L" || { echo "step $s not closed"; exit 1; }
done
/usr/bin/python3 - "$T/live/ab/report.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
for arm in ("learned", "manual"):
    assert r["arms"][arm]["spend"] > 0 and r["arms"][arm]["revenue"] > 0, r["arms"][arm]
assert any("warm-started from" in n for n in r["notes"]), r["notes"]
print("warm start, one day: revenue per share", r["comparison"]["revenue_ratio"]["ratio"])
PY
echo "warm start loop: ok"
