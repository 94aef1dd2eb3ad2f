#!/usr/bin/env bash
# The budget coordinator, or Kafka, down for FAULT_S s (default 20) under load
# (docs/budget-leases.md, "Faults"):
# two `rtb serve` processes share the hand-written metro market's budgets through leases and one
# `rtb budget`; `rtb exchange --traffic` plays its traffic over both, with notices, while a paced
# load generator measures one bidder's latency. Five seconds in:
#   coordinator: the coordinator is SIGKILLed; FAULT_S s later a new one starts, waits for the
#     killed one to hand the market over (it never does: taken for dead after 3 s), and
#     rebuilds the leases from the grants topic;
#   freeze: the coordinator is SIGSTOPped for FAULT_S s (a frozen VM, a long pause); 5 s in a second
#     one starts, takes the frozen one for dead after its hand-over timeout (3 s), fences the
#     grants topic with its epoch and serves; when the first one runs again it must find itself
#     taken for dead and hand over, granting nothing beside the second;
#   kafka: every broker of the cluster (`rtb kafka`, a process of its own) goes down for FAULT_S s,
#     longer than the coordinator's heartbeat timeout (10 s) and the bidders' lease TTL (5 s);
#     the bidders' producer queues are small, so their events spill to disk and are re-sent.
# Checks:
#   the bidders answered every request of the exchange and of the probe (p99 under 100 ms, the
#   default tmax) throughout, and a day played after the fault spent (the market recovered);
#   no (day, arm, advertiser) spent more than its part of the budget (rtb report on the topic);
#   no event lost: each bidder's events logged = acked + spilled - resent, nothing left in the
#   spill file, none dropped (kafka: some spilled, all of them re-sent);
#   coordinator, freeze: the new coordinator took the first one for dead and restored leases
#     from the topic; freeze: the first one, running again, handed over; kafka: no live bidder
#   was taken for dead.
# Usage: lease_outage_test.sh RTB SRC [LOADGEN] [coordinator|freeze|kafka]
set -euo pipefail
RTB=$1
SRC=$2
LOADGEN=${3:-$(dirname "$RTB")/bench/loadgen}
MODE=${4:-coordinator}
FAULT_S=${FAULT_S:-20}  # the fault's length (kafka: over the TTL and the heartbeat timeout)
[[ $MODE == coordinator || $MODE == freeze || $MODE == kafka ]] ||
  { echo "unknown outage: $MODE" >&2; exit 2; }
