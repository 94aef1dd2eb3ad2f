#!/usr/bin/env bash
# Events under load on the real cluster (scripts/kafka_cluster.sh, started by the tier's fixture),
# through broker faults: `rtb serve` logs every bid and no-bid to rtb.events (replication 3,
# min.insync.replicas 2; the engine's producer: acks=all, idempotent, never gives up) while a paced
# load generator sends it requests with unique ids. During the load:
#   the leader of rtb.events partition 0 is SIGKILLed, and restarted at once (down while its JVM
#   starts and its logs load, 8-10 s);
#   another node is SIGSTOPped for PAUSE_S s (default 10), then resumed;
#   every node is SIGKILLed, the whole cluster down for OUTAGE_S s (default 15), then restarted;
# the producer's queue is small, so the outage's events spill to disk and are re-sent.
# Then the bidder stops (its stop line: events logged, acked, spilled, resent, left, dropped),
# and event_check reads the topic back and compares it with every acknowledgement the bidder
# got (RTB_EVENTS_ACKED_FILE): 0 lost, 0 duplicated, 0 unexpected, 0 reordered (reorders only
# reported when the bidder replaced its producer after a fatal error); run again with one read
# event forgotten (--drop-one), it must count exactly 1 lost.
# Usage: events_faults_test.sh RTB SRC LOADGEN EVENT_CHECK   (KAFKA_RUN_DIR: the cluster's)
set -euo pipefail
RTB=$1
SRC=$2
LOADGEN=$3
CHECK=$4
PAUSE_S=${PAUSE_S:-10}
OUTAGE_S=${OUTAGE_S:-15}
CLUSTER=$SRC/scripts/kafka_cluster.sh
OUT=$(mktemp -d)
[[ -z ${KEEP:-} ]] || echo "events_faults: logs kept in $OUT"
source "$SRC/scripts/serve_lib.sh"
# shellcheck disable=SC1090
source "${KAFKA_RUN_DIR:?KAFKA_RUN_DIR: the run folder of the cluster}/cluster.env"
SERVE= LG=
cleanup() {
  for p in $LG $SERVE; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  # The cluster whole again for the tests after this one, whatever happened here.
  for n in 1 2 3; do "$CLUSTER" resume "$n" >/dev/null 2>&1 || true; done
  for n in 1 2 3; do "$CLUSTER" restart "$n" >/dev/null 2>&1 & done
  wait 2>/dev/null || true
  [[ -n ${KEEP:-} ]] || rm -rf "$OUT"
}
trap cleanup EXIT
fail() {  # the bidder's last lines say what it saw of the brokers
  echo "events_faults: $*; the bidder's log ends:" >&2
  tail -n 15 "$OUT/serve.log" >&2 || true
  exit 1
}
t0=$SECONDS
at() { echo "events_faults: +$((SECONDS - t0)) s: $*"; }

PORT=$(free_port)
cd "$SRC"
local_bidder_config configs/bidder/default.yaml "$OUT/bidder.yaml" "$PORT" "$OUT" \
  -e "s#^  brokers: .*#  brokers: $KAFKA_BOOTSTRAP#" \
  -e "s#^  queue_max_messages: [0-9]*#  queue_max_messages: 2000#"
RTB_EVENTS_ACKED_FILE=$OUT/acked.tsv "$RTB" serve --config "$OUT/bidder.yaml" 2> "$OUT/serve.log" &
SERVE=$!
wait_until 20 curl -sf "http://127.0.0.1:$PORT/healthz" -o /dev/null || fail "rtb serve did not start"

LOAD_S=$((PAUSE_S + OUTAGE_S + 30))
"$LOADGEN" --port "$PORT" --path /openrtb2/bid \
  --body "$SRC/tests/fixtures/openrtb/2.6/bid-request-simple-banner.json" \
  --connections 2 --seconds "$LOAD_S" --rate 200 --unique-ids 1 > "$OUT/loadgen.txt" &
