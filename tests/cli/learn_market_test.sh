#!/usr/bin/env bash
# rtb learn on a market it did not generate: `rtb serve` with a hand-written config (the default
# config's 3 advertisers over 3 agents, a hand-written 2-cluster map with its history, a day of
# 43,200 steps of 2 s on the wall clock, a 50/50 A/B test) and `rtb learn` with no checkpoint (--init)
# pointed at it. A client bids for 100 users and sends billing and conversion notices while
# the steps pass. Checks:
#   - the learner builds no simulated world: its market is the config's (3 advertisers, N = 3,
#     L = 2, T = 43,200 steps of 2 s, the learned arm's budgets 250 / 1000 / 2500);
#   - wall-clock steps close and become transitions, and it says what it waits for;
#   - every table it publishes is 3 x 2, the first one manual bids, none outside a = 0 +- the
#     cold-start range, each with the market's cluster map; the bidder serves them;
#   - a checkpoint of another market shape is refused with one clear error line and exit 1.
set -euo pipefail
RTB=$1
SRC=$2
T=$(mktemp -d)
source "$SRC/tests/cli/serve_lib.sh"
trap '[[ -n $SERVE ]] && kill $SERVE 2>/dev/null; rm -rf "$T"' EXIT
/usr/bin/python3 - "$T/clusters.json" <<'PY'
import json, sys
users = {"u%d" % u: u % 2 for u in range(100)}
json.dump({"format": "rtb.cluster_map", "schema_version": 1, "clusters": 2, "default_cluster": 0,
           "users": users,
           "history": {"revenue": [[10 + t % 5, 30] for t in range(43200)],
                       "cost": [[2, 5 + t % 3] for t in range(43200)]}}, open(sys.argv[1], "w"))
PY
bidder_config "$T/bidder.yaml" \
    -e "s#^clusters_path: .*#clusters_path: $T/clusters.json#" \
    -e "s#^  steps_per_day: .*#  steps_per_day: 43200#" \
    -e "s#^  step_seconds: .*#  step_seconds: 2#" \
    -e "s#^  learned_share: .*#  learned_share: 0.5#"
sed -e "s#^simulator_config: .*#simulator_config: $SRC/configs/simulator/default.yaml#" \
    -e "s#^  clock: .*#  clock: wall#" \
    -e "s#^  step_grace_ms: .*#  step_grace_ms: 300#" \
    -e "s#^  progress_every_ms: .*#  progress_every_ms: 500#" \
    -e "s#^  cold_start_range: .*#  cold_start_range: 0.1#" \
    "$SRC/configs/learner/default.yaml" > "$T/learner.yaml"
start_serve "$T/bidder.yaml"

"$RTB" learn --config "$T/learner.yaml" --market "$T/bidder.yaml" --brokers "$BROKERS" \
  --state-dir "$T/learner" --max-steps 3 2> "$T/learn.log" &
LEARN=$!
# Traffic while the steps pass (until the learner has closed its 3 steps).
/usr/bin/python3 - "$PORT" "$LEARN" <<'PY'
import json, os, sys, time, urllib.request
port, learner = sys.argv[1], int(sys.argv[2])
base = "http://127.0.0.1:%s" % port
n, deadline = 0, time.time() + 60
def alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except OSError:
        return False
while alive(learner) and time.time() < deadline:
    req = {"id": "r%d" % n, "imp": [{"id": "1", "banner": {"w": 300, "h": 250}}],
           "site": {"domain": "news.example"}, "user": {"id": "u%d" % (n % 100)}, "tmax": 500}
    n += 1
    r = urllib.request.urlopen(urllib.request.Request(
        base + "/openrtb2/bid", json.dumps(req).encode(), {"Content-Type": "application/json"}))
    if r.status == 200:
        for sb in json.load(r)["seatbid"]:
            for b in sb["bid"]:
                burl = b["burl"]
                urllib.request.urlopen(burl.replace("${AUCTION_PRICE}", "%.6f" % (b["price"] * 0.5)))
                conv = burl.replace("/notice/billing", "/notice/conversion").replace(
                    "&price=${AUCTION_PRICE}", "") + "&value=3.5"
                urllib.request.urlopen(conv)
    time.sleep(0.01)
