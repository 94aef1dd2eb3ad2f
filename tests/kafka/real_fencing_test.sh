#!/usr/bin/env bash
# Fencing on the real cluster (scripts/kafka_cluster.sh, started by the `kafka` tier's fixture),
# where Kafka's transactions fence and read_committed readers skip aborted messages (the
# embedded cluster does neither):
#   RealKafka.*: a second transactional producer of an id fences the first, whose commit fails
#     as fenced and whose message no read_committed reader sees;
#   Online.OnARealCluster*: a second online learner of a group fences the first, which stops
#     with the error, and the policy topic holds each table version once.
# Each run makes topics of its own (<prefix>.seam, .events with 2 partitions, .policy, .clock),
# so that nothing else on the cluster reads them.
# Usage: real_fencing_test.sh KAFKA_TESTS LEARNER_TESTS SRC   (KAFKA_RUN_DIR: the cluster's)
set -euo pipefail
KAFKA_TESTS=$1
LEARNER_TESTS=$2
SRC=$3
RUN=${KAFKA_RUN_DIR:?KAFKA_RUN_DIR: the run folder of the cluster}
# shellcheck disable=SC1090,SC1091
source "$RUN/cluster.env"
JARS=$SRC/.cache/kafka/${RTB_KAFKA_VERSION:-4.4.0}
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
fail() {
  echo "real_fencing: $*" >&2
  exit 1
}

PREFIX=fence-$$-$(date +%s)
create() {  # TOPIC PARTITIONS
  java -Xshare:auto -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xmx256m \
    -Dlog4j2.configurationFile="$RUN/tools-log4j2.properties" -cp "$JARS/*" \
    org.apache.kafka.tools.TopicCommand --bootstrap-server "$KAFKA_BOOTSTRAP" --create \
    --topic "$1" --partitions "$2" --replication-factor 3 --config min.insync.replicas=2 \
    > "$OUT/topic-$1.log" 2>&1 || fail "could not create $1: $(cat "$OUT/topic-$1.log")"
}
create "$PREFIX.seam" 1 &
create "$PREFIX.events" 2 &
create "$PREFIX.policy" 1 &
create "$PREFIX.clock" 1 &
for job in $(jobs -p); do wait "$job" || fail "topics not created"; done

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
run learners "$LEARNER_TESTS" 'Online.OnARealCluster*' "$PREFIX"
echo "real_fencing: fencing holds on the real cluster"
