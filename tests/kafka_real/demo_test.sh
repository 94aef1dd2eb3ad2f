#!/usr/bin/env bash
# `rtb demo --brokers` on the real cluster (scripts/kafka_cluster.sh, started by the tier's
# fixture): the closed loop of tests/kafka_real/demo.yaml (the loop test's tiny world, two days,
# no kills), run twice, so that the second run meets the first one's records on the cluster.
# Checks, for each run:
#   the report names the cluster (kafka.cluster: the bootstrap given) and the run's own topics
#   (<topic>.<run id>), a new run id each run, and the topics are gone after the run;
#   every step has one transition, the learner's totals equal the exchange's, the learner read
#   every partition of the run's events topic to its end, the events dump is complete, `rtb
#   report`'s arms equal the exchange's, every process exited cleanly;
#   the learned / manual revenue per share lies in the one-bidder range of this config on the
#   embedded cluster (below).
# And: an address where no broker listens, and a wrong password on the SASL_SSL listener, each
# end the demo within 10 s with one error line, before any pre-training.
# Usage: demo_test.sh RTB SRC   (KAFKA_RUN_DIR: the cluster's)
set -euo pipefail
RTB=$1
SRC=$2
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
source "$SRC/scripts/serve_lib.sh"
# shellcheck disable=SC1090
source "${KAFKA_RUN_DIR:?KAFKA_RUN_DIR: the run folder of the cluster}/cluster.env"
fail() {
  echo "demo_real: $*" >&2
  exit 1
}
# The learned / manual revenue per share (ab_from_events) of this config, one bidder: 0.915-0.927
# in 14 runs on the embedded cluster, 0.918-0.927 in 20 on the real one (docs/benchmarks.md); the
# band is about twice the embedded cluster's spread on either side. On the shared topics instead
# of the run's own (later runs reading earlier runs' records) it was 1.03 and 1.07, and the
# learner's totals did not match the exchange's.
RATIO_LO=0.90
RATIO_HI=0.95

for run in 1 2; do
  t0=$SECONDS
  "$RTB" demo --config "$SRC/tests/kafka_real/demo.yaml" --out "$OUT/demo-$run" \
    --brokers "$KAFKA_BOOTSTRAP" --quiet > "$OUT/stdout-$run.txt" 2> "$OUT/stderr-$run.txt" || {
    cat "$OUT/stderr-$run.txt"
    tail -20 "$OUT/demo-$run"/logs/*.log
    fail "run $run: rtb demo failed"
  }
  echo "demo_real: run $run took $((SECONDS - t0)) s"
  kcat -b "$KAFKA_BOOTSTRAP" -L > "$OUT/topics-$run.txt" 2>&1 || fail "kcat -L failed"
  /usr/bin/python3 - "$OUT/demo-$run/report.json" "$KAFKA_BOOTSTRAP" "$OUT/topics-$run.txt" \
    "$RATIO_LO" "$RATIO_HI" "$OUT/run-ids.txt" <<'PY'
import json, os, sys
r = json.load(open(sys.argv[1]))
bootstrap, topics_after, lo, hi, ids = sys.argv[2], sys.argv[3], float(sys.argv[4]), float(sys.argv[5]), sys.argv[6]
k = r["kafka"]
assert k["cluster"] == bootstrap, k
run = k["run"]
assert run.startswith("demo-") and k["topics_deleted_after_run"], k
assert sorted(k["topics"]) == ["clock", "events", "policy"], k
for role, name in k["topics"].items():
    assert name == "rtb.%s.%s" % (role, run), (role, name)
after = open(topics_after).read()
assert run not in after, ("the run's topics are still on the cluster", after)
seen = open(ids).read().split() if os.path.exists(ids) else []
assert run not in seen, ("a run id used twice", run, seen)
open(ids, "a").write(run + "\n")
lc = r["loop_check"]
assert lc["transitions"] == lc["expected_transitions"] == 6, lc
# A step whose learner totals differ from the exchange's, said whole (it happened once under a
# clean clone's load and the loop check alone did not say where or why).
for day in r["days"]:
    for st in day["steps"]:
        if not st["learner_matches_exchange"]:
            ln = st.get("learner", {})
            print("demo_real: day %s step %s differs: learner %s; failed notices %s, lost requests %s"
                  % (day["day"], st["step"],
                     {k: ln.get(k) for k in ("events", "expected_events", "late_events", "timed_out",
                                             "refused", "count_by_type", "total_cost_micros",
                                             "total_revenue_micros", "unattributed")},
                     st.get("failed_notices"), st.get("lost_requests")), file=sys.stderr)
assert lc["missing"] == [] and lc["duplicated"] == [] and lc["totals_match"], lc
assert len(lc["events_partitions"]) == 8, lc["events_partitions"]
for p in lc["events_partitions"]:
    assert p["learner_next_offset"] == p["high_watermark"], p
ed = r["events_dump"]
assert ed["complete"] and ed["messages"] == lc["events_topic_messages"] > 0, (ed, lc)
assert r["processes"] == {"bidder_exit": 0, "learner_exit": 0}, r["processes"]
ab = r["ab_from_events"]
assert ab["matches_exchange_within_0_1_pct"], ab
ratio = ab["comparison"]["revenue_ratio"]["ratio"]
assert lo <= ratio <= hi, ("learned / manual revenue per share", ratio, "not in", lo, hi)
print("demo_real: run %s on %s: 6 transitions, totals match, %d events, learned / manual %.4f "
      "(band %.2f-%.2f), demo %.1f s" % (run, k["cluster"], ed["messages"], ratio, lo, hi,
                                         r["seconds"]))
PY
done

# Failures: one line, within 10 s, before the pre-training (the output folder holds no
# pretrain/ folder).
expect_quick_failure() {  # NAME PATTERN ARGS...
  local name=$1 pattern=$2
  shift 2
  local t0=$SECONDS
  if "$RTB" demo --config "$SRC/tests/kafka_real/demo.yaml" --out "$OUT/$name" --quiet "$@" \
    > /dev/null 2> "$OUT/$name.err"; then
    fail "$name: the demo succeeded"
  fi
  local took=$((SECONDS - t0)) lines
  lines=$(wc -l < "$OUT/$name.err")
  ((took <= 10)) || fail "$name: took $took s"
  [[ $lines -eq 1 ]] || { cat "$OUT/$name.err"; fail "$name: $lines lines on stderr"; }
  grep -q "^rtb demo: error: .*$pattern" "$OUT/$name.err" || { cat "$OUT/$name.err"; fail "$name"; }
  [[ ! -e $OUT/$name/pretrain ]] || fail "$name: pre-trained before failing"
  echo "demo_real: $name: $(cat "$OUT/$name.err") ($took s)"
}
NOBODY=127.0.0.1:$(free_port)
expect_quick_failure no-broker "no broker answers at $NOBODY" --brokers "$NOBODY"
sed -e "s/^sasl.password=.*/sasl.password=not-the-password/" "$KAFKA_SASL_PROPERTIES" \
  > "$OUT/wrong.properties"
expect_quick_failure wrong-password "refused the connection: .*Authentication failed" \
  --brokers "$KAFKA_SASL_BOOTSTRAP" --kafka-properties "$OUT/wrong.properties"
