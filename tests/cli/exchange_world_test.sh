#!/usr/bin/env bash
# The simulated world as a bidder (exchange/README.md): `rtb generate --seed S --bidder-out`
# writes a bidder config that `rtb serve` runs as it is, and `rtb exchange --seed S` plays that
# world's days against it. The bidder must trust the exchange's clock and take one bid more than
# the slots; without those two settings it bought 255 impressions of this day, against 7,000.
set -eu
RTB=$1
SRC=$2
T=$(mktemp -d)
source "$SRC/tests/cli/serve_lib.sh"
trap '[[ -n $SERVE ]] && kill $SERVE 2>/dev/null; wait 2>/dev/null; rm -rf "$T"' EXIT
cat >"$T/small.yaml" <<'YAML'
world: {advertisers: 300, consumers: 2000}
day: {requests: 6000}
YAML
"$RTB" generate --config "$T/small.yaml" --seed 5 --bidder-out "$T/world" 2>/dev/null
grep -q "^simulation_hooks: true" "$T/world/bidder.yaml" || { echo "FAIL: hooks off"; exit 1; }
grep -q "^max_bids_per_imp: 4" "$T/world/bidder.yaml" || { echo "FAIL: max_bids_per_imp"; exit 1; }
local_bidder_config "$T/world/bidder.yaml" "$T/bidder.yaml" "$PORT" "$T"
start_serve "$T/bidder.yaml"
"$RTB" exchange --config "$T/small.yaml" --seed 5 --bidder "127.0.0.1:$PORT" --days 1 --no-wait \
  > "$T/day.json" 2> "$T/exchange.log" || { echo "FAIL: rtb exchange"; cat "$T/exchange.log"; exit 1; }
python3 - "$T/day.json" <<'PY'
import json, sys
d = json.loads(open(sys.argv[1]).read().splitlines()[-1])
assert d["requests"] == 6000 and d["lost_requests"] == 0 and d["failed_notices"] == 0, d
# Three slots a request: most of them sold (255 with the base config's hooks and bid count).
assert d["impressions"] > 5000, d
assert d["revenue"] > 0 and d["cost"] > 0, d
print("exchange on the generated world:", d["impressions"], "impressions")
PY
# --seed belongs to the simulated world: with a traffic file it is an error, not ignored.
if "$RTB" exchange --traffic "$SRC/configs/markets/metro/traffic.yaml" \
    --market "$SRC/configs/markets/metro/bidder.yaml" --seed 3 --days 0 2> "$T/err.log"; then
  echo "FAIL: --seed with --traffic accepted"; exit 1
fi
grep -q -- "--seed is the simulated world's" "$T/err.log" || { cat "$T/err.log"; exit 1; }
if "$RTB" exchange --traffic "$SRC/configs/markets/metro/traffic.yaml" \
    --market "$SRC/configs/markets/metro/bidder.yaml" --auction gfp --days 0 2> "$T/err.log"; then
  echo "FAIL: --auction with --traffic accepted"; exit 1
fi
grep -q -- "--auction is the simulated world's" "$T/err.log" || { cat "$T/err.log"; exit 1; }
echo "ok"
