#!/usr/bin/env bash
# The load benchmark's two-bidder mode: two `rtb serve` processes on one Kafka cluster (the first
# one's embedded mock cluster), sharing every budget through leases and one `rtb budget`, against
# one bidder alone, in the same run. Rounds alternate: one bidder under wrk (CONNECTIONS
# connections), then both bidders at once (half the connections each, the two peaks summed).
# Prints each round and the medians' ratio (two bidders / one). On this 2-core machine the
# bidders, wrk and Kafka share the same two cores, so a second process adds no CPU: the ratio
# shows what the second process costs or saves here, not what a second machine would add.
# Usage: bench/run_load_two.sh [SECONDS=10] [CONNECTIONS=16] [ROUNDS=3]   (after scripts/build.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${1:-10}
CONNS=${2:-16}
ROUNDS=${3:-3}
RTB=${RTB:-build/release/rtb}
source bench/bench_server.sh
source scripts/serve_lib.sh
LEASES='/^leases:/,/^[a-z]/{s/^  enabled: .*/  enabled: true/;s/^  check_every_ms: .*/  check_every_ms: 20/;s/^  report_every_ms: .*/  report_every_ms: 200/;s/^  horizon_ms: .*/  horizon_ms: 2000/}'
start_bench_server -e "$LEASES" -e "s/^  name: .*/  name: bench-a/" \
  -e "s#^notice_secret: .*#notice_secret: bench-two-bidders#"
BROKERS=$(sed -nE 's/.*embedded Kafka \(mock cluster, [0-9]+ brokers\) at ([^ ]+).*/\1/p' "$T/log" | head -1)
[[ -n $BROKERS ]] || { echo "run_load_two: the first bidder has no embedded Kafka" >&2; exit 1; }
PORT_B=$(free_port)
sed -e "s#^listen: .*#listen: 127.0.0.1:$PORT_B#" -e "s#^state_path: .*#state_path: $T/state-b#" \
  -e "s#^  spill_path: .*#  spill_path: $T/spill-b.jsonl#" -e "s#^  brokers: .*#  brokers: $BROKERS#" \
  -e "s/^  name: .*/  name: bench-b/" "$T/bench.yaml" > "$T/bench-b.yaml"
"$RTB" serve --config "$T/bench-b.yaml" > "$T/log-b" 2>&1 &
PID_B=$!
"$RTB" budget --market "$T/bench.yaml" --brokers "$BROKERS" > "$T/log-budget" 2>&1 &
PID_BUD=$!
trap 'kill $PID $PID_B $PID_BUD 2>/dev/null; wait 2>/dev/null; rm -rf "$T"' EXIT
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$PORT_B/healthz" > /dev/null && break; sleep 0.1; done
write_unique_id_lua "$T/post.lua"
peak() {  # port connections -> requests/s
  BODY="$BODY" wrk -t1 -c"$2" -d"${SECS}s" -s "$T/post.lua" "http://127.0.0.1:$1/openrtb2/bid" |
    awk '/Requests\/sec/ {print $2}'
}
for p in $PORT $PORT_B; do  # warm-up: both bidders have their leases
  BODY="$BODY" wrk -t1 -c2 -d2s -s "$T/post.lua" "http://127.0.0.1:$p/openrtb2/bid" > /dev/null
done
median() { tr ' ' '\n' | sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
ONES="" TWOS=""
for r in $(seq "$ROUNDS"); do
  one=$(peak "$PORT" "$CONNS")
  peak "$PORT" $((CONNS / 2)) > "$T/a.txt" &
  wa=$!
  b=$(peak "$PORT_B" $((CONNS / 2)))
  wait $wa
  a=$(cat "$T/a.txt")
  two=$(awk -v a="$a" -v b="$b" 'BEGIN {printf "%.0f", a + b}')
  echo "round $r: one bidder $one req/s; two bidders $a + $b = $two req/s; ratio $(awk -v t="$two" -v o="$one" 'BEGIN {printf "%.2f", t/o}')"
  ONES="$ONES $one" TWOS="$TWOS $two"
done
mo=$(echo $ONES | median)
mt=$(echo $TWOS | median)
echo "median: one bidder $mo req/s, two bidders $mt req/s, ratio $(awk -v t="$mt" -v o="$mo" 'BEGIN {printf "%.2f", t/o}') ($(nproc) cores)"
for p in $PORT $PORT_B; do  # both bid (within their leases), not just answer
  nb=$(curl -s "http://127.0.0.1:$p/metrics" | awk '/^rtb_bids_total/ {s += $2} END {print s + 0}')
  echo "bidder on port $p: $nb bids"
done
