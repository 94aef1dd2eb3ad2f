#!/usr/bin/env bash
# A real full disk under `rtb serve`'s state store (a small tmpfs filled but for a few KB):
#   - the bidder books billings until one cannot be persisted: that one is answered 503;
#   - /readyz answers 503 within a second, /healthz stays 200;
#   - bids stop (204, x-rtb-nobid-reason: state_unavailable), test requests are still answered;
#   - one error line says so (however many notices and bids fail meanwhile);
#   - space freed, the bidder is ready and bidding again on its own, says so in one info line, and
#     the refused billing, sent again, is booked once.
# Needs to mount a tmpfs (root, or CAP_SYS_ADMIN): without it the test fails saying so.
set -u
RTB=$1
SRC=$2
T=$(mktemp -d)
source "$SRC/tests/cli/serve_lib.sh"
DISK=$T/disk
mkdir -p "$DISK"
cleanup() {
  [[ -n $SERVE ]] && kill "$SERVE" 2>/dev/null && wait "$SERVE" 2>/dev/null
  umount "$DISK" 2>/dev/null
  rm -rf "$T"
}
trap cleanup EXIT
mount -t tmpfs -o size=16m tmpfs "$DISK" ||
  fail "cannot mount a tmpfs at $DISK (this test needs root or CAP_SYS_ADMIN)"
# The disk filled to its last byte (large blocks, then small ones), then GAP bytes freed: the
# bidder starts (its store opens) and books notices until that room is used up. RocksDB
# preallocates its write-ahead log where it can, so a disk that fills under a running bidder is
# met at the next log file or flush; a small room met at once is the same failure, sooner.
GAP=${GAP:-65536}
dd if=/dev/zero of="$DISK/filler" bs=1M 2>/dev/null
dd if=/dev/zero of="$DISK/filler2" bs=4k 2>/dev/null
dd if=/dev/zero of="$DISK/filler3" bs=64 2>/dev/null
truncate -s "-$GAP" "$DISK/filler"
echo "disk: $(df --output=avail -B1 "$DISK" | tail -1) bytes free before the bidder starts"
bidder_config "$T/bidder.yaml" -e "s#^state_path: .*#state_path: $DISK/state#"
start_serve "$T/bidder.yaml"
BASE=http://127.0.0.1:$PORT
status() { curl -s -o /dev/null -w '%{http_code}' "$BASE$1"; }
ready_is() { [[ $(status /readyz) == "$1" ]]; }
[[ $(status /readyz) == 200 ]] || fail "not ready at start"
errors_before=$(grep -c ' error rtb-serve\[' "$T/serve.log")

# Bids and their billings (at 60% of the price) until a billing cannot be persisted: 503. Prints
# the bids made, the billings booked and the refused billing's URL.
/usr/bin/python3 - "$PORT" > "$T/fill.txt" <<'PY' || fail "$(cat "$T/fill.txt")"
import http.client, json, sys
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=10)
def get(path):
    c.request("GET", path)
    r = c.getresponse()
    r.read()
    return r.status
booked = 0
for i in range(20000):
    req = {"id": "fill-%d" % i, "imp": [{"id": "1", "banner": {"w": 300, "h": 250}}],
           "site": {"domain": "news.example"}, "user": {"id": "user-%d" % i}, "tmax": 500}
    c.request("POST", "/openrtb2/bid", json.dumps(req), {"Content-Type": "application/json"})
    r = c.getresponse()
    body = r.read()
    if r.status != 200:
        print("FAIL: bid %d answered %d (%s) before a billing failed" % (
            i, r.status, r.getheader("x-rtb-nobid-reason")))
        sys.exit(1)
    b = json.loads(body)["seatbid"][0]["bid"][0]
    burl = b["burl"].replace("${AUCTION_PRICE}", "%.6f" % round(b["price"] * 0.6, 6))
    path = burl[burl.index("/notice"):]
    st = get(path)
    if st == 503:
        print(i + 1, booked, path)
        sys.exit(0)
    if st != 200:
        print("FAIL: billing %d answered %d" % (i, st))
        sys.exit(1)
    booked += 1
