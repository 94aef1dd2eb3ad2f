#!/usr/bin/env bash
# The bidder's load benchmark, in one run on one server: the full bid path (decode, policy,
# prediction, bid formula, budget reservation, response, Kafka logging to the embedded cluster)
# against the same server answering a fixed 204 without any bid logic (POST /bench/nobid).
# Prints both peak throughputs (wrk), their ratio, and p50/p99 latency of the full path at half
# its peak rate (bench/loadgen, paced; ROUNDS runs and their median p99), each run next to the
# bare server paced at the same rate. The two peaks are measured in alternating rounds (bare,
# full, bare, full, ...) and compared by their medians: on a shared 2-core machine one pair of
# runs can differ by 15% from the next.
# Usage: bench/run_load_bench.sh [SECONDS=10] [CONNECTIONS=16] [ROUNDS=5]   (after scripts/build.sh)
# RATE=<req/s> in the environment paces the latency runs at that rate (default: half the peak).
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${1:-10}
CONNS=${2:-16}
ROUNDS=${3:-5}
LOADGEN=build/release/bench/loadgen
source bench/bench_server.sh
start_bench_server -e "s#^bench_endpoints: .*#bench_endpoints: true#"
# Every request carries its own auction id (bench_server.sh, write_unique_id_lua).
write_unique_id_lua "$T/post.lua"
peak() {  # path -> requests/s
  BODY="$BODY" wrk -t1 -c"$CONNS" -d"${SECS}s" -s "$T/post.lua" "http://127.0.0.1:$PORT$1" | awk '/Requests\/sec/ {print $2}'
}
# The host's own steadiness: five runs of a fixed CPU loop, at the start and at the end. On a
# shared virtual machine they can differ by 3x from one second to the next (another tenant's
# load), and every latency figure below moves with them.
hostcheck() {
  local TIMEFORMAT=%R
  for _ in 1 2 3 4 5; do { time awk 'BEGIN {for (i = 0; i < 2e7; ++i) s += i}'; } 2>&1; done |
    sort -g | awk '{v[NR] = $1} END {printf "host check (a fixed CPU loop, 5 runs): fastest %.2f s, slowest %.2f s\n", v[1], v[NR]}'
}
hostcheck
curl -s -X POST --data-binary @"$BODY" http://127.0.0.1:$PORT/openrtb2/bid -o /dev/null -w "warm-up: HTTP %{http_code}\n"
median() { tr ' ' '\n' | sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
BARES="" FULLS=""
for r in $(seq "$ROUNDS"); do
  b=$(peak /bench/nobid)
  f=$(peak /openrtb2/bid)
  echo "round $r: bare $b req/s, full $f req/s, ratio $(awk -v f="$f" -v b="$b" 'BEGIN {printf "%.2f", f/b}')"
  BARES="$BARES $b" FULLS="$FULLS $f"
done
BARE=$(echo $BARES | median)
FULL=$(echo $FULLS | median)
echo "peak, bare server (fixed 204), median of $ROUNDS:        $BARE req/s"
echo "peak, full bid path + Kafka logging, median of $ROUNDS:  $FULL req/s"
awk -v f="$FULL" -v b="$BARE" 'BEGIN {printf "ratio full / bare (medians): %.2f\n", f/b}'
# RATE (req/s) paces the latency runs at a fixed rate instead (to compare two builds at one rate).
HALF=${RATE:-$(awk -v f="$FULL" 'BEGIN {printf "%d", f/2}')}
echo "at half the full path's peak ($HALF req/s, paced, $CONNS connections), $ROUNDS rounds;"
echo "each round also runs the bare server at the same rate: the latency that the machine, the"
echo "kernel and the load generator (on the same 2 cores) add without any bid logic:"
P99S="" BP99S=""
paced() {  # path -> loadgen's summary line
  "$LOADGEN" --port $PORT --path "$1" --body "$BODY" --connections "$CONNS" --seconds "$SECS" --rate "$HALF" --unique-ids 1
}
p99of() { sed -E 's/.* p99 ([0-9.]+) .*/\1/'; }
# The bidder's own handling time (decode to encode, rtb_bid_latency_seconds in /metrics): its
# histogram before and after a run gives that run's in-process p99 (a bucket's upper bound),
# apart from the time a request waits for a core, in a socket or in the load generator.
hist() { curl -s http://127.0.0.1:$PORT/metrics | sed -nE 's/^rtb_bid_latency_seconds_bucket\{le="([^"]+)"\} ([0-9]+)/\1 \2/p'; }
hist_p99() {  # before after -> "<= X ms"
  paste <(echo "$1") <(echo "$2") | awk '{le[NR] = $1; d[NR] = $4 - $2} END {
    for (i = 1; i <= NR; ++i) if (d[i] >= 0.99 * d[NR]) { printf "<= %g ms", le[i] * 1000; exit } }'
}
# How busy the machine's cores were (all processes: server, Kafka threads, load generator).
cpu() { awk '/^cpu / {print $2 + $3 + $4 + $7 + $8 + $9, $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9}' /proc/stat; }
busy() { echo "$1 $2" | awk '{printf "%.0f%%", 100 * ($3 - $1) / ($4 - $2)}'; }
INS=""
for r in $(seq "$ROUNDS"); do
  c0=$(cpu)
  bline=$(paced /bench/nobid)
  c1=$(cpu) h0=$(hist)
  line=$(paced /openrtb2/bid)
  c2=$(cpu) h1=$(hist)
  in=$(hist_p99 "$h0" "$h1")
  echo "  round $r, bare: $bline; cores $(busy "$c0" "$c1") busy"
  echo "  round $r, full: $line; cores $(busy "$c1" "$c2") busy; in-process p99 $in"
  P99S="$P99S $(echo "$line" | p99of)" BP99S="$BP99S $(echo "$bline" | p99of)" INS="$INS|$in"
done
echo "p99 at half peak, median of $ROUNDS runs: full bid path $(echo $P99S | median) ms; bare server at the same rate $(echo $BP99S | median) ms"
echo "in-process p99 (decode to encode) of the full runs: ${INS#|}"
curl -s http://127.0.0.1:$PORT/metrics | grep -E '^(rtb_requests_total|rtb_bids_total|rtb_open_reservations|rtb_reservation_slots|rtb_kafka_events_(logged|acked|spilled|dropped)_total)'
echo "server memory: $(grep VmRSS /proc/$PID/status)"
hostcheck
