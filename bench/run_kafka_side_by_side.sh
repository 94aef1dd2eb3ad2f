#!/usr/bin/env bash
# The closed loop on the embedded (mock) cluster against a real one, side by side in one run:
# `rtb demo` with 3 bidders sharing budgets through `rtb budget` (the real-broker tier's demo
# config: the loop test's tiny world, 2 days, no kills), alternating embedded / real RUNS times
# so that the machine's drift hits both alike. Per run, from the demo's report and logs:
#   policy lag: a step's end to the next table served (the learner's lag behind the events,
#     reading them, learning and publishing: report.json policy_lag_ms);
#   install spread: per table, the first bidder to install it to the last
#     (policy_switch_spread_ms);
#   lease answers: a bidder's ask to the holding that answers it read back (the lease grant's
#     round trip through the requests topic, the coordinator and the grants topic), averaged
#     over the bidders' stats lines weighted by answers; and the bidders' lease reports, sent to
#     acknowledged (acks=all on the real cluster).
# A third arm, real-500: the real cluster with librdkafka's default fetch.wait.max.ms (500 ms) for
# every client, in place of the short waits the engine sets for the embedded cluster, whose
# brokers answer an empty fetch only when its whole wait is over (kafka/README.md): does the
# real cluster need them?
# Medians over the runs are printed per arm, and each real arm / embedded.
# Needs the real cluster's run folder (KAFKA_RUN_DIR, default out/kafka-cluster): started here,
# and stopped after, when it holds no running cluster.
# Usage: bench/run_kafka_side_by_side.sh [RTB=build/release/rtb] [RUNS=3]
set -euo pipefail
cd "$(dirname "$0")/.."
RTB=${1:-build/release/rtb}
RUNS=${2:-3}
export KAFKA_RUN_DIR=${KAFKA_RUN_DIR:-$PWD/out/kafka-cluster}
OUT=$(mktemp -d)
STARTED=
cleanup() {
  [[ -z $STARTED ]] || scripts/kafka_cluster.sh stop > /dev/null 2>&1 || true
  [[ -n ${KEEP:-} ]] || rm -rf "$OUT"
}
trap cleanup EXIT
if [[ $(scripts/kafka_cluster.sh status 2> /dev/null | grep -c ': up (') -ne 3 ]]; then
  scripts/kafka_cluster.sh start > "$OUT/cluster.log" 2>&1 || { cat "$OUT/cluster.log"; exit 1; }
  STARTED=1
fi
# shellcheck disable=SC1091
source "$KAFKA_RUN_DIR/cluster.env"
echo "fetch.wait.max.ms=500" > "$OUT/fetch-500.properties"
for r in $(seq "$RUNS"); do
  for where in embedded real real-500; do
    flags=()
    [[ $where == real ]] && flags=(--brokers "$KAFKA_BOOTSTRAP")
    [[ $where == real-500 ]] &&
      flags=(--brokers "$KAFKA_BOOTSTRAP" --kafka-properties "$OUT/fetch-500.properties")
    "$RTB" demo --config tests/kafka_real/demo.yaml --bidders 3 --out "$OUT/$where-$r" --quiet \
      "${flags[@]}" > /dev/null 2> "$OUT/$where-$r.err" || {
      cat "$OUT/$where-$r.err"
      exit 1
    }
    echo "run $r on the $where cluster: done"
  done
done
python3 - "$OUT" "$RUNS" <<'PY'
import glob, json, re, statistics, sys
out, runs = sys.argv[1], int(sys.argv[2])
def figures(d):
    r = json.load(open(d + "/report.json"))
    answered = weighted = reports = rweighted = 0
    for log in glob.glob(d + "/logs/*.log"):
        for a, ms in re.findall(r"(\d+) answered \(\d+ with nothing\) in ([0-9.]+) ms on average", open(log).read()):
            answered += int(a); weighted += int(a) * float(ms)
        for n, ms in re.findall(r"(\d+) reports on Kafka in ([0-9.]+) ms on average", open(log).read()):
            reports += int(n); rweighted += int(n) * float(ms)
    return {"policy lag p50 (ms)": r["policy_lag_ms"]["p50"],
            "policy lag max (ms)": r["policy_lag_ms"]["max"],
            "install spread p50 (ms)": r["policy_switch_spread_ms"]["p50"],
            "install spread max (ms)": r["policy_switch_spread_ms"]["max"],
            "lease answer mean (ms)": weighted / answered if answered else float("nan"),
            "lease report mean (ms)": rweighted / reports if reports else float("nan")}
med = {}
arms = ("embedded", "real", "real-500")
for where in arms:
    runs_f = [figures("%s/%s-%d" % (out, where, r)) for r in range(1, runs + 1)]
    med[where] = {k: statistics.median(f[k] for f in runs_f) for k in runs_f[0]}
    for i, f in enumerate(runs_f, 1):
        print("%s run %d: %s" % (where, i, ", ".join("%s %.1f" % kv for kv in f.items())))
print("medians over %d runs:" % runs)
for k in med["embedded"]:
    e = med["embedded"][k]
    print("  %-26s embedded %8.1f" % (k, e) + "".join(
        "  %s %8.1f (x%.2f)" % (a, med[a][k], med[a][k] / e if e else float("nan")) for a in arms[1:]))
PY
