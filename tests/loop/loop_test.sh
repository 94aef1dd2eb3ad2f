#!/usr/bin/env bash
# A short closed loop in the test suite: embedded Kafka, bidder, online learner and exchange
# over two simulated days of a tiny world, with the learner and then the bidder SIGKILLed in
# the middle of a step and restarted. Checks (from report.json, written by `rtb demo`):
#   every step has exactly one transition in the replay store (none lost, none duplicated);
#   the learner's per-step cost and revenue equal the exchange's own accounting;
#   the learner consumed every partition of the events topic to its end;
#   each day has the learned and the manual arm's revenue, cost, budget and clicks (A/B test);
#   `rtb report`'s arms from the events dump equal the exchange's within 0.1%, and so do the
#   score and realised CPA of each advertiser with a target CPA (half of them);
#   the policy lag is measured.
set -euo pipefail
RTB=$1
SRC=$2
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
"$RTB" demo --config "$SRC/tests/loop/demo.yaml" --out "$OUT/demo" --quiet > "$OUT/stdout.txt" || {
  echo "rtb demo failed"; tail -20 "$OUT"/demo/logs/*.log; exit 1; }
/usr/bin/python3 - "$OUT/demo/report.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
lc = r["loop_check"]
assert lc["transitions"] == lc["expected_transitions"] == 6, lc
assert lc["missing"] == [] and lc["duplicated"] == [], lc
assert lc["totals_match"], [(d["day"], s["step"], s["exchange"]["cost_micros"],
                             s.get("learner", {}).get("total_cost_micros"))
                            for d in r["days"] for s in d["steps"]]
for p in lc["events_partitions"]:
    assert p["learner_next_offset"] == p["high_watermark"], p
assert len(r["days"]) == 2
for d in r["days"]:
    for side in ("learned", "manual"):
        for k in ("revenue", "cost", "budget", "clicks"):
            assert isinstance(d[side][k], (int, float)), (side, k)
        assert d[side]["revenue"] > 0 and d[side]["budget"] > 0
    assert len(d["steps"]) == 3
    # The served tables replayed by the simulator on the learned arm: the same users' budgets.
    sa = d["learned_arm_in_simulator"]
    assert len(sa["by_agent"]) == len(d["learned"]["by_agent"]), sa
    for live, sim in zip(d["learned"]["by_agent"], sa["by_agent"]):
        assert abs(live["budget"] - sim["budget"]) <= 1e-6, (live["budget"], sim["budget"])
    assert sa["revenue"] > 0 and sa["cost"] <= sa["budget"] + 1e-6, sa
assert len(r["chaos"]) == 2, r["chaos"]
# The learner was killed on day 0: the bidder kept serving (with the last table) meanwhile.
assert all(s["lost_requests"] == 0 for s in r["days"][0]["steps"]), r["days"][0]["steps"]
assert all(s["failed_notices"] == 0 for d in r["days"] for s in d["steps"])
assert r["policy_lag_ms"]["n"] >= 5, r["policy_lag_ms"]
assert r["processes"] == {"bidder_exit": 0, "learner_exit": 0}, r["processes"]
ed = r["events_dump"]
assert ed["complete"] and ed["messages"] == lc["events_topic_messages"] > 0, (ed, lc)
assert r["learned_share"] == 0.5
for arm in ("learned", "manual"):
    for k in ("revenue", "spend", "budget", "clicks", "conversions", "roi", "cpa"):
        assert k in r["arms"][arm], (arm, k)
    assert r["arms"][arm]["spend"] > 0
ab = r["ab_from_events"]
assert ab["matches_exchange_within_0_1_pct"], (ab, r["arms"])
# Half the advertisers have a target CPA: rtb report's score and realised CPA of each, per arm,
# equal the exchange's own accounting of its days.
g = ab["goals"]
assert g["targets"] > 100 and g["compared"] == 2 * g["targets"], g
assert g["matches_exchange_within_0_1_pct"], g
assert all(g["arms"][arm]["score"] > 0 for arm in ("learned", "manual")), g
bc = r["budget_check"]
assert bc["bidders"] == 1 and bc["max_overspend_pct"] <= 0.1 and bc["min_cost_pct"] > 0, bc
print("loop ok: 6 transitions, totals match, lag p50 %.0f ms, max %.0f ms" %
      (r["policy_lag_ms"]["p50"], r["policy_lag_ms"]["max"]))
PY

# Offline replay of the same events (the dump the demo wrote from the topic): the logged bids
# reproduce the exchange's cost (bid events lost in the bidder kill make a few notices orphans).
"$RTB" replay --format events --log "$OUT/demo/events.jsonl" --strategy logged,manual,scale:0 \
  --json > "$OUT/replay.json"
/usr/bin/python3 - "$OUT/demo/report.json" "$OUT/replay.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
x = json.load(open(sys.argv[2]))
m = {k["name"]: k for k in x["methods"]}
live_cost = sum(d[arm]["cost"] for d in r["days"] for arm in ("learned", "manual"))
live_imps = sum(d[arm]["impressions"] for d in r["days"] for arm in ("learned", "manual"))
assert x["events"] == r["events_dump"]["messages"], x
# Counted here independently from the dump, in one pass:
# - duplicates are events repeated by a re-send after the bidder's kill: replay must drop
#   exactly the repeated eids;
# - a SIGKILLed bidder loses the bid events still in its producer queue (docs/reliability.md,
#   known limit: up to the demo's 200 ms linger of them); each notice's event survives (the
#   outbox, re-sent at start). So every live impression is either in the replay or a billing
#   event whose bid event is missing, and every such orphan is in the killed step's half before
#   the kill (kill-bidder@1:1 in demo.yaml), or among the requests the other connections had in
#   flight when the kill came (exchange.concurrency: 8).
seen, repeated = set(), 0
bids, billed = set(), {}
for line in open(sys.argv[1].replace("report.json", "events.jsonl")):
    e = json.loads(line)
    eid = e.get("eid", "")
    repeated += 1 if eid and eid in seen else 0
    seen.add(eid)
    key = (e.get("auction"), e.get("imp"), e.get("adv"))
    if e["type"] == "bid":
        bids.add(key)
    elif e["type"] == "billing":
        billed[key] = e["price_micros"]
assert x["duplicates"] == repeated and x["skipped"] == 0, (x["duplicates"], repeated, x)
orphans = {k: v for k, v in billed.items() if k not in bids}
assert x["orphan_impressions"] == len(orphans), (x["orphan_impressions"], len(orphans))
assert m["logged"]["impressions"] + len(orphans) == live_imps, (m["logged"], len(orphans), live_imps)
orphan_cost = sum(orphans.values()) / 1e9  # CPM micros per impression
assert abs(m["logged"]["cost"] + orphan_cost - live_cost) <= 1e-4 * live_cost, (
    m["logged"], orphan_cost, live_cost)
first = r["days"][1]["steps"][0]["exchange"]["requests"]  # step 1 starts after step 0
half = r["days"][1]["steps"][1]["exchange"]["requests"] // 2
for auction, _, _ in orphans:
    day, req = auction.split("-r")
    assert day == "d1" and first <= int(req) < first + half + 8, (auction, first, half)
assert m["scale:0"]["impressions"] == 0 and m["manual"]["auctions"] == m["logged"]["auctions"]
print("events replay ok: logged cost %.2f of live %.2f, %d impressions whose bid event died "
      "with the bidder" % (m["logged"]["cost"], live_cost, len(orphans)))
PY
