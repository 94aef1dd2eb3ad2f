#!/usr/bin/env bash
# Two bidder binaries under the same load benchmark, alternating (A B A B ...) so that the
# machine's drift hits both alike: each invocation is bench/run_load_bench.sh (peak of the full
# bid path against the bare server, and p99 at half the full path's peak), and the medians over
# the invocations are compared. Typical use: the previous commit's build against this one.
# OLD_CONFIG: the old binary's base bidder config (default: this tree's), for a version that
# does not know every key of today's; NEW_CONFIG (environment): the new side's (default: this
# tree's), e.g. one whose kafka.brokers is a real cluster, against the embedded one.
# The latency runs of both are paced at one rate, RATE (default 20000 req/s): each binary's own
# half peak would pace the faster one harder.
# Usage: bench/run_load_ab.sh OLD_RTB NEW_RTB [PAIRS=3] [SECONDS=5] [ROUNDS=3] [OLD_CONFIG]
set -euo pipefail
cd "$(dirname "$0")/.."
OLD=$1 NEW=$2 PAIRS=${3:-3} SECS=${4:-5} ROUNDS=${5:-3}
OLD_CONFIG=${6:-configs/bidder/default.yaml}
LOG=$(mktemp -d)
trap 'rm -rf "$LOG"' EXIT
for p in $(seq "$PAIRS"); do
  for side in old new; do
    bin=$OLD config=$OLD_CONFIG
    [[ $side == new ]] && bin=$NEW config=${NEW_CONFIG:-configs/bidder/default.yaml}
    RATE=${RATE:-20000} RTB=$bin BIDDER_CONFIG=$config bench/run_load_bench.sh "$SECS" 16 "$ROUNDS" >"$LOG/$side.$p" 2>&1
    ratio=$(sed -nE 's/^ratio full \/ bare \(medians\): ([0-9.]+)/\1/p' "$LOG/$side.$p")
    peak=$(sed -nE 's/^peak, full bid path.*: +([0-9.]+) req\/s/\1/p' "$LOG/$side.$p")
    p99=$(sed -nE 's/^p99 at half peak.*full bid path ([0-9.]+) ms.*/\1/p' "$LOG/$side.$p")
    bare99=$(sed -nE 's/^p99 at half peak.*bare server at the same rate ([0-9.]+) ms.*/\1/p' "$LOG/$side.$p")
    echo "pair $p, $side: full-path peak $peak req/s, ratio to bare $ratio, p99 at ${RATE:-20000} req/s $p99 ms (bare server $bare99 ms)"
    echo "$ratio $peak $p99" >>"$LOG/$side"
  done
done
median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
for side in old new; do
  r=$(awk '{print $1}' "$LOG/$side" | median)
  k=$(awk '{print $2}' "$LOG/$side" | median)
  q=$(awk '{print $3}' "$LOG/$side" | median)
  echo "$side ($( [[ $side == old ]] && echo "$OLD" || echo "$NEW")): median ratio to bare $r, median peak $k req/s, median p99 at ${RATE:-20000} req/s $q ms"
  eval "${side}_r=$r ${side}_q=$q"
done
awk -v a="$new_r" -v b="$old_r" -v c="$new_q" -v d="$old_q" \
  'BEGIN {printf "new / old: ratio-to-bare %.3f, p99 %.3f (p99 below 1 is better)\n", a / b, c / d}'
