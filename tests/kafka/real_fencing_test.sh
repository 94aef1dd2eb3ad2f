#!/usr/bin/env bash
# Fencing and a broker's failure on the real cluster (scripts/kafka_cluster.sh, started by the
# `kafka` tier's fixture), where Kafka's transactions fence and read_committed readers skip aborted
# messages (the embedded cluster does neither):
#   RealKafka.*: a second transactional producer of an id fences the first, whose commit fails
#     as fenced and whose message no read_committed reader sees;
#   Online.OnARealClusterASecondLearner*: a second online learner of a group fences the first,
#     which stops with the error, and the policy topic holds each table version once;
#   Online.OnARealClusterALearnerRestarted*: the node leading the policy partition is SIGKILLed
#     under a learner, which is stopped and started again on its state dir while the node is down
#     (the node restarted meanwhile, through RTB_REAL_KAFKA_CLUSTER: this script's
#     scripts/kafka_cluster.sh): each step stored once with all its events, each table version
#     on the policy topic once.
# Each run makes topics of its own (<prefix>.seam, .events with 2 partitions, .policy, .clock;
# <prefix>-restart.events, .policy and .clock for the restart, placed so that the policy
# partition's leader leads none of the others), so that nothing else on the cluster reads them.
# The tier's next tests need the whole cluster: it ends with every partition's replicas in sync,
# and any node still down at the end (a failed test) is started again.
# Usage: real_fencing_test.sh KAFKA_TESTS LEARNER_TESTS SRC   (KAFKA_RUN_DIR: the cluster's)
set -euo pipefail
KAFKA_TESTS=$1
LEARNER_TESTS=$2
SRC=$3
RUN=${KAFKA_RUN_DIR:?KAFKA_RUN_DIR: the run folder of the cluster}
# shellcheck disable=SC1090,SC1091
source "$RUN/cluster.env"
JARS=$SRC/.cache/kafka/${RTB_KAFKA_VERSION:-4.4.0}
CLUSTER=$SRC/scripts/kafka_cluster.sh
export KAFKA_RUN_DIR=$RUN
OUT=$(mktemp -d)
cleanup() {
  local n
  for n in 1 2 3; do "$CLUSTER" restart "$n" > /dev/null 2>&1 & done
  wait
  rm -rf "$OUT"
}
trap cleanup EXIT
fail() {
  echo "real_fencing: $*" >&2
  exit 1
}

PREFIX=fence-$$-$(date +%s)
create() {  # TOPIC PLACEMENT...: --partitions N --replication-factor 3, or --replica-assignment
  java -Xshare:auto -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xmx256m \
    -Dlog4j2.configurationFile="$RUN/tools-log4j2.properties" -cp "$JARS/*" \
    org.apache.kafka.tools.TopicCommand --bootstrap-server "$KAFKA_BOOTSTRAP" --create \
    --topic "$1" "${@:2}" --config min.insync.replicas=2 \
    > "$OUT/topic-$1.log" 2>&1 || fail "could not create $1: $(cat "$OUT/topic-$1.log")"
}
created() {  # PID...: every creation done
  local job
  for job in "$@"; do wait "$job" || fail "topics not created"; done
}
spread() { create "$1" --partitions "$2" --replication-factor 3; }
spread "$PREFIX.seam" 1 &
topics=($!)
spread "$PREFIX.events" 2 &
topics+=($!)
spread "$PREFIX.policy" 1 &
topics+=($!)
spread "$PREFIX.clock" 1 &
topics+=($!)
created "${topics[@]}"
# The restart's topics, made while the fencing runs: node 1 leads the policy partition (the first
# replica of a new partition leads it) and holds no replica of the others, so that a step goes in
# at once while it is down (its replicas wait for no dead node: acks=all waits for every in-sync
# replica, and a killed node stays in sync until the controller fences it, after 9 s).
create "$PREFIX-restart.policy" --replica-assignment 1:2:3 &
restart_topics=($!)
create "$PREFIX-restart.events" --replica-assignment 2:3,3:2 &
restart_topics+=($!)
create "$PREFIX-restart.clock" --replica-assignment 3:2 &
restart_topics+=($!)

run() {  # NAME BINARY FILTER TOPIC: the test must run (not be skipped) and pass
  local name=$1
  set +e
  RTB_REAL_KAFKA_BOOTSTRAP=$KAFKA_BOOTSTRAP RTB_REAL_KAFKA_TOPIC=$4 \
    "$2" --gtest_filter="$3" > "$OUT/$name.log" 2>&1
  local rc=$?
  set -e
  grep -E '^\[ *(OK|FAILED|SKIPPED) *\]' "$OUT/$name.log" >&2 || true
  ((rc == 0)) || fail "$name failed: $(tail -n 40 "$OUT/$name.log")"
  ! grep -q '^\[  SKIPPED \]' "$OUT/$name.log" || fail "$name was skipped"
  grep -q '^\[  PASSED  \] 1 test' "$OUT/$name.log" || fail "$name: no test ran"
}
run seam "$KAFKA_TESTS" 'RealKafka.*' "$PREFIX.seam"
run learners "$LEARNER_TESTS" 'Online.OnARealClusterASecondLearner*' "$PREFIX"
created "${restart_topics[@]}"
RTB_REAL_KAFKA_CLUSTER=$CLUSTER run restart "$LEARNER_TESTS" \
  'Online.OnARealClusterALearnerRestarted*' "$PREFIX-restart"
grep -E '^node [123] ' "$OUT/restart.log" >&2 || true
# The killed node back in sync on every partition (kcat's metadata) before the tier's next test.
in_sync() {
  kcat -b "$KAFKA_BOOTSTRAP" -L -J 2>/dev/null | python3 -c 'import json, sys
m = json.load(sys.stdin)
sys.exit(any(len(p["isrs"]) < len(p["replicas"]) for t in m["topics"] for p in t["partitions"]))'
}
t0=$SECONDS
until in_sync; do
  ((SECONDS - t0 < 30)) || fail "a partition is still short of replicas 30 s after the restart"
  sleep 0.2
done
echo "real_fencing: every partition in sync $((SECONDS - t0)) s after the restart test" >&2
echo "real_fencing: fencing and a restart after a broker's failure hold on the real cluster"
