#!/usr/bin/env bash
# The whole loop on a hand-written market (configs/markets/<name>/: bidder.yaml, traffic.yaml,
# predictor.json), as a team runs it on its own campaigns: `rtb serve` with the market's bidder
# config (embedded Kafka), `rtb learn --market` with no checkpoint (cold start from manual bids),
# `rtb exchange --traffic` playing DAYS days with a step marker per step, then `rtb report`
# on the events topic: the A/B report of the learned arm against the manual arm.
#
#   scripts/run_market.sh [MARKET_DIR] [DAYS] [OUT]
#   defaults: configs/markets/metro, 4, out/markets/<name>; OUTCOMES=expected|sampled,
#   REQUESTS=<requests per day> (default: the traffic file's), RTB=<the rtb binary>,
#   BROKERS=<bootstrap servers> to run on a real Kafka cluster instead of rtb serve's embedded
#   one (its client properties: the market's kafka.properties), DUMP=1 to also copy the events
#   topic to OUT/events.jsonl (what `rtb fit` reads), INIT=<checkpoint dir> to start the
#   learner from agents trained offline (`rtb learn --init`; a warm start) and CLUSTERS=<cluster
#   map> to serve with that map (`rtb fit --clusters-out`: the fitted history) instead of the
#   traffic's segments written fresh.
# Writes OUT/ab/report.{json,md,html}, OUT/exchange.jsonl (the exchange's accounting per day),
# OUT/logs/ and every process's state.
#
# A real cluster keeps earlier runs' records, and the learner (a fresh state) reads its events
# and step markers from the beginning, as the bidder does the tables: a run there has topics of
# its own, each default name with ".<run id>" appended, made with `rtb kafka --create-on` before
# the bidder starts and deleted with `rtb kafka --delete-on` when the run ends, and its learner
# its own group (online.group_id).
set -euo pipefail
cd "$(dirname "$0")/.."
M=${1:-configs/markets/metro}
DAYS=${2:-4}
NAME=$(basename "$M")
OUT=${3:-out/markets/$NAME}
RTB=${RTB:-build/release/rtb}
OUTCOMES=${OUTCOMES:-expected}
REAL=${BROKERS:-}  # a real cluster's bootstrap servers; "" = rtb serve's embedded cluster
[[ -x $RTB ]] || { echo "run_market: $RTB not built (scripts/build.sh release)" >&2; exit 1; }
for f in bidder.yaml traffic.yaml; do
  [[ -f $M/$f ]] || { echo "run_market: $M/$f: no such file" >&2; exit 1; }
done
rm -rf "$OUT"
mkdir -p "$OUT/logs"
source scripts/serve_lib.sh
PORT=$(free_port)
SERVE= LEARN= TOPICS=
cleanup() {
  [[ -n $LEARN ]] && kill "$LEARN" 2>/dev/null
  [[ -n $SERVE ]] && kill "$SERVE" 2>/dev/null
  wait 2>/dev/null || true
  if [[ -n $TOPICS ]]; then
    "$RTB" kafka --delete-on "$REAL" --market "$OUT/bidder.yaml" --clock-topic "$CLOCK" \
      > /dev/null || echo "run_market: the run's topics (*.$RUN) are left on $REAL" >&2
  fi
}
trap cleanup EXIT

# The market's bidder config on a free port, with its state, spill and cluster map under OUT;
# on a real cluster, its address and the run's own topics.
EVENTS=rtb.events CLOCK=rtb.clock
KAFKA_EDITS=()
if [[ -n $REAL ]]; then
  RUN=market-$NAME-$(date -u +%Y%m%dT%H%M%S)-$$
  EVENTS=rtb.events.$RUN CLOCK=rtb.clock.$RUN
  KAFKA_EDITS=(-e "s#^  brokers: .*#  brokers: $REAL#"
               -e "s#^  events_topic: .*#  events_topic: $EVENTS#"
               -e "s#^  policy_topic: .*#  policy_topic: rtb.policy.$RUN#")
  # The learner's config names the same topics, a learner group of its own and its world by
  # an absolute path (the copy lives in OUT).
  sed -e "s#^simulator_config: [^ ]*#simulator_config: $PWD/configs/simulator/default.yaml#" \
      -e "s#^  events_topic: [^ ]*#  events_topic: $EVENTS#" \
      -e "s#^  policy_topic: [^ ]*#  policy_topic: rtb.policy.$RUN#" \
      -e "s#^  clock_topic: [^ ]*#  clock_topic: $CLOCK#" \
      -e "s#^  group_id: [^ ]*#  group_id: rtb-learner.$RUN#" \
      configs/learner/default.yaml > "$OUT/learner.yaml"
fi
local_bidder_config "$M/bidder.yaml" "$OUT/bidder.yaml" "$PORT" "$OUT/bidder" \
  -e "s#^clusters_path: .*#clusters_path: $OUT/clusters.json#" "${KAFKA_EDITS[@]}"
TRAFFIC=$M/traffic.yaml
if [[ -n ${REQUESTS:-} ]]; then
  sed -e "s#^requests_per_day: .*#requests_per_day: $REQUESTS#" "$M/traffic.yaml" > "$OUT/traffic.yaml"
  TRAFFIC=$OUT/traffic.yaml
