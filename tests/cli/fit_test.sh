#!/usr/bin/env bash
# rtb fit end to end: a dump of 4,000 bids of the default config's three advertisers (half of
# them in the manual arm) in a market whose highest competing eCPM is log-normal (median 8,
# sigma 0.5) gives a world with that competition, and its check (the manual arm replayed on
# it) within 5%; events without a manual arm do not pass a check they cannot have; events of an advertiser the config does not declare stop it with one line
# naming the advertiser, and write nothing.
set -euo pipefail
RTB=$1
SRC=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
sed -e 's/^  learned_share: .*/  learned_share: 0.5/' "$SRC/configs/bidder/default.yaml" > "$T/bidder.yaml"
python3 - "$T/events.jsonl" <<'PY'
import json, math, random, sys
random.seed(3)
bid_cpc = {1: 0.80, 2: 1.50, 3: 2.20}
with open(sys.argv[1], "w") as f:
    n = 0
    for i in range(4000):
        adv = 1 + i % 3
        arm = "manual" if (i // 3) % 2 == 0 else "learned"
        pctr, pcvr = 0.008, 0.05
        alpha = 0.0 if arm == "manual" else random.uniform(-0.2, 0.2)
        bid = bid_cpc[adv] * (1 + alpha) * pctr * 1000  # CPM
        comp = math.exp(math.log(8.0) + 0.5 * random.gauss(0, 1))
        sim_ms = (i * 86_400_000) // 4000
        base = {"v": 1, "ts": 1, "auction": "a%d" % i, "imp": "1", "adv": adv, "agent": adv - 1,
                "cluster": 0, "arm": arm, "sim_ms": sim_ms}
        def ev(kind, **kw):
            global n
            n += 1
            e = dict(base, type=kind, eid="e%d" % n)
            e.update(kw)
            f.write(json.dumps(e) + "\n")
        ev("bid", price_micros=int(bid * 1e6), cpc_micros=int(bid / pctr), pctr=pctr, pcvr=pcvr,
           alpha=alpha)
        if bid >= comp:
            ev("win", price_micros=int(comp * 1e6))
            ev("billing", price_micros=int(comp * 1e6), charged=True)
            ev("conversion", price_micros=int(pctr * pcvr * 60 * 1e6), count=pctr * pcvr)
        else:
            ev("loss", reason="102")
PY
"$RTB" fit --events "$T/events.jsonl" --bidder-config "$T/bidder.yaml" --out "$T/world.json" \
  > "$T/out.txt"
cat "$T/out.txt"
grep -q "within (tolerance 5%)" "$T/out.txt"
python3 - "$T/world.json" <<'PY'
import json, math, sys
w = json.load(open(sys.argv[1]))
assert w["schema"] == "rtb.fitted-world.v1", w["schema"]
assert len(w["bids"]) == 4000, len(w["bids"])
c = w["competition"]
assert abs(c["mu"] - math.log(8.0)) < 0.08, c
assert abs(c["sigma"] - 0.5) < 0.08, c
assert w["steps"] == 24 and len(w["revenue_hist"]) == 24
PY
# Events without a manual arm leave nothing to check against: the world is written, the check
# does not pass (exit 3) and says why.
sed 's/"arm": "manual"/"arm": "learned"/' "$T/events.jsonl" > "$T/learned.jsonl"
set +e
"$RTB" fit --events "$T/learned.jsonl" --bidder-config "$T/bidder.yaml" \
  --out "$T/no-ab.json" > /dev/null 2> "$T/err.txt"
rc=$?
set -e
[[ $rc == 3 ]] || { echo "rtb fit without a manual arm: exit $rc, expected 3" >&2; exit 1; }
grep -q "no check: the events hold no bid of the A/B test's manual arm" "$T/err.txt"
[[ -s $T/no-ab.json ]]
# An advertiser the config does not declare: one line naming it, exit 1, nothing written.
echo '{"v":1,"type":"bid","eid":"x1","ts":1,"auction":"z","imp":"1","adv":77,"agent":0,"cluster":0,"price_micros":5000000,"pctr":0.01,"pcvr":0.05}' >> "$T/events.jsonl"
if "$RTB" fit --events "$T/events.jsonl" --bidder-config "$T/bidder.yaml" \
    --out "$T/bad.json" 2> "$T/err.txt"; then
  echo "rtb fit accepted an unknown advertiser" >&2; exit 1
fi
grep -q "advertiser 77" "$T/err.txt" || { cat "$T/err.txt" >&2; exit 1; }
[[ ! -e $T/bad.json ]] || { echo "rtb fit wrote a world from refused events" >&2; exit 1; }
if "$RTB" fit --events "$T/none.jsonl" --bidder-config "$T/bidder.yaml" --out "$T/bad.json" \
    2> "$T/err.txt"; then
  echo "rtb fit accepted a missing file" >&2; exit 1
fi
grep -q "none.jsonl" "$T/err.txt" || { cat "$T/err.txt" >&2; exit 1; }
echo "fit_test: ok"
