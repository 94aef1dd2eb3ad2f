#!/usr/bin/env bash
# The whole loop on the hand-written market (configs/markets/metro: 36 advertisers over 3
# agents, 4 consumer segments, competing demand), one short day: scripts/run_market.sh runs
# `rtb serve`, `rtb learn --market` (no checkpoint) and `rtb exchange --traffic`, then
# `rtb report` on the topic. Checks:
#   - the learner's market is the config's (36 advertisers, 3 agents, 4 clusters, 24 steps)
#     and it closed every step of the day;
#   - the bidder chose the candidates by its own targeting and predictor (no candidate hints):
#     at least 3 advertisers of each agent bid;
#   - the report has both arms (revenue, spend, budget, clicks, conversions, roi, cpa), the
#     revenue and ROI ratios with a 95% interval, and each agent's COST per arm;
#   - the report's per-arm spend and revenue equal the exchange's accounting within 0.1%.
set -euo pipefail
RTB=$1
SRC=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cd "$SRC"
RTB=$RTB REQUESTS=${REQUESTS:-8000} scripts/run_market.sh configs/markets/metro 1 "$T/out" \
  > "$T/run.log" 2>&1 || { tail -30 "$T/run.log"; exit 1; }
grep -q "market from $T/out/bidder.yaml: 36 advertisers, 3 agents, 4 consumer clusters, 24 steps of 3600 s" \
  "$T/out/logs/learn.log" || { grep learner: "$T/out/logs/learn.log" | head; echo "learner market"; exit 1; }
for s in $(seq 0 23); do
  grep -q "closed day 0 step $s:" "$T/out/logs/learn.log" || { echo "step $s not closed"; exit 1; }
done
/usr/bin/python3 - "$T/out" <<'PY'
import json, sys
out = sys.argv[1]
r = json.load(open(out + "/ab/report.json"))
for arm in ("learned", "manual"):
    a = r["arms"][arm]
    for k in ("revenue", "spend", "budget", "clicks", "conversions", "roi", "cpa"):
        assert k in a, (arm, k)
    assert a["spend"] > 0 and a["revenue"] > 0, (arm, a)
    assert a["spend"] <= a["budget"] * 1.0001, (arm, a)
for k in ("revenue_ratio", "roi_ratio"):
    c = r["comparison"][k]
    lo, hi = c["ci95"]
    assert lo <= c["ratio"] <= hi, c
# Per agent and arm: COST = spend / budget from the report's advertisers.
day = r["days"][0]
bidders = {}
for arm in ("learned", "manual"):
    per = {}
    for a in day["arms"][arm]["advertisers"]:
        s, b = per.get(a["agent"], (0.0, 0.0))
        per[a["agent"]] = (s + a["spend"], b + a["budget"])
        if a["bids"] > 0:
            bidders.setdefault(a["agent"], set()).add(a["id"])
    assert sorted(per) == [0, 1, 2], per
    print(arm, "COST per agent:", {i: round(s / b, 3) for i, (s, b) in per.items()})
for i in (0, 1, 2):
    assert len(bidders.get(i, ())) >= 3, ("agent", i, "has few bidding advertisers", bidders)
# The exchange's accounting of the arms against the report from the bidder's events.
ex = [json.loads(l) for l in open(out + "/exchange.jsonl") if l.startswith("{")]
assert len(ex) == 1, ex
for arm in ("learned", "manual"):
    e, a = ex[0]["arms"][arm], r["arms"][arm]
    for k, rk in (("cost", "spend"), ("revenue", "revenue")):
        assert abs(e[k] - a[rk]) <= 0.001 * max(1.0, e[k]), (arm, k, e[k], a[rk])
print("ratio", r["comparison"]["revenue_ratio"])
PY
echo "market loop: ok"