OUT=$(mktemp -d)
[[ -z ${KEEP:-} ]] || echo "lease_outage: logs and reports kept in $OUT"
cd "$SRC"  # the market's files name each other from the repository root
M=configs/markets/metro
source "$SRC/scripts/serve_lib.sh"
PA=$(free_port)
PB=$(free_port)
A= B= BUD= BUD2= LG= KAFKA= EX=
cleanup() {
  touch "$OUT/stop"  # the traffic loop ends after its day
  [[ -z ${EX:-} ]] || kill "$EX" 2>/dev/null || true
  [[ -z $BUD ]] || kill -CONT "$BUD" 2>/dev/null || true
  for p in $LG $BUD $BUD2 $A $B; do kill "$p" 2>/dev/null || true; done
  # The cluster's host last, once its clients have gone.
  for p in $LG $BUD $BUD2 $A $B; do wait "$p" 2>/dev/null || true; done
  [[ -z $KAFKA ]] || kill "$KAFKA" 2>/dev/null || true
  wait 2>/dev/null || true
  [[ -n ${KEEP:-} ]] || rm -rf "$OUT"
}
trap cleanup EXIT
fail() {
  echo "lease_outage: $*" >&2
  tail -5 "$OUT"/*.log >&2 || true
  exit 1
}

# A bidder's lease TTL stays under the coordinator's heartbeat timeout (docs/budget-leases.md,
# section 4). For the Kafka outage both are shorter than the outage, and the producer queue is
# small enough that the outage's events overflow it into the spill file.
TTL_MS=45000 TIMEOUT_MS=60000 QUEUE=100000
[[ $MODE != kafka ]] || TTL_MS=5000 TIMEOUT_MS=10000 QUEUE=2000
# Every coordinator of a market has the same hand-over timeout: a frozen one fences itself
# within half of it, before the next one may take it for dead.
HANDOVER_MS=3000
[[ $MODE != kafka ]] || HANDOVER_MS=10000  # the default
leases() {  # NAME: the leases section, appended to a bidder config
  printf 'leases:\n  enabled: true\n  name: %s\n  check_every_ms: 20\n  report_every_ms: 200\n  horizon_ms: 2000\n  ttl_ms: %s\n' "$1" "$TTL_MS"
}
bidder_config() {  # NAME PORT [SED...]
  local name=$1 port=$2
  shift 2
  local_bidder_config "$M/bidder.yaml" "$OUT/$name.yaml" "$port" "$OUT/$name" \
    -e "s#^clusters_path: .*#clusters_path: $OUT/clusters.json#" \
    -e "s#^notice_secret: .*#notice_secret: lease-outage-shared-secret#" \
    -e "s#^  queue_max_messages: [0-9]*#  queue_max_messages: $QUEUE#" "$@"
  leases "$name" >> "$OUT/$name.yaml"
}
if [[ $MODE == kafka ]]; then
  # The cluster in a process of its own, so that it outlives and serves every other one.
  "$RTB" kafka --market "$M/bidder.yaml" > "$OUT/kafka.addr" 2> "$OUT/kafka.log" &
  KAFKA=$!
  wait_until 10 test -s "$OUT/kafka.addr" || true
  BROKERS=$(head -1 "$OUT/kafka.addr")
  [[ -n $BROKERS ]] || fail "rtb kafka did not start"
  bidder_config a "$PA" -e "s#^  brokers: .*#  brokers: $BROKERS#"
else
  bidder_config a "$PA"
fi
"$RTB" exchange --traffic "$M/traffic.yaml" --market "$OUT/a.yaml" \
  --write-clusters "$OUT/clusters.json" --days 0 > /dev/null
if [[ $MODE == kafka ]]; then
  "$RTB" serve --config "$OUT/a.yaml" 2> "$OUT/a.log" &
  A=$!
else
  serve_start "$OUT/a.yaml" "$PA" "$OUT/a.log" || fail "bidder a did not start"
  A=$SERVE
fi
bidder_config b "$PB" -e "s#^  brokers: .*#  brokers: $BROKERS#"
"$RTB" serve --config "$OUT/b.yaml" 2> "$OUT/b.log" &
B=$!
"$RTB" budget --market "$OUT/a.yaml" --brokers "$BROKERS" --heartbeat-timeout-ms "$TIMEOUT_MS" \
  --handover-timeout-ms "$HANDOVER_MS" 2> "$OUT/budget-1.log" &
BUD=$!
for p in "$PA" "$PB"; do
  wait_until 10 curl -sf "http://127.0.0.1:$p/metrics" -o /dev/null || fail "bidder on $p did not start"
done
# The coordinator reads the requests topic once its consumer group has given it the partitions:
# the load starts on a market that answers.
wait_until 15 grep -q "coordinator: reads [0-9]* partitions of" "$OUT/budget-1.log" ||
  fail "the coordinator was not given the requests topic"
# Load: short days of traffic over both bidders, one after the other until the fault is over
# and a day played after it has spent (the market recovered), and a paced probe of bidder a.
sed -e "s#^requests_per_day: .*#requests_per_day: 10000#" "$M/traffic.yaml" > "$OUT/traffic.yaml"
# The exchange writes step markers for a learner and waits for each (there is none here): in the
# Kafka outage it plays without them, as the outside world would go on sending requests.
EXB=(--brokers "$BROKERS")
[[ $MODE != kafka ]] || EXB=()
(
  d=0
  while [[ ! -e $OUT/stop ]]; do
    "$RTB" exchange --traffic "$OUT/traffic.yaml" --market "$OUT/a.yaml" --concurrency 2 \
      --bidders "127.0.0.1:$PA,127.0.0.1:$PB" "${EXB[@]}" --days 1 --first-day $d \
      --no-wait >> "$OUT/exchange.jsonl" 2>> "$OUT/exchange.log" || exit 1
    d=$((d + 1))
  done
) &
EX=$!
"$LOADGEN" --port "$PA" --path /openrtb2/bid --body "$SRC/tests/fixtures/openrtb/2.6/bid-request-simple-banner.json" \
  --connections 2 --seconds $((FAULT_S + 15)) --rate 50 --unique-ids 1 > "$OUT/loadgen.txt" &
LG=$!
# The fault, once the first day of traffic is played: it starts, lasts FIRST s, changes (a
# second coordinator starting beside a frozen one), lasts SECOND s more, and ends.
wait_until 20 test -s "$OUT/exchange.jsonl" || fail "no day of traffic was played"
second_budget() {
  "$RTB" budget --market "$OUT/a.yaml" --brokers "$BROKERS" --heartbeat-timeout-ms "$TIMEOUT_MS" \
    --handover-timeout-ms "$HANDOVER_MS" 2> "$OUT/budget-2.log" &
}
case $MODE in
  kafka)
    FIRST=$FAULT_S SECOND=0
    fault_start() { kill -USR1 "$KAFKA"; echo "lease_outage: every Kafka broker down for $FAULT_S s"; }
    fault_mid() { :; }
    fault_end() { kill -USR2 "$KAFKA"; } ;;
  freeze)
    FIRST=5 SECOND=$((FAULT_S - 5))
    fault_start() {
      kill -STOP "$BUD"
      echo "lease_outage: coordinator SIGSTOPped for $FAULT_S s; a second one starts 5 s in"
    }
    fault_mid() { second_budget; BUD2=$!; }
    fault_end() { kill -CONT "$BUD"; echo "lease_outage: the first coordinator runs again"; } ;;
  coordinator)
    FIRST=$FAULT_S SECOND=0
    fault_start() {
      kill -KILL "$BUD"
      wait "$BUD" 2>/dev/null || true
      echo "lease_outage: coordinator SIGKILLed; down for $FAULT_S s"
    }
    fault_mid() { :; }
    fault_end() { second_budget; BUD=$!; } ;;
esac
fault_start
sleep "$FIRST"  # the fault's length is real time: the processes under test keep their own clocks
fault_mid
sleep "$SECOND"
fault_end
AT_END=$(days_played "$OUT/exchange.jsonl")
wait_until 120 spent_after "$OUT/exchange.jsonl" "$AT_END" ||
  fail "no day played after the fault spent anything"
touch "$OUT/stop"
wait "$LG" || fail "the load generator failed"
LG=
wait "$EX" || fail "rtb exchange failed"
# The last events reach the topic: each bidder's producer queue and spill file are empty.
for p in "$PA" "$PB"; do wait_until 30 events_drained "$p" || fail "bidder on $p still has events queued"; done
for p in "$PA" "$PB"; do  # holdings of a fenced-off coordinator the bidders ignored
  curl -sf "http://127.0.0.1:$p/metrics" | grep '^rtb_lease_stale_holdings_total' >> "$OUT/stale.txt" || true
done
"$RTB" report --brokers "$BROKERS" --bidder-config "$OUT/a.yaml" --out "$OUT/ab" > /dev/null
# The cluster's host (bidder a, or rtb kafka) stops last, once its clients have. (Stopped
# together, b once waited for minutes after a's cluster was gone; see docs/budget-leases.md.)
if [[ $MODE == kafka ]]; then
  kill -TERM "$BUD" "$B" "$A"
  wait "$BUD" "$B" "$A" 2>/dev/null || true
  kill -TERM "$KAFKA"
  wait "$KAFKA" 2>/dev/null || true
else
  kill -TERM $BUD $BUD2 "$B"
  wait $BUD $BUD2 "$B" 2>/dev/null || true
  kill -TERM "$A"
  wait "$A" 2>/dev/null || true
fi
BUD= BUD2= A= B= KAFKA=

python3 - "$OUT" "$MODE" <<'PY'
import json, re, sys
out, mode = sys.argv[1], sys.argv[2]
lg = open(out + "/loadgen.txt").read()
print("lease_outage: probe:", lg.strip())
m = re.search(r"p99[ =:]+([0-9.]+)", lg)
assert m and float(m.group(1)) < 100, lg
codes = re.findall(r"\b(\d{3})[:=](\d+)", lg)
assert codes and all(c in ("200", "204") for c, _ in codes), lg
days = [json.loads(l) for l in open(out + "/exchange.jsonl") if l.startswith("{")]
# The traffic ran until a day played after the fault spent: the market served on. How
# many days fit in the fault says little (days that open while no coordinator serves wait for
# their leases, and the suite runs other tests beside this one).
assert len(days) >= 3, len(days)
assert all(d["lost_requests"] == 0 and d["failed_notices"] == 0 for d in days), days
print("lease_outage: %d days played, %d requests, none lost; spend per day: %s" % (
    len(days), sum(d["requests"] for d in days), " ".join("%.1f" % d["cost"] for d in days)))
r = json.load(open(out + "/ab/report.json"))
worst = 0.0
for d in r["days"]:
    for arm, a in d["arms"].items():
        for adv in a["advertisers"]:
            if adv["budget"] > 0:
                worst = max(worst, 100 * (adv["spend"] - adv["budget"]) / adv["budget"])
assert worst <= 0.1, worst
spent = sum(a["spend"] for d in r["days"] for a in d["arms"].values())
assert spent > 0, "nothing was spent"
for b in ("a", "b"):
    log = open(out + "/%s.log" % b).read()
    s = re.findall(r"stopped; events logged (\d+), acked (\d+), spilled (\d+), resent (\d+), "
                   r"left in the spill file (\d+), dropped (\d+)", log)
    assert s, "bidder %s: no stop line" % b
    logged, acked, spilled, resent, left, dropped = map(int, s[-1])
    assert dropped == 0 and left == 0 and logged == acked + spilled - resent and logged > 0, (b, s[-1])
    if mode == "kafka":
        assert spilled > 0 and resent == spilled, ("the outage spilled nothing", b, s[-1])
    print("lease_outage: bidder %s: events logged %d = acked %d + spilled %d - resent %d" % (
        b, logged, acked, spilled, resent))
if mode == "kafka":
    b1 = open(out + "/budget-1.log").read()
    m = re.search(r"(\d+) leases reclaimed", b1)
    assert m and int(m.group(1)) == 0, ("a live bidder was taken for dead", b1[-2000:])
    print("lease_outage: max overspend %.3f%%, spend %.2f, no lease reclaimed" % (worst, spent))
else:
    b2 = open(out + "/budget-2.log").read()
    m = re.search(r"(\d+) leases restored", b2)
    assert m and int(m.group(1)) > 0, b2[:2000]
    # The killed coordinator never handed the market over: the new one waited for it, took it
    # for dead, and only then read the grants back.
    assert "did not hand the market over" in b2, b2[:2000]
    print("lease_outage: max overspend %.3f%%, spend %.2f, %s leases restored" % (worst, spent, m.group(1)))
    if mode == "freeze":
        # Running again, the first coordinator read the newer claim (or itself marked gone) with
        # its beats and handed over (the bidders ignore anything it still published: its epoch
        # is lower).
        b1 = open(out + "/budget-1.log").read()
        assert "stops granting and hands over" in b1 and "handed the market over to" in b1, b1[-3000:]
        m1 = re.search(r"epoch (\d+):", b1)
        m2 = re.search(r"epoch (\d+):", b2)
        assert m1 and m2 and int(m2.group(1)) > int(m1.group(1)), (b1[:1000], b2[:1000])
        print("lease_outage: the frozen coordinator (epoch %s) handed over to the new one (epoch %s); "
              "stale holdings ignored: %s" % (m1.group(1), m2.group(1),
              " ".join(l.split()[-1] for l in open(out + "/stale.txt"))))
PY
