#!/usr/bin/env bash
# rtb replay speed on a 156K-line compact log (Lin-Bid, RLB protocol), against the RLB code's
# Python loop on the same log in the same run; the two must agree on every total.
set -euo pipefail
cd "$(dirname "$0")/.."
B=build/release
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
"$B/rtb" generate --rlb-out "$T" --rlb-lines 156000 >/dev/null
"$B/bench/bench_replay" --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
args=(replay --format rlb --log "$T/test.txt" --info "$T/campaign.json" --protocol rlb
      --strategy lin --b0 80 --c0 0.03125 --episode-size 1000 --max-bid 300 --json)
best=9
for i in 1 2 3 4 5; do
  s=$(date +%s.%N); out=$("$B/rtb" "${args[@]}"); e=$(date +%s.%N)
  best=$(python3 -c "print(min($best, $e - $s))")
done
echo "rtb replay (whole process, best of 5): ${best} s: $out"
py=$(python3 bench/python/rlb_lin.py "$T/test.txt" "$T/campaign.json" 80)
echo "RLB Python loop (same log): $py"
python3 - "$out" "$py" "$best" <<'PY'
import json, sys
c, p, t = json.loads(sys.argv[1]), json.loads(sys.argv[2]), float(sys.argv[3])
for k in ("auctions", "impressions", "clicks", "cost"):
    assert c[k] == p[k], (k, c[k], p[k])
print("totals agree; whole process %.3f s vs Python loop %.3f s: %.1fx" % (t, p["seconds"], p["seconds"] / t))
PY
