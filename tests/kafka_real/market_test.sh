#!/usr/bin/env bash
# scripts/run_market.sh with BROKERS on the real cluster (scripts/kafka_cluster.sh, started by
# the tier's fixture), one short day of the hand-written market (as tests/loop/market_test.sh on
# the embedded one). Checks: the run says it used the cluster, on topics of its own; the learner
# closed every step; the A/B report read from the run's events topic equals the exchange's
# accounting of both arms within 0.1% and names the run's topic on the cluster as its source;
# the run's topics are gone afterwards.
# Usage: market_test.sh RTB SRC   (KAFKA_RUN_DIR: the cluster's)
set -euo pipefail
RTB=$1
SRC=$2
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
# shellcheck disable=SC1090
source "${KAFKA_RUN_DIR:?KAFKA_RUN_DIR: the run folder of the cluster}/cluster.env"
fail() {
  echo "market_real: $*" >&2
  exit 1
}
cd "$SRC"
BROKERS=$KAFKA_BOOTSTRAP RTB=$RTB REQUESTS=4000 scripts/run_market.sh configs/markets/metro 1 \
  "$OUT/out" > "$OUT/run.log" 2>&1 || { tail -30 "$OUT/run.log"; fail "run_market failed"; }
run=$(sed -n "s/^run_market: Kafka: the cluster at $KAFKA_BOOTSTRAP, on the run's own topics (rtb\.events\.\(market-metro-[^,]*\),.*/\1/p" \
  "$OUT/run.log")
[[ -n $run ]] || { cat "$OUT/run.log"; fail "the run does not say it used the real cluster"; }
steps=$(grep -c "closed day 0 step" "$OUT/out/logs/learn.log" || true)
[[ $steps -eq 24 ]] || fail "the learner closed $steps of 24 steps"
/usr/bin/python3 - "$OUT/out" "$run" "$KAFKA_BOOTSTRAP" <<'PY'
import json, sys
out, run, bootstrap = sys.argv[1], sys.argv[2], sys.argv[3]
report = json.load(open(out + "/ab/report.json"))
day = [json.loads(l) for l in open(out + "/exchange.jsonl") if l.startswith("{")][0]
for arm in ("learned", "manual"):
    for ex, ab in (("cost", "spend"), ("revenue", "revenue")):
        x, y = day["arms"][arm][ex], report["arms"][arm][ab]
        assert y > 0 and abs(x - y) <= 0.001 * x, (arm, ex, x, y)
assert report["source"] == "topic rtb.events.%s at %s" % (run, bootstrap), report["source"]
print("market_real: %s: 24 steps closed, both arms equal to the exchange's, learned / manual %.3f"
      % (run, report["comparison"]["revenue_ratio"]["ratio"]))
PY
kcat -b "$KAFKA_BOOTSTRAP" -L > "$OUT/topics.txt" 2>&1 || fail "kcat -L failed"
if grep -q "$run" "$OUT/topics.txt"; then fail "the run's topics (*.$run) are still there"; fi
echo "market_real: the run's topics (*.$run) deleted"