print("FAIL: 20000 billings booked on a full disk")
sys.exit(1)
PY
read -r BIDS BOOKED BURL < "$T/fill.txt"
BURL=$BASE$BURL
echo "ok: $BOOKED billings booked in the disk's last $GAP bytes, the next one 503"

bid() {  # ID [TEST] -> the answer's status, then the no-bid reason or the billing URL
  /usr/bin/python3 - "$BASE" "$1" "${2:-0}" <<'PY'
import json, sys, urllib.request, urllib.error
base, rid, test = sys.argv[1], sys.argv[2], int(sys.argv[3])
req = {"id": rid, "imp": [{"id": "1", "banner": {"w": 300, "h": 250}}], "test": test,
       "site": {"domain": "news.example"}, "user": {"id": "user-" + rid}, "tmax": 500}
try:
    r = urllib.request.urlopen(urllib.request.Request(
        base + "/openrtb2/bid", json.dumps(req).encode(), {"Content-Type": "application/json"}))
except urllib.error.HTTPError as e:
    r = e
body = r.read()
if r.status != 200:
    print(r.status, r.headers.get("x-rtb-nobid-reason", ""))
    sys.exit(0)
b = json.loads(body)["seatbid"][0]["bid"][0]
print(200, b["burl"])
PY
}
start=$(date +%s.%N)
wait_until 1 ready_is 503 || fail "/readyz not 503 within a second"
echo "ok: /readyz 503 $(python3 -c "print(f'{$(date +%s.%N) - $start:.3f}')") s after the failed write"
[[ $(status /healthz) == 200 ]] || fail "/healthz is not 200 while the disk is full"
for i in 2 3 4; do
  read -r code why < <(bid "fd-$i")
  [[ $code == 204 && $why == state_unavailable ]] || fail "bid $i while full: $code $why"
  [[ $(curl -s -o /dev/null -w '%{http_code}' "$BURL") == 503 ]] || fail "billing retry $i not 503"
done
read -r code _ < <(bid fd-test 1)
[[ $code == 200 ]] || fail "a test request was not answered while full ($code)"
echo "ok: no bids (state_unavailable), billing 503, test requests answered"
errors=$(($(grep -c ' error rtb-serve\[' "$T/serve.log") - errors_before))
[[ $errors == 1 ]] || fail "$errors error lines while the disk was full (want one): $(grep ' error rtb-serve\[' "$T/serve.log")"
echo "ok: one error line: $(grep ' error rtb-serve\[' "$T/serve.log" | tail -1 | cut -d' ' -f4- | cut -c1-160)"

# Space again: ready and bidding on its own; the billing books once.
rm -f "$DISK"/filler*; freed=$(date +%s.%N)
wait_until 30 ready_is 200 || fail "not ready again after space returned"
echo "ready $(python3 -c "print(f'{$(date +%s.%N) - $freed:.1f}')") s after space returned"
read -r code _ < <(bid fd-5)
[[ $code == 200 ]] || fail "no bid after space returned ($code)"
[[ $(curl -s -o /dev/null -w '%{http_code}' "$BURL") == 200 ]] || fail "the billing, sent again, not 200"
applied() {
  curl -s "$BASE/metrics" | sed -nE 's/^rtb_notices_total\{type="billing",result="applied"\} ([0-9]+)$/\1/p'
}
[[ $(applied) == $((BOOKED + 1)) ]] || fail "billings applied: $(applied) (want $((BOOKED + 1)))"
grep -q ' info rtb-serve.*state store persists' "$T/serve.log" || fail "no info line on the recovery"
echo "ok: ready again, bidding, the billing booked once: $(grep ' info rtb-serve.*state store persists' "$T/serve.log" | tail -1 | cut -d' ' -f4- | cut -c1-160)"
