#!/usr/bin/env bash
# RLB's dynamic program: rtb's (bench_replay's BM_RlbValueFunction, N = 1000, c0 = 1/32, 1/8,
# 1/2) against the released loop transcribed in Python (bench/python/rlb_dp.py) in the same
# run, on the same 156K-line synthetic campaign. Python runs c0 = 1/32 only (about 20 s; 1/2
# would take several minutes); both replay the test log and must agree on every total.
set -euo pipefail
cd "$(dirname "$0")/.."
B=build/release
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
"$B/rtb" generate --rlb-out "$T" --rlb-lines 156000 >/dev/null
"$B/bench/bench_replay" --benchmark_filter=RlbValueFunction --benchmark_repetitions=3 \
  --benchmark_report_aggregates_only=true --benchmark_format=json > "$T/bench.json"
args=(replay --format rlb --log "$T/test.txt" --info "$T/campaign.json" --protocol rlb
      --strategy rlb --c0 0.03125 --episode-size 1000 --max-bid 300 --json)
s=$(date +%s.%N); out=$("$B/rtb" "${args[@]}"); e=$(date +%s.%N)
py=$(python3 bench/python/rlb_dp.py "$T/test.txt" "$T/campaign.json" 0.03125 1000 300)
python3 - "$T/bench.json" "$out" "$py" "$s" "$e" <<'PY'
import json, sys
b = json.load(open(sys.argv[1]))
c, p = json.loads(sys.argv[2]), json.loads(sys.argv[3])
whole = float(sys.argv[5]) - float(sys.argv[4])
for k in ("auctions", "impressions", "clicks", "cost"):
    assert c[k] == p[k], (k, c[k], p[k])
med = {r["run_name"]: r for r in b["benchmarks"] if r.get("aggregate_name") == "median"}
for name, r in sorted(med.items()):
    print("%-28s median %8.1f ms  (B %d)" % (name, r["real_time"], r["B"]))
dp32 = med["BM_RlbValueFunction/32"]["real_time"] / 1000
print("c0 = 1/32: rtb DP %.3f s, Python DP %.2f s: %.0fx; whole replay %.2f s vs %.2f s; "
      "totals agree (%d impressions, %d clicks, cost %d)" % (
          dp32, p["dp_seconds"], p["dp_seconds"] / dp32, whole, p["seconds"],
          c["impressions"], c["clicks"], c["cost"]))
PY
