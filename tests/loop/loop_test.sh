#!/usr/bin/env bash
# A short closed loop in the test suite: embedded Kafka, bidder, online learner and exchange
# over two simulated days of a tiny world, with the learner and then the bidder SIGKILLed in
# the middle of a step and restarted. Checks (from report.json, written by `rtb demo`):
#   every step has exactly one transition in the replay store (none lost, none duplicated);
#   the learner's per-step cost and revenue equal the exchange's own accounting;
#   the learner consumed every partition of the events topic to its end;
#   each day has learned and manual revenue, cost, budget and clicks; the policy lag is measured.
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
assert len(r["chaos"]) == 2, r["chaos"]
# The learner was killed on day 0: the bidder kept serving (with the last table) meanwhile.
assert all(s["lost_requests"] == 0 for s in r["days"][0]["steps"]), r["days"][0]["steps"]
assert all(s["failed_notices"] == 0 for d in r["days"] for s in d["steps"])
assert r["policy_lag_ms"]["n"] >= 5, r["policy_lag_ms"]
assert r["processes"] == {"bidder_exit": 0, "learner_exit": 0}, r["processes"]
print("loop ok: 6 transitions, totals match, lag p50 %.0f ms, max %.0f ms" %
      (r["policy_lag_ms"]["p50"], r["policy_lag_ms"]["max"]))
PY
