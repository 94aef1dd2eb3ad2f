#!/usr/bin/env bash
# The lease scale model (bench/lease_sim.cc), small: with leases no advertiser is overspent and
# every budget is delivered; without them (every bidder holding the whole budget) the same
# traffic overspends. Checks the printed table.
set -euo pipefail
out=$("$1" --bidders 12 --advertisers 6 --crashes 3)
echo "$out"
leases=$(grep '^| leases |' <<<"$out")
whole=$(grep '^| each bidder holds the whole budget |' <<<"$out")
[[ $leases == "| leases | 0.000% | "* ]] || { echo "leases overspent"; exit 1; }
min_cost=$(awk -F'|' '{print $4}' <<<"$leases" | awk '{print $1}')
awk -v c="$min_cost" 'BEGIN { exit !(c >= 99.0) }' || { echo "leases delivered only $min_cost%"; exit 1; }
over=$(awk -F'|' '{print $3}' <<<"$whole" | tr -d ' %')
awk -v o="$over" 'BEGIN { exit !(o > 10) }' || { echo "the baseline did not overspend ($over%)"; exit 1; }
"$1" --bidders 0 2>/dev/null && { echo "bad flag accepted"; exit 1; }
echo "lease model: ok"
