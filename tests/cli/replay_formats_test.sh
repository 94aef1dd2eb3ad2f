#!/usr/bin/env bash
# rtb replay end to end on every format:
#   rlb      a pacing table trained by `rtb train-pacing` against Lin-Bid (b0 tuned on a
#            validation log) and Mcpc on a held-out log, in one engine report;
#   ipinyou  a raw TSV with the columns in another order, no pctr column (the CTR model is
#            fitted on the training log), the benchmark protocol; a malformed line's number;
#   full     two policies re-auctioned on a full-information log in one command;
#   help     lists the formats and strategies.
set -euo pipefail
RTB=$1
SRC=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
"$RTB" generate --config "$SRC/configs/simulator/default.yaml" --rlb-out "$T/rlb" --rlb-lines 20000 \
  --out "$T/unused" >/dev/null
"$RTB" train-pacing --log "$T/rlb/train.txt" --info "$T/rlb/campaign.json" --out "$T/pacing.json" \
  --c0 0.0625 --episodes 60 --eval-every 20 --quiet > "$T/train.json"
"$RTB" replay --format rlb --log "$T/rlb/test.txt" --info "$T/rlb/campaign.json" \
  --validation-log "$T/rlb/validation.txt" --c0 0.0625 --strategy pacing,lin,mcpc \
  --pacing "$T/pacing.json" --out "$T/report" --json > "$T/replay.json"
/usr/bin/python3 - "$T" <<'PY'
import json, sys
t = sys.argv[1]
x = json.load(open(t + "/replay.json"))
r = json.load(open(t + "/report/report.json"))
names = [m["name"] for m in x["methods"]]
assert names == ["pacing", "lin", "mcpc"], names
assert x["auctions"] == 20000 and x["strategy"].startswith("pacing"), x
assert all(m["impressions"] > 0 for m in x["methods"]), x
assert list(r["methods"]) == names, r["methods"]
md = open(t + "/report/report.md").read()
for s in ("Totals relative to lin", "RLB code (episodes)", "Lin-Bid b0", "validation.txt",
          "pacing table", "Expected clicks"):
    assert s in md, s
print("rlb: pacing %d clicks (%.1f expected), lin %d (%.1f), mcpc %d (%.1f)" % tuple(
    v for m in x["methods"] for v in (m["clicks"], m["expected_clicks"])))
PY

# A pacing table on RLB's bids trained from the campaign summary alone (no log), replayed
# beside RLB; a table trained for another c0 is a clear error.
"$RTB" train-pacing --info "$T/rlb/campaign.json" --out "$T/pacing-rlb.json" --base rlb \
  --bratio 0.2 --c0 0.0625 --episodes 40 --eval-every 20 --quiet > "$T/train-rlb.json"
"$RTB" replay --format rlb --log "$T/rlb/test.txt" --info "$T/rlb/campaign.json" --c0 0.0625 \
  --strategy pacing,rlb --pacing "$T/pacing-rlb.json" --json > "$T/replay-rlb.json"
/usr/bin/python3 - "$T" <<'PY'
import json, sys
t = sys.argv[1]
tr = json.load(open(t + "/train-rlb.json"))
x = json.load(open(t + "/replay-rlb.json"))
assert tr["base"] == "rlb" and tr["selected_on"] == "training", tr
assert [m["name"] for m in x["methods"]] == ["pacing", "rlb"], x
assert "rlb x learned multiplier" in x["strategy"], x["strategy"]
assert all(m["impressions"] > 0 for m in x["methods"]), x
print("pacing on rlb from the summary alone: %d clicks (%.1f expected), rlb %d (%.1f)" % tuple(
    v for m in x["methods"] for v in (m["clicks"], m["expected_clicks"])))
PY
if "$RTB" replay --format rlb --log "$T/rlb/test.txt" --info "$T/rlb/campaign.json" --c0 0.125 \
     --strategy pacing --pacing "$T/pacing-rlb.json" 2>"$T/err"; then
  echo "FAIL: a table for c0 0.0625 replayed at 0.125"; exit 1
fi
grep -q "scales RLB's bids for c0 = 0.0625; --c0 is 0.125" "$T/err" || { echo "FAIL: $(cat "$T/err")"; exit 1; }
if "$RTB" replay --format rlb --log "$T/rlb/test.txt" --info "$T/rlb/campaign.json" --c0 0.0625 \
     --max-bid 200 --strategy pacing --pacing "$T/pacing-rlb.json" 2>"$T/err"; then
  echo "FAIL: a table for max bid 300 replayed at 200"; exit 1
