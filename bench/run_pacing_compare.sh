#!/usr/bin/env bash
# The learned pacing agent against RLB, Lin-Bid and Mcpc on a held-out log (docs/replay.md
# section 2, RLB protocol, the published table's columns): a synthetic campaign from the
# simulator's market-price model (train, validation and test logs of 156K auctions each,
# different seeds). For each c0 the agent is trained (`rtb train-pacing`, never on the test log),
# RLB's dynamic program is computed from the campaign summary, the agent's tables and Lin-Bid's
# b0 (in steps of 6) are chosen on the validation log, and all four replay the test log. Reports go to
# out/pacing-compare/; the last lines sum the clicks over c0 and give each method's margin
# against RLB.
# Usage: bench/run_pacing_compare.sh [EPISODES=400] [C0 list="0.03125 0.0625 0.125 0.25 0.5"]
#        [SEED=1]; PACING_ARGS (default "--base rlb --bratio 0.1 --parts 10 --price-buckets 5")
#        go to rtb train-pacing;
#        AUCTION=first_price replays (and trains) under first price: a win pays the bid
#        (default second_price, the logs' own auction); DRIFT=1 generates a drifting campaign
#        (rtb generate --rlb-drift). Output: out/pacing-compare[-first_price][-drift][-SEED].
set -euo pipefail
cd "$(dirname "$0")/.."
B=build/release
EPISODES=${1:-400}
C0S=${2:-0.03125 0.0625 0.125 0.25 0.5}
SEED=${3:-1}
PACING_ARGS=${PACING_ARGS:---base rlb --bratio 0.1 --parts 10 --price-buckets 5}
AUCTION=${AUCTION:-second_price}
OUT=out/pacing-compare
DRIFT=${DRIFT:-0}
[ "$AUCTION" = second_price ] || OUT=$OUT-$AUCTION
GEN_ARGS=()
[ "$DRIFT" = 0 ] || { OUT=$OUT-drift; GEN_ARGS=(--rlb-drift); }
[ "$SEED" = 1 ] || OUT=$OUT-$SEED
rm -rf "$OUT" && mkdir -p "$OUT"
"$B/rtb" generate --rlb-out "$OUT/logs" --seed "$SEED" --out "$OUT/unused" "${GEN_ARGS[@]}" >/dev/null
rm -rf "$OUT/unused"
for c0 in $C0S; do
  # shellcheck disable=SC2086
  "$B/rtb" train-pacing --log "$OUT/logs/train.txt" --info "$OUT/logs/campaign.json" --c0 "$c0" \
    --holdout 0.2 \
    --episodes "$EPISODES" --seed "$SEED" --out "$OUT/pacing-$c0.json" --quiet $PACING_ARGS \
    --auction "$AUCTION" \
    > "$OUT/train-$c0.json"
  "$B/rtb" replay --format rlb --log "$OUT/logs/test.txt" --info "$OUT/logs/campaign.json" \
    --validation-log "$OUT/logs/validation.txt" --c0 "$c0" --strategy pacing,rlb,lin,mcpc \
    --auction "$AUCTION" \
    --pacing "$OUT/pacing-$c0.json" --out "$OUT/c0-$c0" --json > "$OUT/c0-$c0.json"
done
python3 - "$OUT" $C0S <<'PY'
import json, sys
out, c0s = sys.argv[1], sys.argv[2:]
print("%-8s %-7s %7s %9s %11s %9s %8s %7s %8s %9s %9s" % ("c0", "method", "clicks", "exp.clk",
      "impressions", "cost", "win rate", "CPM", "eCPC", "exp vs rlb", "exp vs lin"))
tot = {}
for c0 in c0s:
    ms = {m["name"]: m for m in json.load(open("%s/c0-%s.json" % (out, c0)))["methods"]}
    for n, m in ms.items():
        print("%-8s %-7s %7d %9.2f %11d %9d %8.4f %7.2f %8.2f %+8.2f%% %+8.2f%%" % (
            c0, n, m["clicks"], m["expected_clicks"], m["impressions"], m["cost"], m["win_rate"],
            m["cpm"], m["ecpc"], 100 * (m["expected_clicks"] / ms["rlb"]["expected_clicks"] - 1),
            100 * (m["expected_clicks"] / ms["lin"]["expected_clicks"] - 1)))
        t = tot.setdefault(n, [0, 0.0])
        t[0] += m["clicks"]
        t[1] += m["expected_clicks"]
print("summed over c0 (clicks, expected clicks):",
      ", ".join("%s %d (%.2f)" % (n, c, e) for n, (c, e) in tot.items()))
print("reports in %s/c0-*/report.md" % out)
PY
