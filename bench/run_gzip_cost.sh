#!/usr/bin/env bash
# What a gzip request body costs the bidder per request against the same body plain, in one run
# on one server: bench/loadgen sends the fixture at a fixed rate, each request with its own
# auction id, plain and gzipped (Content-Encoding: gzip, compressed per request) in alternating
# rounds; per round, the server's CPU time (utime + stime of its process, /proc) per answered
# request, and p50/p99 latency. Prints each round and the medians: CPU us/request plain, gzip,
# the difference and the ratio.
# Usage: bench/run_gzip_cost.sh [SECONDS=8] [RATE=2000] [ROUNDS=3]   (after scripts/build.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${1:-8}
RATE=${2:-2000}
ROUNDS=${3:-3}
LOADGEN=build/release/bench/loadgen
source bench/bench_server.sh
start_bench_server
TICK=$(getconf CLK_TCK)
cpu_ticks() { awk '{print $14 + $15}' "/proc/$PID/stat"; }
round() {  # gzip(0|1) -> "us_per_request p50 p99"
  local before after out n
  before=$(cpu_ticks)
  out=$("$LOADGEN" --port "$PORT" --path /openrtb2/bid --body "$BODY" --connections 8 \
    --seconds "$SECS" --rate "$RATE" --unique-ids 1 --gzip "$1")
  after=$(cpu_ticks)
  n=$(sed -n 's/^requests \([0-9]*\) .*/\1/p' <<<"$out")
  grep -q " 200:" <<<"$out" || { echo "no 200 answers: $out" >&2; exit 1; }
  awk -v b="$before" -v a="$after" -v n="$n" -v t="$TICK" -v o="$out" 'BEGIN {
    match(o, /p50 [0-9.]+/); p50 = substr(o, RSTART + 4, RLENGTH - 4)
    match(o, /p99 [0-9.]+/); p99 = substr(o, RSTART + 4, RLENGTH - 4)
    printf "%.1f %s %s\n", (a - b) / t * 1e6 / n, p50, p99 }'
}
"$LOADGEN" --port "$PORT" --path /openrtb2/bid --body "$BODY" --connections 4 --seconds 2 \
  --rate 500 --unique-ids 1 --gzip 1 > /dev/null  # warm-up
median() { tr ' ' '\n' | sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
PLAIN="" GZ=""
for r in $(seq "$ROUNDS"); do
  read -r p p50p p99p <<<"$(round 0)"
  read -r g p50g p99g <<<"$(round 1)"
  echo "round $r at $RATE req/s: plain $p us CPU/request (p50 $p50p ms, p99 $p99p ms); gzip $g us CPU/request (p50 $p50g ms, p99 $p99g ms)"
  PLAIN="$PLAIN $p" GZ="$GZ $g"
done
mp=$(echo $PLAIN | median) mg=$(echo $GZ | median)
awk -v p="$mp" -v g="$mg" -v b="$(wc -c < "$BODY")" 'BEGIN {
  printf "gzip bodies: %.1f us of server CPU per request against %.1f plain (+%.1f us, ratio %.2f; the fixture is %d bytes)\n", g, p, g - p, g / p, b }'
