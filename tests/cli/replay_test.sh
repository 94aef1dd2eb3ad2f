#!/usr/bin/env bash
# rtb replay on a generated RLB-format campaign: Lin-Bid totals equal the RLB code's Python
# loop on the same log; Mcpc runs; a malformed line stops the replay with its line number,
# or is skipped and counted with --on-error skip.
set -euo pipefail
RTB=$1
SRC=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
"$RTB" generate --config "$SRC/configs/simulator/default.yaml" --rlb-out "$T" --rlb-lines 20000 >/dev/null
args=(replay --format rlb --log "$T/test.txt" --info "$T/campaign.json" --protocol rlb
      --episode-size 1000 --max-bid 300 --c0 0.0625 --json)
lin=$("$RTB" "${args[@]}" --strategy lin --b0 90)
mcpc=$("$RTB" "${args[@]}" --strategy mcpc)
py=$(/usr/bin/python3 "$SRC/bench/python/rlb_lin.py" "$T/test.txt" "$T/campaign.json" 90 0.0625 1000 300)
/usr/bin/python3 - "$lin" "$mcpc" "$py" <<'PY'
import json, sys
lin, mcpc, py = (json.loads(a) for a in sys.argv[1:4])
for k in ("auctions", "impressions", "clicks", "cost"):
    assert lin[k] == py[k], (k, lin[k], py[k])
assert lin["auctions"] == 20000 and lin["episodes"] == 20 and 0 < lin["impressions"] < 20000, lin
assert mcpc["auctions"] == 20000 and mcpc["impressions"] > 0, mcpc
print("lin matches the RLB loop:", lin)
PY
# RLB's dynamic program: the same totals as the released loop transcribed in Python, for two
# budgets; episodes of 50 keep the Python program short.
for c0 in 0.125 0.5; do
  rlb=$("$RTB" replay --format rlb --log "$T/test.txt" --info "$T/campaign.json" --protocol rlb \
        --episode-size 50 --max-bid 300 --c0 $c0 --strategy rlb --json)
  pyr=$(/usr/bin/python3 "$SRC/bench/python/rlb_dp.py" "$T/test.txt" "$T/campaign.json" $c0 50 300)
  /usr/bin/python3 - "$rlb" "$pyr" <<'PY'
import json, sys
c, p = json.loads(sys.argv[1]), json.loads(sys.argv[2])
for k in ("auctions", "impressions", "clicks", "cost"):
    assert c[k] == p[k], (k, c[k], p[k])
assert c["budget"] == p["B"] and 0 < c["impressions"] < c["auctions"], c
print("rlb matches the released loop:", {k: c[k] for k in ("budget", "impressions", "clicks", "cost")})
PY
done
if "$RTB" replay --format rlb --log "$T/test.txt" --info "$T/campaign.json" --protocol benchmark \
     --strategy rlb 2>"$T/err"; then echo "FAIL: rlb under the benchmark protocol"; exit 1; fi
grep -q "plays the rlb protocol" "$T/err" || { echo "FAIL: $(cat "$T/err")"; exit 1; }
/usr/bin/python3 -c "
import json, sys; j = json.load(open('$T/campaign.json')); del j['price_counter_train']
json.dump(j, open('$T/nohist.json', 'w'))"
if "$RTB" replay --format rlb --log "$T/test.txt" --info "$T/nohist.json" --strategy rlb \
     2>"$T/err"; then echo "FAIL: rlb without a price histogram"; exit 1; fi
grep -q "needs the campaign summary's price_counter_train" "$T/err" || { echo "FAIL: $(cat "$T/err")"; exit 1; }
echo "rlb: the benchmark protocol and a summary without a histogram are clear errors"
sed -i '123s/.*/0 12x 0.001/' "$T/test.txt"
if "$RTB" "${args[@]}" --strategy mcpc 2>"$T/err"; then echo "FAIL: malformed line accepted"; exit 1; fi
grep -q "test.txt:123: payprice must be a non-negative integer, got '12x'" "$T/err" || {
  echo "FAIL: $(cat "$T/err")"; exit 1; }
skip=$("$RTB" "${args[@]}" --strategy mcpc --on-error skip 2>/dev/null)
echo "$skip" | grep -q '"auctions":19999,' || { echo "FAIL: $skip"; exit 1; }
echo "$skip" | grep -q '"skipped_lines":1[,}]' || { echo "FAIL: $skip"; exit 1; }
echo "malformed line: stopped with its number, or skipped and counted"
