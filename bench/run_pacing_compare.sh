#!/usr/bin/env bash
# The learned pacing agent against Lin-Bid and Mcpc on a held-out log (docs/replay.md section 2,
# RLB protocol): a synthetic campaign from the simulator's market-price model (train,
# validation and test logs of 156K auctions each, different seeds). For each c0 the agent is
# trained on the training log (`rtb train-pacing`), Lin-Bid's b0 is tuned on the validation
# log in steps of 6, and all three replay the test log. Reports go to out/pacing-compare/.
# Usage: bench/run_pacing_compare.sh [EPISODES=400] [C0 list="0.03125 0.0625 0.125 0.25 0.5"] [SEED=1]
set -euo pipefail
cd "$(dirname "$0")/.."
B=build/release
EPISODES=${1:-400}
C0S=${2:-0.03125 0.0625 0.125 0.25 0.5}
SEED=${3:-1}
OUT=out/pacing-compare
rm -rf "$OUT" && mkdir -p "$OUT"
"$B/rtb" generate --rlb-out "$OUT/logs" --seed "$SEED" --out "$OUT/unused" >/dev/null
rm -rf "$OUT/unused"
printf "%-8s %-8s %9s %9s %11s %9s %9s\n" c0 method clicks "exp.clk" impressions cost "vs lin"
for c0 in $C0S; do
  "$B/rtb" train-pacing --log "$OUT/logs/train.txt" --info "$OUT/logs/campaign.json" --c0 "$c0" \
    --episodes "$EPISODES" --seed "$SEED" --out "$OUT/pacing-$c0.json" --quiet >/dev/null
  "$B/rtb" replay --format rlb --log "$OUT/logs/test.txt" --info "$OUT/logs/campaign.json" \
    --validation-log "$OUT/logs/validation.txt" --c0 "$c0" --strategy pacing,rlb,lin,mcpc \
    --pacing "$OUT/pacing-$c0.json" --out "$OUT/c0-$c0" --json > "$OUT/c0-$c0.json"
  python3 - "$OUT/c0-$c0.json" "$c0" <<'PY'
import json, sys
x = json.load(open(sys.argv[1]))
lin = next(m for m in x["methods"] if m["name"] == "lin")
for m in x["methods"]:
    print("%-8s %-8s %9d %9.2f %11d %9d %8.1f%%" % (sys.argv[2], m["name"], m["clicks"],
          m["expected_clicks"], m["impressions"], m["cost"],
          100.0 * m["expected_clicks"] / lin["expected_clicks"]))
PY
done
echo "(vs lin: expected clicks as a percentage of Lin-Bid's; reports in $OUT/c0-*/report.md)"
