#!/usr/bin/env bash
# The three long-running processes watched as a deployment would watch them (docs/metrics.md):
# one `rtb kafka` cluster shared by `rtb serve` (leases on), `rtb budget --admin-listen` and
# `rtb learn --admin-listen` (wall-clock steps of 2 s). A client bids and bills so that every
# family has its series. Checks:
#   - `promtool check metrics` passes on each process's /metrics (Prometheus's own linter:
#     counters end in _total, base units, HELP and TYPE for every family);
#   - each page has rtb_build_info with this build's version and commit, and the process_*
#     families; /healthz answers 200 "ok" on the admin ports, another path 404;
#   - every metric the alert rules (deploy/prometheus/rtb-alerts.yml) and the Grafana dashboard
#     (deploy/grafana/rtb-dashboard.json) name is on one of the three pages;
#   - the alert rules pass `promtool check rules` and their unit tests (`promtool test rules`);
#   - at 5,000 advertisers over 10 agents a bidder's page stays bounded: its series are counted
#     and must match the per-agent sums plus metrics_advertisers (100) advertisers' series.
# Usage: metrics_test.sh RTB SRC
set -euo pipefail
RTB=$1
SRC=$2
T=$(mktemp -d)
source "$SRC/scripts/serve_lib.sh"
KAFKA= SERVE= BUD= LEARN= BIG=
gone() { ! kill -0 "$1" 2> /dev/null; }
cleanup() {
  for p in $LEARN $BUD $SERVE $BIG; do kill "$p" 2>/dev/null || true; done
  # Each gets 15 s to drain and stop, then it is killed.
  for p in $LEARN $BUD $SERVE $BIG; do wait_until 15 gone "$p" || kill -9 "$p" 2> /dev/null || true; done
  for p in $LEARN $BUD $SERVE $BIG; do wait "$p" 2>/dev/null || true; done
  [[ -z $KAFKA ]] || { kill "$KAFKA" 2>/dev/null || true; wait "$KAFKA" 2>/dev/null || true; }
  rm -rf "$T"
}
trap cleanup EXIT
fail() {
  echo "metrics: $*" >&2
  tail -n 5 "$T"/*.log >&2 || true
  exit 1
}
command -v promtool > /dev/null || fail "promtool is missing (scripts/setup.sh installs Debian's prometheus)"

# The alert rules and their unit tests first: they need no process.
(cd "$SRC/deploy/prometheus" && promtool check rules rtb-alerts.yml && promtool test rules rtb-alerts.test.yml) \
  > "$T/rules.txt" 2>&1 || { cat "$T/rules.txt"; fail "the alert rules do not pass promtool"; }
grep -q "SUCCESS: 11 rules found" "$T/rules.txt" || { cat "$T/rules.txt"; fail "not 11 rules"; }
echo "metrics: alert rules checked and their unit tests pass"

PORT=$(free_port) PB=$(free_port) PL=$(free_port)
local_bidder_config "$SRC/configs/bidder/default.yaml" "$T/a.yaml" "$PORT" "$T/a" \
  -e "s#^  learned_share: .*#  learned_share: 0.5#" \
  -e "s#^  steps_per_day: .*#  steps_per_day: 43200#" -e "s#^  step_seconds: .*#  step_seconds: 2#" \
  -e "s#^  enabled: false .*#  enabled: true#" -e "s#^  name: \"\" .*#  name: bidder-a#"
for want in "learned_share: 0.5" "steps_per_day: 43200" "step_seconds: 2" "enabled: true" "name: bidder-a"; do
  grep -q "^ *$want" "$T/a.yaml" || fail "the test's bidder config lacks $want (configs/bidder/default.yaml changed?)"
done
"$RTB" kafka --market "$T/a.yaml" > "$T/kafka.addr" 2> "$T/kafka.log" &
KAFKA=$!
wait_until 10 test -s "$T/kafka.addr" || fail "rtb kafka did not start"
BROKERS=$(head -1 "$T/kafka.addr")
sed -i "s#^  brokers: .*#  brokers: $BROKERS#" "$T/a.yaml"
"$RTB" serve --config "$T/a.yaml" 2> "$T/serve.log" &
SERVE=$!
"$RTB" budget --market "$T/a.yaml" --admin-listen "127.0.0.1:$PB" 2> "$T/budget.log" &
BUD=$!
sed -e "s#^simulator_config: .*#simulator_config: $SRC/configs/simulator/default.yaml#" \
    -e "s#^  clock: .*#  clock: wall#" -e "s#^  step_grace_ms: .*#  step_grace_ms: 300#" \
    "$SRC/configs/learner/default.yaml" > "$T/learner.yaml"
grep -q "^  clock: wall" "$T/learner.yaml" || fail "the test's learner config is not on the wall clock"
"$RTB" learn --config "$T/learner.yaml" --market "$T/a.yaml" --brokers "$BROKERS" --state-dir "$T/learner" \
  --admin-listen "127.0.0.1:$PL" --quiet 2> "$T/learn.log" &
LEARN=$!
wait_until 20 curl -sf "http://127.0.0.1:$PORT/readyz" -o /dev/null || fail "the bidder is not ready"
wait_until 60 curl -sf "http://127.0.0.1:$PL/healthz" -o /dev/null || fail "no learner admin port"
wait_until 20 curl -sf "http://127.0.0.1:$PB/healthz" -o /dev/null || fail "no coordinator admin port"

# Bids and their billing until the learner has published a table and closed a step, and the
# coordinator holds the day's budgets.
/usr/bin/python3 - "$PORT" "$PL" "$PB" <<'PY' || fail "the market did not get going"
import json, sys, time, urllib.request
port, pl, pb = sys.argv[1:4]
def page(p):
    return urllib.request.urlopen("http://127.0.0.1:%s/metrics" % p).read().decode()
def value(text, name):  # summed over its labels
    v = [float(l.split()[-1]) for l in text.splitlines() if l.startswith((name + " ", name + "{"))]
    return sum(v) if v else None
n, deadline = 0, time.time() + 90
while time.time() < deadline:
    req = {"id": "r%d" % n, "imp": [{"id": "1", "banner": {"w": 300, "h": 250}}],
           "site": {"domain": "news.example"}, "user": {"id": "u%d" % (n % 50)}, "tmax": 500}
    n += 1
    r = urllib.request.urlopen(urllib.request.Request(
        "http://127.0.0.1:%s/openrtb2/bid" % port, json.dumps(req).encode(),
        {"Content-Type": "application/json"}))
    if r.status == 200:
        for sb in json.load(r)["seatbid"]:
            for b in sb["bid"]:
                urllib.request.urlopen(b["burl"].replace("${AUCTION_PRICE}", "%.6f" % (b["price"] * 0.5)))
    if n % 20 == 0:
        learner, coordinator = page(pl), page(pb)
        if ((value(learner, "rtb_learner_steps_closed_total") or 0) >= 1
                and (value(learner, "rtb_learner_tables_published_total") or 0) >= 1
                and (value(coordinator, "rtb_coordinator_budgets") or 0) >= 1
                and (value(coordinator, "rtb_coordinator_spent_micros") or 0) > 0):
            print("metrics: %d requests until a step closed and the coordinator saw spend" % n)
            sys.exit(0)
    time.sleep(0.01)
sys.exit(1)
PY
# The bidder's Kafka statistics come every statistics.interval.ms: wait for the broker families.
wait_until 30 sh -c "curl -s http://127.0.0.1:$PORT/metrics | grep -q '^rtb_kafka_broker_state'" ||
  fail "no broker statistics on the bidder's page"
curl -sf "http://127.0.0.1:$PORT/metrics" > "$T/serve.prom"
curl -sf "http://127.0.0.1:$PB/metrics" > "$T/budget.prom"
curl -sf "http://127.0.0.1:$PL/metrics" > "$T/learn.prom"
COMMIT=$("$RTB" --version | sed -nE 's/.*\(commit ([^)]+)\).*/\1/p')
VERSION=$("$RTB" --version | sed -nE 's/^rtb ([^ ]+) .*/\1/p')
for p in serve budget learn; do
  promtool check metrics < "$T/$p.prom" > "$T/$p.lint" 2>&1 || { cat "$T/$p.lint"; fail "rtb $p: promtool check metrics"; }
  grep -qxF "rtb_build_info{version=\"$VERSION\",commit=\"$COMMIT\"} 1" "$T/$p.prom" ||
    fail "rtb $p: no rtb_build_info of $VERSION $COMMIT"
  for f in process_cpu_seconds_total process_resident_memory_bytes process_open_fds \
      process_max_fds process_start_time_seconds; do
    grep -qE "^$f [0-9.e+]+$" "$T/$p.prom" || fail "rtb $p: no $f"
  done
  echo "metrics: rtb $p: $(grep -vc '^#' "$T/$p.prom") series, promtool check metrics clean"
done
for p in "$PB" "$PL"; do
  [[ $(curl -s "http://127.0.0.1:$p/healthz") == ok ]] || fail "admin port $p: /healthz is not ok"
  [[ $(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$p/nowhere") == 404 ]] ||
    fail "admin port $p: another path is not 404"
done

# Every metric the alerts and the dashboard read is on a page.
/usr/bin/python3 - "$SRC" "$T" <<'PY' || fail "the alerts or the dashboard name metrics no process shows"
import json, re, sys
src, t = sys.argv[1:3]
names = set()
for p in ("serve", "budget", "learn"):
    for line in open("%s/%s.prom" % (t, p)):
        if line.startswith("# TYPE "):  # a family with no series yet (no refusal so far) counts
            names.add(line.split()[2])
        elif not line.startswith("#"):
            names.add(re.match(r"[a-zA-Z_:][a-zA-Z0-9_:]*", line).group(0))
exprs = re.findall(r"expr: (.*)", open(src + "/deploy/prometheus/rtb-alerts.yml").read())
dash = json.load(open(src + "/deploy/grafana/rtb-dashboard.json"))
exprs += [t["expr"] for p in dash["panels"] for t in p.get("targets", [])]
keywords = {"sum", "by", "rate", "increase", "deriv", "histogram_quantile", "time", "and", "or",
            "le", "instance", "endpoint", "reason", "type", "result", "agent", "arm", "where", "job",
            "humanizeDuration", "bool"}
used = set()
for e in exprs:
    e = re.sub(r'"[^"]*"', "", e)  # label values
    e = re.sub(r"\[[^\]]*\]", "", e)  # ranges
    e = re.sub(r"\b[0-9][0-9.e+-]*", "", e)  # numbers (1e6)
    used |= {w for w in re.findall(r"[a-zA-Z_:][a-zA-Z0-9_:]*", e) if w not in keywords}
missing = sorted(u for u in used if u not in names)
if missing:
    print("named but on no page:", missing)
    sys.exit(1)
print("metrics: the %d alert and dashboard queries read %d metrics, all on the pages" % (len(exprs), len(used)))
PY

# 5,000 advertisers over 10 agents: the bidder's page stays bounded.
/usr/bin/python3 - "$SRC/configs/bidder/default.yaml" "$T/big.yaml" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
head = text[:text.index("\nadvertisers:")]
lines = ["advertisers:"]
for k in range(5000):
    lines += ['  - {id: %d, name: "campaign %d", agent: %d, bid: 0.50, daily_budget: 100.0, '
              'conversion_value: 0, creatives: [{crid: c%d, adomain: [c%d.example], w: 0, h: 0, '
              'markup: "<div>%d</div>"}]}' % (k + 1, k + 1, k % 10, k, k, k)]
open(sys.argv[2], "w").write(head + "\n" + "\n".join(lines) + "\n")
PY
PG=$(free_port)
local_bidder_config "$T/big.yaml" "$T/big2.yaml" "$PG" "$T/big" -e "s#^  learned_share: .*#  learned_share: 0.5#"
"$RTB" serve --config "$T/big2.yaml" 2> "$T/big.log" &
BIG=$!
wait_until 30 curl -sf "http://127.0.0.1:$PG/metrics" -o "$T/big.prom" || fail "the 5,000-advertiser bidder did not start"
promtool check metrics < "$T/big.prom" > /dev/null 2>&1 || fail "the 5,000-advertiser page fails promtool"
python3 - "$T/big.prom" <<'PY' || fail "the 5,000-advertiser page is not bounded as stated"
import collections, re, sys
fam = collections.Counter()
for line in open(sys.argv[1]):
    if not line.startswith("#"):
        fam[re.match(r"[a-zA-Z_:][a-zA-Z0-9_:]*", line).group(0)] += 1
total = sum(fam.values())
per_agent = sum(n for f, n in fam.items() if f.startswith("rtb_agent_"))
per_adv = sum(n for f, n in fam.items() if f.startswith("rtb_advertiser_"))
print("metrics: 5,000 advertisers, 10 agents: %d series (%d per agent and arm, %d for the first "
      "100 advertisers, %d others)" % (total, per_agent, per_adv, total - per_agent - per_adv))
assert per_agent == 3 * 10 * 2, per_agent
assert per_adv == 3 * 100 * 2, per_adv
assert total < 1000, total
PY
