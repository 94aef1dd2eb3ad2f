#!/usr/bin/env bash
# `cmake --install` into a temporary prefix, then every long-running process run from it, from an
# empty folder, on the configs it installed (never the source or build tree):
#   - rtb --version names the version and the commit;
#   - rtb serve (its default config from <prefix>/share/rtb, the port from RTB_LISTEN) is ready;
#   - rtb learn (the installed learner config and rtb-learner) joins serve's embedded Kafka and
#     closes a step's worth of startup, exit 0; rtb budget coordinates, and stops on SIGTERM, exit 0;
#   - the systemd units name the prefix and pass `systemd-analyze verify`.
set -u
BUILD=$1
SRC=$2
T=$(mktemp -d)
RTB=unused
source "$SRC/scripts/serve_lib.sh"
SERVE= BUDGET=
fail() { echo "FAIL: $*"; for f in "$T"/*.log; do [[ -f $f ]] && { echo "== $f"; tail -15 "$f"; }; done; exit 1; }
cleanup() {
  for p in $SERVE $BUDGET; do kill -9 "$p" 2>/dev/null; done
  wait 2>/dev/null
  rm -rf "$T"
}
trap cleanup EXIT
P=$T/prefix
cmake --install "$BUILD" --prefix "$P" > "$T/install.log" 2>&1 || fail "cmake --install"
for f in bin/rtb bin/rtb-learner share/rtb/configs/bidder/default.yaml \
    share/rtb/configs/learner/default.yaml share/rtb/schemas/events-v1.md share/doc/rtb/LICENSE \
    share/rtb/deploy/rtb-serve.service; do
  [[ -e $P/$f ]] || fail "not installed: $f"
done
mkdir "$T/run" && cd "$T/run" || fail "no folder"
"$P/bin/rtb" --version | grep -Eq '^rtb [0-9]+\.[0-9]+\.[0-9]+ \(commit ([0-9a-f]{12}(\+dirty)?|unknown)\)$' ||
  fail "--version: $("$P/bin/rtb" --version)"
"$P/bin/rtb" serve --help | grep -q -- "--config TEXT=$P/share/rtb/configs/bidder/default.yaml" ||
  fail "serve's default config is not the installed one: $("$P/bin/rtb" serve --help | grep -- --config)"

PORT=$(free_port)
RTB_LISTEN=127.0.0.1:$PORT RTB_NOTICE_BASE_URL=http://127.0.0.1:$PORT "$P/bin/rtb" serve \
  2> "$T/serve.log" &
SERVE=$!
ready() { [[ $(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/readyz") == 200 ]]; }
wait_until 30 ready || fail "the installed rtb serve is not ready"
BROKERS=$(sed -nE 's/.*embedded Kafka \(mock cluster, [0-9]+ brokers\) at ([^ ]+).*/\1/p' "$T/serve.log" | head -1)
[[ -n $BROKERS ]] || fail "no embedded Kafka address"
MARKET=$P/share/rtb/configs/bidder/default.yaml

timeout 120 "$P/bin/rtb" learn --brokers "$BROKERS" --market "$MARKET" --state-dir "$T/learner" \
  --max-steps 0 > "$T/learn.log" 2>&1 || fail "rtb learn from the prefix: exit $?"
grep -q "learner: market from $MARKET: 3 advertisers" "$T/learn.log" ||
  fail "rtb learn did not read the installed market"

"$P/bin/rtb" budget --market "$MARKET" --brokers "$BROKERS" > "$T/budget.log" 2>&1 &
BUDGET=$!
coordinating() { grep -q "coordinator: reads [0-9]* partitions of" "$T/budget.log"; }
wait_until 30 coordinating || fail "rtb budget did not start"
kill -TERM "$BUDGET"
wait "$BUDGET" || fail "rtb budget: exit $? on SIGTERM"
BUDGET=
kill -TERM "$SERVE"
wait "$SERVE" || fail "rtb serve: exit $? on SIGTERM"
SERVE=

for u in serve learn budget; do
  grep -q "^ExecStart=$P/bin/rtb $u" "$P/share/rtb/deploy/rtb-$u.service" ||
    fail "rtb-$u.service does not run $P/bin/rtb"
done
if command -v systemd-analyze > /dev/null; then
  systemd-analyze verify "$P"/share/rtb/deploy/*.service > "$T/verify.log" 2>&1 ||
    fail "systemd-analyze verify: $(cat "$T/verify.log")"
else
  fail "systemd-analyze is missing (scripts/setup.sh installs systemd)"
fi
echo "ok: installed in $P and run from it"