fi
# The users' clusters (the team's segmentation; here the traffic's own segments).
if [[ -n ${CLUSTERS:-} ]]; then
  cp "$CLUSTERS" "$OUT/clusters.json"
else
  "$RTB" exchange --traffic "$TRAFFIC" --market "$OUT/bidder.yaml" \
    --write-clusters "$OUT/clusters.json" --days 0
fi
INIT_ARGS=()
[[ -z ${INIT:-} ]] || INIT_ARGS=(--init "$INIT")

LEARNER_CONFIG=configs/learner/default.yaml
if [[ -n $REAL ]]; then
  "$RTB" kafka --create-on "$REAL" --market "$OUT/bidder.yaml" --clock-topic "$CLOCK" > /dev/null
  TOPICS=created
  BROKERS=$REAL
  LEARNER_CONFIG=$OUT/learner.yaml
  echo "run_market: Kafka: the cluster at $REAL, on the run's own topics (rtb.events.$RUN," \
    "rtb.policy.$RUN, rtb.clock.$RUN; deleted when the run ends)"
  echo "run_market: rtb serve on 127.0.0.1:$PORT (log: $OUT/logs/serve.log)"
  "$RTB" serve --config "$OUT/bidder.yaml" 2> "$OUT/logs/serve.log" &
  SERVE=$!
  wait_until 20 curl -sf "http://127.0.0.1:$PORT/metrics" -o /dev/null ||
    { echo "run_market: the bidder did not start; see $OUT/logs/serve.log" >&2; exit 1; }
else
  echo "run_market: rtb serve on 127.0.0.1:$PORT (log: $OUT/logs/serve.log)"
  serve_start "$OUT/bidder.yaml" "$PORT" "$OUT/logs/serve.log" ||
    { echo "run_market: the bidder did not start; see $OUT/logs/serve.log" >&2; exit 1; }
  echo "run_market: Kafka: rtb serve's embedded cluster (mock) at $BROKERS"
fi

echo "run_market: rtb learn --market $OUT/bidder.yaml, ${INIT:-no checkpoint} (log: $OUT/logs/learn.log)"
"$RTB" learn --config "$LEARNER_CONFIG" --market "$OUT/bidder.yaml" \
  --brokers "$BROKERS" --state-dir "$OUT/learner" "${INIT_ARGS[@]}" 2> "$OUT/logs/learn.log" &
LEARN=$!
for _ in $(seq 1200); do  # the learner's first table (manual bids) served
  v=$(curl -sf "http://127.0.0.1:$PORT/metrics" | sed -n 's/^rtb_policy_version \([0-9]*\).*/\1/p')
  [[ ${v:-0} -ge 1 ]] && break
  kill -0 "$LEARN" 2>/dev/null || { echo "run_market: the learner exited; see $OUT/logs/learn.log" >&2; exit 1; }
  sleep 0.1
done

echo "run_market: rtb exchange --traffic $TRAFFIC: $DAYS days, outcomes $OUTCOMES"
"$RTB" exchange --traffic "$TRAFFIC" --market "$OUT/bidder.yaml" --bidder "127.0.0.1:$PORT" \
  --brokers "$BROKERS" --clock-topic "$CLOCK" --days "$DAYS" --outcomes "$OUTCOMES" |
  tee "$OUT/exchange.jsonl"

sleep 2  # the bidder's last events (5 ms batches) reach the topic
RERUN="scripts/run_market.sh $M $DAYS"
[[ -z $REAL ]] || RERUN="BROKERS=$REAL $RERUN"
START="started with no checkpoint (cold start from manual bids)"
[[ -z ${INIT:-} ]] || START="warm-started from $INIT"
NOTES=(--note "$DAYS days of $M played by rtb exchange --traffic against rtb serve, with rtb learn $START; Kafka: ${REAL:-the embedded cluster}; rerun: $RERUN")
if [[ $OUTCOMES == expected ]]; then
  NOTES+=(--note "Expected outcomes: each impression sends one conversion notice carrying its expected value (true pCTR x pCVR x the campaign's conversion value) and no click, so conversions count notices and CPA is per notice.")
fi
"$RTB" report --brokers "$BROKERS" --topic "$EVENTS" --bidder-config "$OUT/bidder.yaml" --bucket-minutes 60 \
  --out "$OUT/ab" "${NOTES[@]}" | tee "$OUT/summary.txt"
if [[ ${DUMP:-0} == 1 ]]; then
  "$RTB" replay --format events --brokers "$BROKERS" --topic "$EVENTS" --dump "$OUT/events.jsonl" \
    --strategy logged --out "$OUT/replay" > /dev/null
  echo "run_market: the events: $OUT/events.jsonl ($(wc -l < "$OUT/events.jsonl") lines)"
fi
kill -TERM "$LEARN" && wait "$LEARN" || true
LEARN=
kill -TERM "$SERVE" && wait "$SERVE" || true
SERVE=
echo "run_market: the A/B report: $OUT/ab/report.html (also .md, .json)"
