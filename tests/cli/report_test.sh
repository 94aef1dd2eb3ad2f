#!/usr/bin/env bash
# rtb report end to end: `rtb serve` with a 50/50 A/B test on the default config's three
# advertisers; a client bids for 300 users and sends billing and conversion notices; then
#   - `rtb report --brokers` (the serve's embedded Kafka) books each arm's spend and revenue
#     exactly as the notices charged them, both arms present, users split about evenly;
#   - the same events as a file (dumped by `rtb replay --dump`) give the same totals;
#   - a malformed line stops the report with file:line and exit 1, or is skipped and counted
#     with --skip-malformed; no events source is an error.
set -euo pipefail
RTB=$1
SRC=$2
T=$(mktemp -d)
source "$SRC/tests/cli/serve_lib.sh"
trap '[[ -n $SERVE ]] && kill $SERVE 2>/dev/null; rm -rf "$T"' EXIT
bidder_config "$T/bidder.yaml" -e "s#^  learned_share: .*#  learned_share: 0.5#"
grep -q "learned_share: 0.5" "$T/bidder.yaml"
start_serve "$T/bidder.yaml"

/usr/bin/python3 - "$PORT" "$T/expected.json" <<'PY'
import json, sys, urllib.request
port, out = sys.argv[1], sys.argv[2]
base = "http://127.0.0.1:%s" % port
want = {"l": {"spend": 0, "revenue": 0, "users": set()}, "m": {"spend": 0, "revenue": 0, "users": set()}}
for u in range(300):
    req = {"id": "r%d" % u, "imp": [{"id": "1", "banner": {"w": 300, "h": 250}}],
           "site": {"domain": "news.example"}, "user": {"id": "user-%d" % u}, "tmax": 500}
    r = urllib.request.urlopen(urllib.request.Request(
        base + "/openrtb2/bid", json.dumps(req).encode(), {"Content-Type": "application/json"}))
    if r.status != 200:
        continue
    for sb in json.load(r)["seatbid"]:
        for b in sb["bid"]:
            burl = b["burl"]
            arm = burl.split("&ab=")[1][0]
            want[arm]["users"].add(u)
            price = round(b["price"] * 0.6, 6)
            p = urllib.request.urlopen(burl.replace("${AUCTION_PRICE}", "%.6f" % price))
            assert p.status == 200
            want[arm]["spend"] += (round(price * 1e6) + 500) // 1000
            conv = burl.replace("/notice/billing", "/notice/conversion").replace(
                "&price=${AUCTION_PRICE}", "") + "&value=12.5"
            assert urllib.request.urlopen(conv).status == 200
            want[arm]["revenue"] += 12_500_000
json.dump({a: {"spend": w["spend"] / 1e6, "revenue": w["revenue"] / 1e6, "users": len(w["users"])}
           for a, w in want.items()}, open(out, "w"))
PY

# Every event acknowledged by the brokers before they are read.
metric() { curl -s "http://127.0.0.1:$PORT/metrics" | sed -nE "s/^rtb_kafka_events_$1_total ([0-9]+)$/\1/p"; }
all_acked() { [[ $(metric acked) == "$(metric logged)" ]]; }
wait_until 10 all_acked || { echo "events not acknowledged: $(metric acked) of $(metric logged)"; exit 1; }
"$RTB" report --brokers "$BROKERS" --bidder-config "$T/bidder.yaml" --out "$T/topic" --quiet
"$RTB" replay --format events --brokers "$BROKERS" --topic rtb.events --dump "$T/events.jsonl" \
  --json > /dev/null
"$RTB" report --events "$T/events.jsonl" --bidder-config "$T/bidder.yaml" --out "$T/file" > "$T/file.txt"
grep -q "learned / manual" "$T/file.txt"

/usr/bin/python3 - "$T" <<'PY'
import json, sys
t = sys.argv[1]
want = json.load(open(t + "/expected.json"))
for src in ("topic", "file"):
    r = json.load(open("%s/%s/report.json" % (t, src)))
    assert r["learned_share"] == 0.5, r["learned_share"]
    for key, arm in (("l", "learned"), ("m", "manual")):
        got = r["arms"][arm]
        assert abs(got["spend"] - want[key]["spend"]) < 1e-6, (src, arm, got, want[key])
        assert abs(got["revenue"] - want[key]["revenue"]) < 1e-6, (src, arm, got, want[key])
        assert got["budget"] == {"learned": 3750.0, "manual": 3750.0}[arm], got
        for k in ("clicks", "conversions", "roi", "cpa", "cpc", "cost", "win_rate"):
            assert k in got, (arm, k)
    assert r["comparison"]["revenue_ratio"]["ratio"] is not None
    assert len(r["days"]) == 1 and len(r["days"][0]["arms"]["learned"]["advertisers"]) == 3
    html = open("%s/%s/report.html" % (t, src)).read()
    assert "<svg" in html and "manual budget" in html
users = want["l"]["users"] + want["m"]["users"]
assert 0.35 < want["l"]["users"] / users < 0.65, want
print("report ok: learned spend %.4f revenue %.1f (%d users), manual spend %.4f revenue %.1f (%d users)" % (
    want["l"]["spend"], want["l"]["revenue"], want["l"]["users"],
    want["m"]["spend"], want["m"]["revenue"], want["m"]["users"]))
PY

# Bad input: a malformed line is named by file and line, and nothing is written.
cp "$T/events.jsonl" "$T/bad.jsonl"
echo '{"v":1,"type":"billing","arm":"control","eid":"x","ts":1}' >> "$T/bad.jsonl"
LINE=$(wc -l < "$T/bad.jsonl")
if "$RTB" report --events "$T/bad.jsonl" --bidder-config "$T/bidder.yaml" --out "$T/bad" 2> "$T/bad.err"; then
  echo "a malformed line was accepted"; exit 1
fi
grep -q "bad.jsonl:$LINE: event: arm is neither learned nor manual" "$T/bad.err" || { cat "$T/bad.err"; exit 1; }
[[ ! -e $T/bad/report.json ]]
"$RTB" report --events "$T/bad.jsonl" --bidder-config "$T/bidder.yaml" --out "$T/skip" --skip-malformed \
  --quiet 2> "$T/skip.err"
grep -q "skipped 1 malformed lines, the first: .*bad.jsonl:$LINE:" "$T/skip.err"
/usr/bin/python3 -c "
import json, sys
a = json.load(open('$T/file/report.json')); b = json.load(open('$T/skip/report.json'))
assert b['events']['malformed_skipped'] == 1 and a['arms'] == b['arms'], (a['arms'], b['arms'])"
if "$RTB" report --bidder-config "$T/bidder.yaml" --out "$T/none" 2> "$T/none.err"; then
  echo "no events source was accepted"; exit 1
fi
grep -q "give --events FILE or --brokers HOSTS" "$T/none.err"
echo "bad input ok"