LG=$!
at "load for $LOAD_S s at 200 requests/s"
sleep 2  # the fault's moments are real time: the processes under test keep their own clocks

leader=$("$CLUSTER" leader rtb.events 0)
at "node $leader leads rtb.events[0]: SIGKILL"
"$CLUSTER" kill "$leader"
"$CLUSTER" restart "$leader" >/dev/null
at "node $leader back"

paused=$((leader % 3 + 1))
"$CLUSTER" pause "$paused"
at "node $paused paused (SIGSTOP) for $PAUSE_S s"
sleep "$PAUSE_S"
"$CLUSTER" resume "$paused"
at "node $paused resumed"
sleep 2

for n in 1 2 3; do "$CLUSTER" kill "$n"; done
at "every node SIGKILLed: the cluster down for $OUTAGE_S s"
sleep "$OUTAGE_S"
restarts=()
for n in 1 2 3; do
  "$CLUSTER" restart "$n" > "$OUT/restart-$n.log" 2>&1 &
  restarts+=($!)
done
for p in "${restarts[@]}"; do wait "$p" || fail "the cluster did not come back"; done
at "the cluster is back"

wait "$LG" || fail "the load generator failed"
LG=
at "load done: $(cat "$OUT/loadgen.txt")"
# The last events reach the topic: the producer's queue and the spill file are empty.
wait_until 60 events_drained "$PORT" || fail "events still queued 60 s after the load"
kill -TERM "$SERVE"
wait "$SERVE" || fail "rtb serve exited with $?"
SERVE=
stop=$(grep -o "stopped; events logged.*" "$OUT/serve.log" | tail -1)
[[ -n $stop ]] || fail "no stop line"
at "rtb serve $stop"

# A producer replaced after librdkafka's fatal error (seen here: "out of order sequence number"
# after the whole cluster's restart) re-sends what was in flight and is not on the topic, after
# what was logged meanwhile: reorders are then reported, not failures; a loss or a duplicate
# still is.
restarts=$(grep -c "the events producer failed for good" "$OUT/serve.log" || true)
check=("$CHECK" --brokers "$KAFKA_BOOTSTRAP" --acked "$OUT/acked.tsv" --spill "$OUT/spill.jsonl"
       --spill "$OUT/spill.jsonl.resending" --producer-restarts "$restarts")
"${check[@]}" | tee "$OUT/check.txt" || fail "the checker found a difference"
if "${check[@]}" --drop-one > "$OUT/check-drop.txt"; then
  fail "the checker missed a dropped event: $(cat "$OUT/check-drop.txt")"
fi
grep -q "lost 1, duplicated [0-9]*, unexpected 0, reordered [0-9]*" "$OUT/check-drop.txt" ||
  fail "the checker did not count the dropped event as 1 lost: $(cat "$OUT/check-drop.txt")"
at "with one read event forgotten: $(cat "$OUT/check-drop.txt")"

python3 - "$OUT" "$stop" <<'PY'
import re, sys
out, stop = sys.argv[1], sys.argv[2]
lg = open(out + "/loadgen.txt").read()
codes = re.findall(r"\b(\d{3})[:=](\d+)", lg)
assert codes and all(c in ("200", "204") for c, _ in codes), lg
m = re.search(r"events logged (\d+), acked (\d+), spilled (\d+), resent (\d+), "
              r"left in the spill file (\d+), dropped (\d+)", stop)
logged, acked, spilled, resent, left, dropped = map(int, m.groups())
assert logged > 0 and dropped == 0 and left == 0, stop
assert logged == acked + spilled - resent, stop
assert spilled > 0, ("the outage spilled nothing", stop)
chk = open(out + "/check.txt").read()
read = int(re.search(r"distinct (\d+)", chk).group(1))
assert read == logged, ("distinct events read back", read, "logged", logged)
print("events_faults: %d events logged, %d spilled and re-sent, all %d read back" % (
    logged, spilled, read))
PY
"$CLUSTER" status | sed -n 's/^node/events_faults: after the load, node/p'
