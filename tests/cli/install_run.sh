#!/usr/bin/env bash
# The second half of install_test.sh: the installed processes, from an empty folder, on the
# installed configs. Usage: install_run.sh T BUILD SRC hidden|visible (hidden: the build and source
# trees are empty folders here).
set -u
T=$1
BUILD=$2
SRC=$3
P=$T/prefix
RTB=unused
source "$T/serve_lib.sh"
SERVE= BUDGET=
fail() { echo "FAIL: $*"; for f in "$T"/*.log; do [[ -f $f ]] && { echo "== $f"; tail -15 "$f"; }; done; exit 1; }
cleanup() {
  for p in $SERVE $BUDGET; do kill -9 "$p" 2>/dev/null; done
  wait 2>/dev/null
}
trap cleanup EXIT
if [[ $4 == hidden ]]; then
  [[ ! -e $BUILD/CMakeCache.txt && ! -e $SRC/CMakeLists.txt && -z $(ls -A "$SRC") ]] ||
    fail "the build and source trees are still visible"
  echo "install: the build tree ($BUILD) and the source tree ($SRC) are empty here"
fi
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
# The admin ports the scrape config (deploy/prometheus/prometheus.yml) reads.
grep -q -- "--admin-listen 127.0.0.1:9102" "$P/share/rtb/deploy/rtb-budget.service" || fail "rtb-budget.service: no admin port"
grep -q -- "--admin-listen 127.0.0.1:9103" "$P/share/rtb/deploy/rtb-learn.service" || fail "rtb-learn.service: no admin port"
if command -v systemd-analyze > /dev/null; then
  systemd-analyze verify "$P"/share/rtb/deploy/*.service > "$T/verify.log" 2>&1 ||
    fail "systemd-analyze verify: $(cat "$T/verify.log")"
else
  fail "systemd-analyze is missing (scripts/setup.sh installs systemd)"
fi
echo "ok: installed in $P and run from it"
