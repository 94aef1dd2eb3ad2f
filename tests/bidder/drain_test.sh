#!/usr/bin/env bash
# SIGTERM under load (docs/deploy.md, "Stopping"): the load generator keeps sending through the
# drain window, as a load balancer does until its health checks see /readyz fail, then stops.
#   - /readyz answers 503 within a second of the signal; requests are still answered;
#   - no request fails (every status 200 or 204, no connection refused or cut);
#   - after the window: no new connections, the process flushes its events and exits 0 with
#     every event acknowledged by Kafka (none spilled, none dropped);
#   - a second SIGTERM during a drain stops the process at once, still exit 0.
set -u
RTB=$1
SRC=$2
LOADGEN=$3
RATE=${RATE:-2000}
T=$(mktemp -d)
source "$SRC/tests/cli/serve_lib.sh"
cleanup() {
  [[ -n $SERVE ]] && kill -9 "$SERVE" 2>/dev/null && wait "$SERVE" 2>/dev/null
  rm -rf "$T"
}
trap cleanup EXIT
BODY=$SRC/tests/fixtures/openrtb/2.6/bid-request-simple-banner.json
bidder_config "$T/bidder.yaml" -e "s#^drain_ms: .*#drain_ms: 5000#"
# Listening on every interface, the notice URLs need the address clients reach: one clear line.
if "$RTB" serve --config "$T/bidder.yaml" --listen "0.0.0.0:$PORT" 2> "$T/any.log"; then
  fail "serve on 0.0.0.0 without a reachable notice_base_url started"
fi
grep -q "notice URLs is http://0.0.0.0:$PORT, an address servers listen on" "$T/any.log" ||
  fail "no clear line: $(cat "$T/any.log")"
start_serve "$T/bidder.yaml"
BASE=http://127.0.0.1:$PORT
status() { curl -s -o /dev/null -w '%{http_code}' "$BASE$1"; }
ready_is() { [[ $(status /readyz) == "$1" ]]; }
answered() {  # requests the bidder answered so far (its /metrics)
  curl -s "$BASE/metrics" | awk '/^rtb_requests_total/ { n += $2 } END { print n + 0 }'
}
ready_is 200 || fail "not ready before the signal: $(status /readyz)"

# 4 s of load; the signal once about 1 s of it was answered: the rest falls in the 5 s window.
"$LOADGEN" --port "$PORT" --path /openrtb2/bid --body "$BODY" --connections 8 --seconds 4 \
  --rate "$RATE" --unique-ids 1 > "$T/load.txt" 2>&1 &
LOAD=$!
load_started() { (($(answered) >= RATE)); }
wait_until 10 load_started || fail "the load did not start"
kill -TERM "$SERVE"
SIGNALLED=$SECONDS
wait_until 1 ready_is 503 || fail "/readyz still $(status /readyz) a second after SIGTERM"
wait "$LOAD" || fail "loadgen: $(cat "$T/load.txt")"
echo "load through the drain: $(cat "$T/load.txt")"
# Every answer a 200 or a 204: no -1 (refused or cut), no 5xx.
statuses=$(sed -nE 's/.*; status (.*); latency.*/\1/p' "$T/load.txt")
[[ -n $statuses ]] || fail "no status line: $(cat "$T/load.txt")"
for s in $statuses; do
  [[ ${s%%:*} == 200 || ${s%%:*} == 204 ]] || fail "status ${s%%:*} during the drain ($statuses)"
done
wait "$SERVE"
rc=$?
SERVE=
[[ $rc -eq 0 ]] || fail "exit code $rc"
grep -q "draining: /readyz answers 503" "$T/serve.log" || fail "no drain line"
grep -q "drained: no new connections" "$T/serve.log" || fail "no end-of-drain line"
line=$(grep "stopped; events logged" "$T/serve.log") || fail "no stop line"
echo "stopped after $((SECONDS - SIGNALLED)) s: ${line#*stopped; }"
python3 - "$line" <<'PY' || fail "events not all acknowledged: $line"
import re, sys
n = dict((k.strip(), int(v)) for v, k in [(m[1], m[0]) for m in
         re.findall(r"(logged|acked|spilled|resent|left in the spill file|dropped) (\d+)", sys.argv[1])])
assert n["logged"] > 0 and n["acked"] == n["logged"], n
assert n["spilled"] == 0 and n["left in the spill file"] == 0 and n["dropped"] == 0, n
PY

# A second signal during the drain stops at once (well before drain_ms), still exit 0.
bidder_config "$T/bidder2.yaml" -e "s#^drain_ms: .*#drain_ms: 60000#" \
  -e "s#^state_path: .*#state_path: $T/state2#"
start_serve "$T/bidder2.yaml"
kill -TERM "$SERVE"
wait_until 2 ready_is 503 || fail "second bidder: /readyz still $(status /readyz)"
[[ $(status /healthz) == 200 ]] || fail "not answering while draining"
kill -TERM "$SERVE"
START=$SECONDS
wait "$SERVE"
rc=$?
SERVE=
[[ $rc -eq 0 ]] || fail "second signal: exit code $rc"
((SECONDS - START < 10)) || fail "a second signal took $((SECONDS - START)) s to stop"
grep -q "second stop signal: stopping at once" "$T/serve.log" || fail "no second-signal line"
echo "ok"
