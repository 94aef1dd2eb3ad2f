# Sourced by the bench scripts (from the repository root): starts `rtb serve` on a random
# loopback port with the default bidder config, budgets a benchmark cannot exhaust, state and
# spill in a temporary directory, and any further sed expressions given as arguments
# (e.g. -e "s#^bench_endpoints: .*#bench_endpoints: true#"). Sets T (the directory), PORT,
# PID and BODY (the request fixture); the server and T go at exit. RTB (default
# build/release/rtb) is the server binary and BIDDER_CONFIG (default configs/bidder/default.yaml)
# its base config: another build's, to compare two versions.
start_bench_server() {
  T=$(mktemp -d)
  PORT=$((20000 + RANDOM % 20000))
  sed -e "s#^state_path: .*#state_path: $T/state#" -e "s#^drain_ms: .*#drain_ms: 0#" -e "s#^  spill_path: .*#  spill_path: $T/spill.jsonl#" \
      -e "s#daily_budget: .*#daily_budget: 1000000000.0#" "$@" \
      "${BIDDER_CONFIG:-configs/bidder/default.yaml}" >"$T/bench.yaml"
  "${RTB:-build/release/rtb}" serve --config "$T/bench.yaml" --listen 127.0.0.1:$PORT >"$T/log" 2>&1 &
  PID=$!
  trap 'kill $PID 2>/dev/null; wait $PID 2>/dev/null; rm -rf "$T"' EXIT
  for _ in $(seq 50); do curl -sf http://127.0.0.1:$PORT/healthz >/dev/null && break; sleep 0.1; done
  BODY=tests/fixtures/openrtb/2.6/bid-request-simple-banner.json
  [[ -f $BODY ]] || BODY=tests/fuzz/corpus/openrtb/bid-request-simple-banner.json
}

# A wrk script (to FILE) that POSTs BODY with its own auction id per request (the last 16
# characters of the body's top-level "id": 8 hex digits of the start second, 8 of a counter), as
# an exchange's requests do: bid records and budget reservations are per auction, so a repeated
# id would leave them at one.
write_unique_id_lua() {
  cat >"$1" <<'LUA'
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local f = io.open(os.getenv("BODY"), "rb"); local body = f:read("*a"); f:close()
local pre, id, post = body:match('^(.-"id"%s*:%s*")([^"]*)(".*)$')
pre = pre .. id:sub(1, #id - 16)
local run, n = os.time(), 0
request = function()
  n = n + 1
  return wrk.format(nil, nil, nil, pre .. string.format("%08x%08x", run, n) .. post)
end
LUA
}
