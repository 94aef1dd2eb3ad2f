#!/usr/bin/env bash
# A freshly started bidder under steady traffic: RUNS paced runs of 10 s at RATE requests/s
# (unique auction ids, as bench/run_load_bench.sh sends), each printing the load generator's
# p99, the page faults taken per thread group in that run, and the server's RSS. A young
# server grows its per-bid tables to their working size in the first reservation_timeout_ms (60 s);
# the page faults on rtb-io-* (request) threads show what that growth costs the bid path.
# Usage: bench/run_fresh_server.sh [RUNS=7] [RATE=23000] [EXPECTED_BIDS_PER_SECOND=0]
#   (after scripts/build.sh; the third argument sets expected_bids_per_second)
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-7}
RATE=${2:-23000}
EXPECTED=${3:-0}
source bench/bench_server.sh
start_bench_server -e "s#^expected_bids_per_second: .*#expected_bids_per_second: $EXPECTED#"
echo "fresh server, expected_bids_per_second $EXPECTED, RSS at start $(grep VmRSS /proc/$PID/status | awk '{print int($2 / 1024)}') MB"
faults() {  # thread group -> minor page faults so far
  for t in /proc/$PID/task/*; do echo "$(tr -d ' ' <"$t/comm") $(awk '{print $10}' "$t/stat")"; done |
    awk '{c[$1] += $2} END {for (k in c) print k, c[k]}' | sort
}
for r in $(seq "$RUNS"); do
  a=$(faults)
  p=$(build/release/bench/loadgen --port $PORT --path /openrtb2/bid --body "$BODY" --connections 16 \
        --seconds 10 --rate "$RATE" --unique-ids 1 | sed -E 's/.* p99 ([0-9.]+) .*/\1/')
  b=$(faults)
  echo "run $r: p99 $p ms; page faults $(join <(echo "$a") <(echo "$b") |
    awk '$3 - $2 > 0 {printf "%s %d, ", $1, $3 - $2}')RSS $(grep VmRSS /proc/$PID/status | awk '{print int($2 / 1024)}') MB"
done