print("sent %d requests" % n)
PY
wait $LEARN || { echo "rtb learn failed"; cat "$T/learn.log"; exit 1; }
grep -q "market from $T/bidder.yaml: 3 advertisers, 3 agents, 2 consumer clusters, 43200 steps of 2 s a day, learned arm 50% of users and budgets; budgets per agent (learned arm): 250.00, 1000.00, 2500.00" "$T/learn.log" \
  || { cat "$T/learn.log"; exit 1; }
grep -q "cold start (no checkpoint)" "$T/learn.log"
grep -q "waiting for day .* step .* to close" "$T/learn.log"
[[ $(grep -c "closed day .* step .*transition" "$T/learn.log") -eq 3 ]] || { cat "$T/learn.log"; exit 1; }
grep -q "BuildScenario\|building the world" "$T/learn.log" && { echo "the learner built a world"; exit 1; }

# The tables it published (the policy topic, as the bidders read it).
"$RTB" replay --format events --brokers "$BROKERS" --topic rtb.policy --dump "$T/policy.jsonl" \
  --on-error skip --json > /dev/null 2>&1 || true
/usr/bin/python3 - "$T/policy.jsonl" "$T/clusters.json" <<'PY'
import json, sys
tables = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
users = json.load(open(sys.argv[2]))["users"]
assert len(tables) >= 4, len(tables)  # version 1, then one per closed step
for m in tables:
    a = m["table"]["actions"]
    assert len(a) == 3 and all(len(row) == 2 for row in a), a
    assert all(abs(x) <= 0.1 + 1e-6 for row in a for x in row), a
    assert m["clusters"]["clusters"] == 2 and m["clusters"]["users"] == users
first = min(tables, key=lambda m: m["table"]["version"])
assert all(x == 0 for row in first["table"]["actions"] for x in row), first["table"]
print("learn ok: %d tables of 3 x 2 within +-0.1, the market's cluster map" % len(tables))
PY
V=$(curl -s "http://127.0.0.1:$PORT/metrics" | sed -nE 's/^rtb_policy_version ([0-9]+)$/\1/p')
[[ $V -ge 2 ]] || { echo "the bidder serves policy version $V"; exit 1; }

# A checkpoint of another shape (here: a market of 1 cluster) is refused.
sed -e "s#^clusters_path: .*#clusters_path: \"\"#" "$T/bidder.yaml" > "$T/one-cluster.yaml"
if "$RTB" learn --config "$T/learner.yaml" --market "$T/one-cluster.yaml" --brokers "$BROKERS" \
    --state-dir "$T/other" --init "$T/learner/checkpoint" --max-steps 1 2> "$T/mismatch.log"; then
  echo "a checkpoint of another market shape was accepted"; exit 1
fi
grep -q "the checkpoint was trained for 3 agents x 2 consumer clusters; this market has 3 x 1" "$T/mismatch.log" \
  || { cat "$T/mismatch.log"; exit 1; }
echo "mismatch refused: $(grep -o 'the checkpoint was trained.*' "$T/mismatch.log")"
# On the wall clock the market's steps must make one whole day.
sed -e "s#^clusters_path: .*#clusters_path: \"\"#" -e "s#^  steps_per_day: .*#  steps_per_day: 4#" \
  "$T/bidder.yaml" > "$T/short-day.yaml"
if "$RTB" learn --config "$T/learner.yaml" --market "$T/short-day.yaml" --brokers "$BROKERS" \
    --state-dir "$T/short" --max-steps 1 2> "$T/short.log"; then
  echo "a wall-clock market of 4 steps of 2 s was accepted"; exit 1
fi
grep -q "online.clock wall needs market.steps_per_day x step_seconds = one day (86400 s); it is 8 s" "$T/short.log" \
  || { cat "$T/short.log"; exit 1; }
echo "short wall-clock day refused"
