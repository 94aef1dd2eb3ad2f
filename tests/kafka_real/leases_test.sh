#!/usr/bin/env bash
# Budget leases on the real cluster (scripts/kafka_cluster.sh, started by the tier's fixture):
# three `rtb serve` bidders share the hand-written metro market's budgets through one
# `rtb budget`, on lease, events and notice topics of the run's own, while `rtb exchange` plays
# short simulated days over all three. The grants topic is compacted with settings small enough
# that compaction really runs within the test: 2 s segments, any dirty ratio, and a compaction
# lag of two of the market's days (20 s) (`rtb budget --day-ms`; the brokers' cleaner looks every
# second). Once the first day is played:
#   the node leading the grants topic's partition 0 is SIGKILLed, 2 s later the coordinator is
#   SIGKILLed and the node restarted (it is back 20-40 s later: its JVM starts under the load);
#   a new coordinator starts 4 s after the first one's death, takes it for dead and rebuilds
#   the leases from the grants topic;
# the traffic goes on until a day played after the faults has spent and the cleaner has removed
# records from the grants topic. Then, the traffic stopped:
#   the coordinator stops (SIGTERM), writing every lease it holds (--leases-out);
#   the bidder holding the most (the traffic's end may leave one with nothing) is SIGKILLed and
#   started again on its state: it reads the same holdings back from
#   the compacted topic (rtb_lease_held_micros, every (day, advertiser, arm) equal);
#   a third coordinator starts on the compacted topic and stops: the same leases, held per
#   (day, advertiser, arm, bidder) equal to the second one's, and equal to what each bidder holds.
# Checks also: no (day, arm, advertiser) spent more than its budget + 0.1% (rtb report on the
# run's events topic); every bidder answered every request; no event lost (each bidder's events
# logged = acked + spilled - resent, nothing left in its spill file; for the restarted one, its
# second process).
# Prints the bidders' lease
# answer times (ask -> holding read), the lease grant round trip on this cluster.
# Usage: leases_test.sh RTB SRC   (KAFKA_RUN_DIR: the cluster's)
set -euo pipefail
# A command that fails outside a check (set -e) names itself, with the logs' last lines.
trap 'echo "leases_real: line $LINENO failed: $BASH_COMMAND" >&2; tail -n 5 "$OUT"/*.log >&2' ERR
RTB=$1
SRC=$2
RUN_DIR=${KAFKA_RUN_DIR:?KAFKA_RUN_DIR: the run folder of the cluster}
# shellcheck disable=SC1090,SC1091
source "$RUN_DIR/cluster.env"
CLUSTER=$SRC/scripts/kafka_cluster.sh
JARS=$SRC/.cache/kafka/${RTB_KAFKA_VERSION:-4.4.0}
OUT=$(mktemp -d)
[[ -z ${KEEP:-} ]] || echo "leases_real: logs kept in $OUT"
cd "$SRC"  # the market's files name each other from the repository root
M=configs/markets/metro
# shellcheck disable=SC1091
source "$SRC/scripts/serve_lib.sh"
RUN=leases-$$-$(date +%s)
GRANTS=rtb.lease.grants.$RUN
DAY_MS=10000  # the longest a day of this test's market lasts (1,500 requests: 1-3 s alone)
T0=$SECONDS
at() { echo "leases_real: +$((SECONDS - T0)) s: $*"; }
declare -A PORT PID
BUD= EX= DOWN= RESTART=
cleanup() {
  touch "$OUT/stop"
  [[ -z $EX ]] || kill "$EX" 2>/dev/null || true
  for p in $BUD "${PID[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  [[ -z $RESTART ]] || wait "$RESTART" 2>/dev/null || true
  [[ -z $DOWN ]] || "$CLUSTER" restart "$DOWN" > /dev/null 2>&1 || true
  [[ ! -s $OUT/a.yaml ]] ||
    "$RTB" kafka --delete-on "$KAFKA_BOOTSTRAP" --market "$OUT/a.yaml" \
      --clock-topic "rtb.clock.$RUN" > /dev/null 2>&1 || true
  [[ -n ${KEEP:-} ]] || rm -rf "$OUT"
}
trap cleanup EXIT
fail() {
  echo "leases_real: $*" >&2
  tail -n 5 "$OUT"/*.log >&2 || true
  exit 1
}

for b in a b c; do
  PORT[$b]=$(free_port)
  local_bidder_config "$M/bidder.yaml" "$OUT/$b.yaml" "${PORT[$b]}" "$OUT/$b" \
    -e "s#^clusters_path: .*#clusters_path: $OUT/clusters.json#" \
    -e "s#^notice_secret: .*#notice_secret: leases-real-shared-secret#" \
    -e "s#^  brokers: .*#  brokers: $KAFKA_BOOTSTRAP#" \
    -e "s#^  partitions: .*#  partitions: 4#" \
    -e "s#^  events_topic: .*#  events_topic: rtb.events.$RUN#" \
    -e "s#^  policy_topic: .*#  policy_topic: rtb.policy.$RUN#"
  printf 'leases:\n  enabled: true\n  name: %s\n  requests_topic: rtb.lease.requests.%s\n  grants_topic: %s\n  notices_topic: rtb.notices.%s\n  check_every_ms: 20\n  report_every_ms: 200\n  horizon_ms: 2000\n' \
    "$b" "$RUN" "$GRANTS" "$RUN" >> "$OUT/$b.yaml"
done
"$RTB" kafka --create-on "$KAFKA_BOOTSTRAP" --market "$OUT/a.yaml" --clock-topic "rtb.clock.$RUN" \
  > "$OUT/topics.txt" 2> "$OUT/topics.log" || fail "the run's topics were not created"
# Compaction that runs while the test does: the lag is two of the market's days (rtb budget
# refuses less), segments roll every 2 s, any dirty share is worth cleaning.
java -Xshare:auto -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xmx256m \
  -Dlog4j2.configurationFile="$RUN_DIR/tools-log4j2.properties" -cp "$JARS/*" \
  org.apache.kafka.tools.ConfigCommand --bootstrap-server "$KAFKA_BOOTSTRAP" --alter \
  --entity-type topics --entity-name "$GRANTS" \
  --add-config "segment.ms=2000,min.cleanable.dirty.ratio=0.01,min.compaction.lag.ms=$((2 * DAY_MS))" \
  > "$OUT/config.log" 2>&1 || fail "could not set $GRANTS's compaction: $(cat "$OUT/config.log")"
at "topics *.$RUN created; $GRANTS compacts after $((2 * DAY_MS)) ms"

"$RTB" exchange --traffic "$M/traffic.yaml" --market "$OUT/a.yaml" \
  --write-clusters "$OUT/clusters.json" --days 0 > /dev/null
start_bidder() {  # NAME
  "$RTB" serve --config "$OUT/$1.yaml" 2>> "$OUT/$1.log" &
  PID[$1]=$!
}
budget() {  # N: coordinator N, in the background (pid in BUD)
  "$RTB" budget --market "$OUT/a.yaml" --group "rtb-budget.$RUN" --day-ms "$DAY_MS" \
    --handover-timeout-ms 6000 --leases-out "$OUT/leases-$1.csv" \
    --restored-out "$OUT/restored-$1.csv" 2> "$OUT/budget-$1.log" &
  BUD=$!
}
for b in a b c; do start_bidder "$b"; done
budget 1
for b in a b c; do
  wait_until 20 curl -sf "http://127.0.0.1:${PORT[$b]}/metrics" -o /dev/null ||
    fail "bidder $b did not start"
done
wait_until 20 grep -q "coordinator: reads [0-9]* partitions of" "$OUT/budget-1.log" ||
  fail "the coordinator was not given the requests topic"
at "3 bidders and the coordinator serve"

sed -e "s#^requests_per_day: .*#requests_per_day: 1500#" "$M/traffic.yaml" > "$OUT/traffic.yaml"
BIDDERS="127.0.0.1:${PORT[a]},127.0.0.1:${PORT[b]},127.0.0.1:${PORT[c]}"
(
  d=0
  while [[ ! -e $OUT/stop ]]; do
    "$RTB" exchange --traffic "$OUT/traffic.yaml" --market "$OUT/a.yaml" --concurrency 1 \
      --bidders "$BIDDERS" --days 1 --first-day $d >> "$OUT/exchange.jsonl" \
      2>> "$OUT/exchange.log" || exit 1
    d=$((d + 1))
  done
) &
EX=$!
wait_until 60 test -s "$OUT/exchange.jsonl" || fail "no day of traffic was played"
at "day 0 played"

DOWN=$("$CLUSTER" leader "$GRANTS" 0)
"$CLUSTER" kill "$DOWN" > /dev/null
at "node $DOWN, leader of $GRANTS[0], SIGKILLed"
sleep 2  # the faults' moments are real time: the processes under test keep their own clocks
kill -KILL "$BUD"
wait "$BUD" 2>/dev/null || true
at "coordinator SIGKILLed; node $DOWN restarting (its JVM starts under the load)"
"$CLUSTER" restart "$DOWN" > "$OUT/restart.log" 2>&1 &
RESTART=$!
sleep 4
budget 2
at "a second coordinator starts"
# Its start (the hand-over wait, then the whole grants topic read while a node is down) took
# 12-15 s in most runs, and over 30 s once beside the suite's loops.
wait_until 60 grep -q "leases restored from" "$OUT/budget-2.log" ||
  fail "the second coordinator did not restore the leases"
at "$(grep -o '[0-9]* leases restored from.*' "$OUT/budget-2.log")"
# The grants topic's records, and how many the cleaner removed: the offsets it no longer holds
# below each partition's last one (no transaction markers: the coordinator is idempotent only).
compacted() {
  kcat -C -b "$KAFKA_BOOTSTRAP" -t "$GRANTS" -o beginning -e -q -f '%p %o\n' 2> /dev/null |
    awk '{ n[$1]++; if (!($1 in hi) || $2 > hi[$1]) hi[$1] = $2 }
         END { for (p in n) { kept += n[p]; all += hi[p] + 1 }
               printf "%d %d\n", all - kept, all; exit !(all > kept) }'
}
AT_END=$(days_played "$OUT/exchange.jsonl")
wait_until 120 spent_after "$OUT/exchange.jsonl" "$AT_END" ||
  fail "no day played after the faults spent anything"
at "a day after the faults spent ($(days_played "$OUT/exchange.jsonl") days played)"
wait_until 60 compacted > /dev/null || fail "the cleaner removed nothing from $GRANTS"
read -r removed written <<<"$(compacted)"
at "compaction: $removed of the $written records written to $GRANTS removed"
touch "$OUT/stop"
wait "$EX" || fail "rtb exchange failed"
EX=
wait "$RESTART" || fail "node $DOWN did not come back: $(cat "$OUT/restart.log")"
at "node $DOWN back"
DOWN=

for b in a b c; do wait_until 30 events_drained "${PORT[$b]}" || fail "bidder $b still has events queued"; done
held() {  # NAME: what the bidder holds, a line per (day, advertiser, arm) (none: checked below)
  curl -sf "http://127.0.0.1:${PORT[$1]}/metrics" | { grep '^rtb_lease_held_micros{' || true; } | sort
}
kill -TERM "$BUD"
wait "$BUD" || fail "the second coordinator exited with $?"
BUD=
for b in a b c; do held "$b" > "$OUT/held-$b.txt"; done
R=$(for b in a b c; do echo "$(wc -l < "$OUT/held-$b.txt") $b"; done | sort -rn | head -1 | cut -d' ' -f2)
echo "$R" > "$OUT/restarted.txt"
kill -KILL "${PID[$R]}"
wait "${PID[$R]}" 2>/dev/null || true
start_bidder "$R"
wait_until 20 curl -sf "http://127.0.0.1:${PORT[$R]}/metrics" -o /dev/null ||
  fail "bidder $R did not start again"
held "$R" > "$OUT/held-again.txt"
at "bidder $R SIGKILLed and started again on the compacted topic"
budget 3
wait_until 30 grep -q "leases restored from" "$OUT/budget-3.log" ||
  fail "the third coordinator did not restore the leases"
kill -TERM "$BUD"
wait "$BUD" || fail "the third coordinator exited with $?"
BUD=
at "a third coordinator: $(grep -o '[0-9]* leases restored from.*' "$OUT/budget-3.log")"

"$RTB" report --brokers "$KAFKA_BOOTSTRAP" --bidder-config "$OUT/a.yaml" --out "$OUT/ab" \
  > /dev/null 2> "$OUT/report.log" || fail "rtb report failed"
for b in a b c; do kill -TERM "${PID[$b]}"; done
for b in a b c; do wait "${PID[$b]}" 2>/dev/null || true; done
PID=()

python3 - "$OUT" <<'PY'
import csv, json, re, sys
out = sys.argv[1]
days = [json.loads(l) for l in open(out + "/exchange.jsonl") if l.startswith("{")]
assert all(d["lost_requests"] == 0 and d["failed_notices"] == 0 for d in days), days
r = json.load(open(out + "/ab/report.json"))
worst, spent = 0.0, 0
for d in r["days"]:
    for arm, a in d["arms"].items():
        for adv in a["advertisers"]:
            spent += adv["spend"]
            if adv["budget"] > 0:
                worst = max(worst, 100 * (adv["spend"] - adv["budget"]) / adv["budget"])
assert spent > 0, "nothing was spent"
assert worst <= 0.1, ("overspent", worst)

def metric(path):
    held = {}
    for l in open(path):
        m = re.match(r'rtb_lease_held_micros\{day="([^"]+)",advertiser="(\d+)",arm="(\w+)"\} (-?\d+)', l)
        if m:
            held[m.group(1, 2, 3)] = int(m.group(4))
    return held

def leases(path):
    with open(path) as f:
        return {(r["day"], r["adv"], r["arm"], r["bidder"]): int(r["held"]) for r in csv.DictReader(f)}

bidders = {b: metric("%s/held-%s.txt" % (out, b)) for b in "abc"}
r = open(out + "/restarted.txt").read().strip()
again = metric(out + "/held-again.txt")
assert bidders[r], "no bidder held anything"
diff = {k: (v, again.get(k)) for k, v in bidders[r].items() if again.get(k) != v}
assert not diff, ("bidder %s's holdings differ after its restart" % r, list(diff.items())[:5])
second, third = leases(out + "/leases-2.csv"), leases(out + "/restored-3.csv")
assert second, "the second coordinator wrote no lease"
# A restart keeps the days in the window (the last simulated day and the two before it,
# DayWindow); the second coordinator may still hold an older one it had not yet forgotten.
last = max(int(k[0]) for k in second)
live = {k: v for k, v in second.items() if int(k[0]) >= last - 2}
diff = {k: (v, third.get(k)) for k, v in live.items() if third.get(k) != v}
assert not diff, ("the third coordinator's leases differ", list(diff.items())[:5])
# The coordinator's days are numbers; the bidders' names: "sim-N" is day 2^40 + N.
def day_number(name):
    assert name.startswith("sim-"), name
    return str((1 << 40) + int(name[4:]))
mismatch, compared = [], 0
for b, h in bidders.items():
    for (day, adv, arm), v in h.items():
        c = second.get((day_number(day), adv, arm, b))
        if c is not None:
            compared += 1
            if c != v:
                mismatch.append((b, day, adv, arm, v, c))
assert not mismatch, ("a bidder's holdings differ from the coordinator's", mismatch[:5])
assert compared > 0, "no bidder holding to compare with the coordinator's"
print("leases_real: %d days, %d requests, none lost; max overspend %.3f%%, spend %.2f" % (
    len(days), sum(d["requests"] for d in days), worst, spent))
print("leases_real: after compaction: bidder %s restarted with its %d holdings; a third coordinator "
      "with the second one's %d leases of the last 3 days; %d bidder holdings equal to the "
      "coordinator's" % (
          r, len(bidders[r]), len(live), compared))
for b in "abc":
    log = open("%s/%s.log" % (out, b)).read()
    s = re.findall(r"stopped; events logged (\d+), acked (\d+), spilled (\d+), resent (\d+), "
                   r"left in the spill file (\d+), dropped (\d+)", log)
    assert s, "bidder %s: no stop line" % b
    logged, acked, spilled, resent, left, dropped = map(int, s[-1])
    # The restarted one's first process was SIGKILLed: the line is its second one's, which served
    # nothing.
    assert dropped == 0 and left == 0 and logged == acked + spilled - resent, (b, s[-1])
    assert logged > 0 or b == r, (b, s[-1])
    ms = [(int(a), float(t), int(x)) for a, t, x in re.findall(
        r"(\d+) answered \(\d+ with nothing\) in ([0-9.]+) ms on average \(at most (\d+) ms\)", log)]
    answered = sum(a for a, _, _ in ms)
    mean = sum(a * t for a, t, _ in ms) / answered if answered else 0
    print("leases_real: bidder %s: events logged %d = acked %d + spilled %d - resent %d; "
          "%d lease answers in %.0f ms on average (at most %d ms)" % (
              b, logged, acked, spilled, resent, answered, mean, max([x for _, _, x in ms] or [0])))
PY
