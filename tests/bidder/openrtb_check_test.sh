#!/usr/bin/env bash
# Runs tests/tools/openrtb_check.py (the exchange's view) against `rtb serve`, with every
# request of tests/fixtures/openrtb.
set -u
RTB=$1
SRC=$2
T=$(mktemp -d)
source "$SRC/scripts/serve_lib.sh"
PORT=$(free_port)
cd "$T"
sed "s#^state_path: .*#state_path: $T/state#; s#^  spill_path: .*#  spill_path: $T/spill.jsonl#; s#^drain_ms: .*#drain_ms: 0#" \
  "$SRC/configs/bidder/default.yaml" >"$T/bidder.yaml"
"$RTB" serve --config "$T/bidder.yaml" --listen 127.0.0.1:$PORT >"$T/log" 2>&1 &
PID=$!
trap 'kill $PID 2>/dev/null; wait $PID 2>/dev/null; rm -rf "$T"' EXIT
wait_until 10 curl -sf "http://127.0.0.1:$PORT/healthz" -o /dev/null ||
  { echo "rtb serve did not start"; cat "$T/log"; exit 1; }
python3 "$SRC/tests/tools/openrtb_check.py" 127.0.0.1 $PORT /openrtb2/bid \
  "$SRC/tests/fixtures/openrtb/2.5" "$SRC/tests/fixtures/openrtb/2.6"
rc=$?
kill -TERM $PID
wait $PID
echo "server exit: $?; $(tail -1 "$T/log")"
exit $rc
