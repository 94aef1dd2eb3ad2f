#!/usr/bin/env bash
# Regression: with file descriptors exhausted (ulimit -n 256, 400 idle connections) the accept
# loop spun at 100% CPU, and nothing checked max_connections against the descriptor limit.
# 1. max_connections above the limit: `rtb serve` refuses to start, saying why.
# 2. Descriptors exhausted by idle clients (the limit lowered under the running server): the
#    server backs off (little CPU) and still answers once they leave.
set -u
RTB=$1
SRC=$2
T=$(mktemp -d)
source "$SRC/scripts/serve_lib.sh"
PORT=$(free_port)
fail() { echo "FAIL: $*"; exit 1; }
base() {  # max_connections -> config file
  sed -e "s#^state_path: .*#state_path: $T/state#" -e "s#^  spill_path: .*#  spill_path: $T/spill.jsonl#" \
      -e "s#^max_connections: .*#max_connections: $1#" -e "s#^threads: .*#threads: 1#" -e "s#^drain_ms: .*#drain_ms: 0#" \
      "$SRC/configs/bidder/default.yaml" >"$T/bidder-$1.yaml"
  echo "$T/bidder-$1.yaml"
}
cfg=$(base 4096)
( ulimit -n 256; exec timeout 10 "$RTB" serve --config "$cfg" --listen 127.0.0.1:$PORT ) >"$T/refused.log" 2>&1
rc=$?
[[ $rc -ne 0 && $rc -ne 124 ]] || fail "started with max_connections 4096 under ulimit -n 256 (exit $rc)"
grep -q "max_connections 4096 needs" "$T/refused.log" || fail "no reason given: $(cat "$T/refused.log")"
echo "ok: refused to start: $(grep -o 'max_connections 4096 needs.*' "$T/refused.log" | head -1)"

# The limit lowered under a running server (as something else eating descriptors would): the
# accept loop then meets EMFILE.
cfg=$(base 512)
( ulimit -n 1024; exec "$RTB" serve --config "$cfg" --listen 127.0.0.1:$PORT ) >"$T/serve.log" 2>&1 &
PID=$!
trap 'kill $PID 2>/dev/null; wait $PID 2>/dev/null; rm -rf "$T"' EXIT
healthy() { curl -sf "http://127.0.0.1:$PORT/healthz" -o /dev/null; }
wait_until 10 healthy || fail "rtb serve did not start: $(cat "$T/serve.log")"
prlimit --pid "$PID" --nofile=256:256 || fail "prlimit"
ticks() { awk '{print $14 + $15}' /proc/$PID/stat; }
/usr/bin/python3 - "$PORT" "$PID" "$T/serve.log" <<'PY' || exit 1
import os, socket, sys, time
port, pid, log = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
hz = os.sysconf("SC_CLK_TCK")
def cpu():
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return int(f[11]) + int(f[12])
socks = []
for _ in range(600):  # far more than the server's descriptors
    s = socket.socket()
    s.setblocking(False)
    try: s.connect(("127.0.0.1", port))
    except BlockingIOError: pass
    socks.append(s)
# The server has met EMFILE once it says it backs off; then its CPU over 3 s.
deadline = time.time() + 10
while "accept:" not in open(log).read():
    if time.time() > deadline:
        print("FAIL: no backoff was logged"); sys.exit(1)
    time.sleep(0.05)
c0 = cpu(); time.sleep(3.0); c1 = cpu()
share = (c1 - c0) / hz / 3.0
print(f"server CPU with descriptors exhausted: {100 * share:.0f}% of a core")
if share > 0.25:
    print("FAIL: the accept loop spins"); sys.exit(1)
for s in socks: s.close()
PY
wait_until 5 healthy || fail "not answering after the clients left"
grep -q "accept:" "$T/serve.log" || fail "no backoff was logged"
echo "ok: backed off ($(grep -c 'accept:' "$T/serve.log") warning lines), serving again"