fi
grep -q "scales RLB's bids for max bid 300; --max-bid is 200" "$T/err" || { echo "FAIL: $(cat "$T/err")"; exit 1; }

# Raw iPinYou: columns shuffled, categorical features derived from pCTR, no pctr column.
for f in train test; do
  /usr/bin/python3 - "$T/rlb/$f.txt" "$T/$f.ipinyou.tsv" <<'PY'
import math, sys
src, dst = sys.argv[1], sys.argv[2]
with open(src) as i, open(dst, "w") as o:
    o.write("bidid\ttimestamp\tslotprice\tdomain\tpayprice\tregion\tclick\tadvertiser\n")
    for n, line in enumerate(i):
        c, p, ctr = line.split()
        dom = "d%d" % min(9, int(-math.log(float(ctr)) * 2))
        o.write("b%d\t20130606%09d\t0\t%s\t%s\tr%d\t%s\t1458\n" % (n, n, dom, p, n % 3, c))
PY
done
"$RTB" replay --format ipinyou --log "$T/test.ipinyou.tsv" --train-log "$T/train.ipinyou.tsv" \
  --protocol benchmark --budget-fraction 0.125 --strategy lin,mcpc --advertiser 1458 \
  --out "$T/ip" --json > "$T/ip.json"
/usr/bin/python3 - "$T/ip.json" "$T/ip/report.md" <<'PY'
import json, sys
x = json.load(open(sys.argv[1]))
assert x["format"] == "ipinyou" and x["protocol"] == "benchmark" and x["auctions"] == 20000, x
assert 0 < x["impressions"] < 20000 and x["b0"] > 0, x
assert x["cost"] <= x["budget"] + 300, x  # at most one impression over the budget
md = open(sys.argv[2]).read()
assert "hashed logistic regression fitted on" in md and "benchmark paper" in md, md[:800]
print("ipinyou: lin b0 %d, %d impressions, %d clicks, cost %d of budget %d" %
      (x["b0"], x["impressions"], x["clicks"], x["cost"], x["budget"]))
PY
sed -i '77s/\t[0-9]*\tr/\t9x\tr/' "$T/test.ipinyou.tsv"
if "$RTB" replay --format ipinyou --log "$T/test.ipinyou.tsv" --train-log "$T/train.ipinyou.tsv" \
  --b0 50 2>"$T/err"; then echo "FAIL: malformed iPinYou line accepted"; exit 1; fi
grep -q "test.ipinyou.tsv:77: payprice must be a non-negative integer, got '9x'" "$T/err" || {
  echo "FAIL: $(cat "$T/err")"; exit 1; }
"$RTB" replay --format ipinyou --log "$T/test.ipinyou.tsv" --train-log "$T/train.ipinyou.tsv" \
  --b0 50 --on-error skip --json 2>/dev/null | grep -q '"skipped_lines":1' || {
  echo "FAIL: skip mode"; exit 1; }

# Full information: two policies and manual bids, one command.
"$RTB" generate --config "$SRC/tests/loop/world.yaml" --out "$T/full" >/dev/null
"$RTB" replay --format full --config "$SRC/tests/loop/world.yaml" --log "$T/full/test.tsv" \
  --train-log "$T/full/train.tsv" --policy const:0.5 --policy const:-0.5 --out "$T/fr" \
  --json > "$T/full.json"
/usr/bin/python3 - "$T/full.json" "$T/fr/report.md" <<'PY'
import json, sys
x = json.load(open(sys.argv[1]))
m = {k["name"]: k for k in x["methods"]}
assert set(m) == {"const:0.5", "const:-0.5", "manual", "manual_unlimited"}, m.keys()
assert m["const:0.5"]["cost"] > m["manual"]["cost"] > m["const:-0.5"]["cost"] > 0, m
md = open(sys.argv[2]).read()
assert "Full-information replay" in md and "re-auctioned, gsp (3 slots, each winner pays the next eCPM)" in md, md[:600]
print("full: revenue %.1f / %.1f / %.1f (a = 0.5 / 0 / -0.5)" %
      (m["const:0.5"]["revenue"], m["manual"]["revenue"], m["const:-0.5"]["revenue"]))
PY

help=$("$RTB" replay --help)
for w in rlb ipinyou full events lin mcpc const rand pacing logged manual --validation-log \
         --pacing --policy --brokers --on-error; do
  grep -q -- "$w" <<<"$help" || { echo "FAIL: --help does not mention $w"; exit 1; }
done
echo "replay formats ok"
