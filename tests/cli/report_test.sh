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
# Advertiser 2 (Globex Travel) runs a target-CPA campaign: at most 0.012 a conversion.
bidder_config "$T/bidder.yaml" -e "s#^  learned_share: .*#  learned_share: 0.5#" \
  -e "s#^    name: Globex Travel#    name: Globex Travel\n    goal: conversions\n    target_cpa: 0.012#"
grep -q "learned_share: 0.5" "$T/bidder.yaml"
grep -q "^    target_cpa: 0.012" "$T/bidder.yaml"
start_serve "$T/bidder.yaml"

/usr/bin/python3 - "$PORT" "$T/expected.json" <<'PY'
import json, sys, urllib.request
port, out = sys.argv[1], sys.argv[2]
base = "http://127.0.0.1:%s" % port
want = {"l": {"spend": 0, "revenue": 0, "users": set()}, "m": {"spend": 0, "revenue": 0, "users": set()}}
per_adv = {}  # (advertiser, arm) -> [spend micros, conversions]
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
            adv = int(burl.split("&adv=")[1].split("&")[0])
            acc = per_adv.setdefault("%d/%s" % (adv, arm), [0, 0])
            acc[0] += (round(price * 1e6) + 500) // 1000
            acc[1] += 1
            conv = burl.replace("/notice/billing", "/notice/conversion").replace(
                "&price=${AUCTION_PRICE}", "") + "&value=12.5"
            assert urllib.request.urlopen(conv).status == 200
            want[arm]["revenue"] += 12_500_000
doc = {a: {"spend": w["spend"] / 1e6, "revenue": w["revenue"] / 1e6, "users": len(w["users"])}
       for a, w in want.items()}
doc["per_adv"] = per_adv
json.dump(doc, open(out, "w"))
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
    # The target-CPA campaign against the client's own accounting (one day, so the summed score
    # is that day's): realised CPA and the AuctionNet score within 0.1%.
    g = {x["id"]: x for x in r["goals"]}
    assert g[2]["goal"] == "conversions" and g[2]["target_cpa"] == 0.012, g[2]
    assert g[1]["goal"] == "revenue", g[1]
    assert any("2/" + key in want["per_adv"] for key in ("l", "m")), want["per_adv"]  # it bought
    for key, arm in (("l", "learned"), ("m", "manual")):
        spend, conv = want["per_adv"].get("2/" + key, [0, 0])
        got = g[2]["arms"][arm]
        assert got["conversions"] == conv, (arm, got, conv)
        if conv == 0:
            continue
        cpa = spend / 1e6 / conv
        score = conv * min(1, (0.012 / cpa) ** 2)
        assert abs(got["realised"] - cpa) <= 1e-3 * cpa, (arm, got, cpa)
        assert abs(got["score"] - score) <= 1e-3 * score, (arm, got, score)
        assert got["met"] == (cpa <= 0.012), (arm, got, cpa)
    assert "## Goals" in open("%s/%s/report.md" % (t, src)).read()
    print("goal ok (%s): Globex Travel, CPA <= 0.012: learned %s, manual %s" % (src,
          {k: g[2]["arms"]["learned"][k] for k in ("realised", "score", "met")},
          {k: g[2]["arms"]["manual"][k] for k in ("realised", "score", "met")}))
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
# Events of another market: a config whose advertisers are 2 and 3 only (advertiser 1's id moved
# to 7) does not know advertiser 1's events: exit 1 naming it, and no report.
/usr/bin/python3 - "$T/bidder.yaml" "$T/other.yaml" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
open(sys.argv[2], "w").write(re.sub(r"(?m)^  - id: 1$", "  - id: 7", text, count=1))
PY
grep -q "^  - id: 7$" "$T/other.yaml"
N1=$(grep -v '"type":"nobid"' "$T/events.jsonl" | grep -c '"adv":1[,}]' || true)
[[ $N1 -gt 0 ]] || { echo "no events of advertiser 1 to test with"; exit 1; }
if "$RTB" report --events "$T/events.jsonl" --bidder-config "$T/other.yaml" --out "$T/other" 2> "$T/other.err"; then
  echo "events of an advertiser the config does not have were reported"; exit 1
fi
grep -q "$N1 events of advertisers .*other.yaml does not have: 1 ($N1); give --bidder-config the config the events were served with" "$T/other.err" ||
  { cat "$T/other.err"; exit 1; }
[[ ! -e $T/other/report.json ]]
# Asked to, it reports them, counted and not booked.
"$RTB" report --events "$T/events.jsonl" --bidder-config "$T/other.yaml" --out "$T/other" \
  --allow-unknown-advertisers --quiet
/usr/bin/python3 -c "
import json; r = json.load(open('$T/other/report.json'))
assert r['events']['unknown_advertiser'] == $N1, r['events']"
echo "bad input ok"
