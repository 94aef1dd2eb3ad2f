#!/usr/bin/env bash
# `rtb report --brokers` on the real cluster's SASL_SSL listener (scripts/kafka_cluster.sh, started
# by the tier's fixture), with the SASL and TLS settings as --kafka-property flags:
#   the right user and password read the events topic;
#   a wrong password, an address where no broker listens and a missing topic each give one
#   error line and a non-zero exit within 10 s, never a hang;
# and `rtb serve` there: the same three stop its start the same way; the right credentials
# serve, and the brokers acknowledge its events.
# Usage: report_credentials_test.sh RTB SRC   (KAFKA_RUN_DIR: the cluster's)
set -euo pipefail
RTB=$1
SRC=$2
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
source "$SRC/scripts/serve_lib.sh"
# shellcheck disable=SC1090
source "${KAFKA_RUN_DIR:?KAFKA_RUN_DIR: the run folder of the cluster}/cluster.env"
fail() {
  echo "report_credentials: $*" >&2
  exit 1
}
cd "$SRC"
sasl() {  # PASSWORD: the SASL_SSL client settings as rtb's flags
  echo --kafka-property security.protocol=SASL_SSL --kafka-property "sasl.mechanism=$KAFKA_SASL_MECHANISM" \
    --kafka-property "sasl.username=$KAFKA_SASL_USER" --kafka-property "sasl.password=$1" \
    --kafka-property "ssl.ca.location=$KAFKA_CA_PEM"
}
report() {  # NAME BROKERS FLAGS...: runs rtb report, its exit code in RC, its seconds in SECS
  local name=$1 brokers=$2
  shift 2
  local t0
  t0=$(date +%s.%N)
  set +e
  timeout 60 "$RTB" report --brokers "$brokers" --bidder-config configs/bidder/default.yaml \
    --out "$OUT/$name" --quiet "$@" > "$OUT/$name.out" 2> "$OUT/$name.err"
  RC=$?
  set -e
  SECS=$(python3 -c "import sys; print('%.1f' % (float(sys.argv[2]) - float(sys.argv[1])))" "$t0" "$(date +%s.%N)")
  echo "report_credentials: $name: exit $RC after $SECS s: $(head -3 "$OUT/$name.err")"
}
# One error line, a non-zero exit, within 10 s.
refused() {  # NAME WHAT
  ((RC != 0)) || fail "$1: exit 0 with $2"
  ((RC != 124)) || fail "$1: still running after 60 s with $2 (a hang)"
  python3 -c "import sys; sys.exit(float(sys.argv[1]) > 10)" "$SECS" ||
    fail "$1: took $SECS s to fail with $2 (more than 10 s)"
  local lines
  lines=$(grep -c . "$OUT/$1.err" || true)
  ((lines == 1)) || fail "$1: $lines lines on stderr with $2, not one: $(cat "$OUT/$1.err")"
}

# shellcheck disable=SC2046
report right "$KAFKA_SASL_BOOTSTRAP" $(sasl "$KAFKA_SASL_PASSWORD")
((RC == 0)) || grep -qi "no event" "$OUT/right.err" ||
  fail "the right credentials did not read the topic: $(cat "$OUT/right.err")"
# shellcheck disable=SC2046
report wrong_password "$KAFKA_SASL_BOOTSTRAP" $(sasl not-the-password)
refused wrong_password "a wrong password"
grep -qi "auth" "$OUT/wrong_password.err" ||
  fail "wrong_password: the error does not say authentication failed: $(cat "$OUT/wrong_password.err")"
nobody=$(free_port)
# shellcheck disable=SC2046
report unreachable "127.0.0.1:$nobody" $(sasl "$KAFKA_SASL_PASSWORD")
refused unreachable "an address where no broker listens"
# shellcheck disable=SC2046
report missing_topic "$KAFKA_SASL_BOOTSTRAP" $(sasl "$KAFKA_SASL_PASSWORD") --topic rtb.no-such-topic
refused missing_topic "a topic the cluster does not hold"
grep -q "rtb.no-such-topic" "$OUT/missing_topic.err" ||
  fail "missing_topic: the error does not name the topic: $(cat "$OUT/missing_topic.err")"

# `rtb serve` on the SASL_SSL listener (its kafka.brokers and kafka.properties, the password from
# a secret file, RTB_KAFKA_PROPERTIES_SASL_PASSWORD_FILE, as docs/deploy.md has it): with the
# right credentials it serves and the brokers acknowledge its events; a wrong password, an
# address where no broker listens and a missing topic each stop its start with one line naming
# what is wrong, non-zero, within 10 s.
PORT=$(free_port)
serve_config() {  # NAME BROKERS PASSWORD [SED...]: a bidder config on the SASL listener, and
                  # its password in OUT/NAME.sasl
  local name=$1 brokers=$2 password=$3
  shift 3
  local_bidder_config configs/bidder/default.yaml "$OUT/$name.yaml" "$PORT" "$OUT/$name" \
    -e "s#^  brokers: .*#  brokers: \"$brokers\"#" \
    -e "s#^  properties: .*#  properties: {security.protocol: SASL_SSL, sasl.mechanism: $KAFKA_SASL_MECHANISM, sasl.username: $KAFKA_SASL_USER, ssl.ca.location: $KAFKA_CA_PEM}#" \
    "$@"
  printf '%s\n' "$password" > "$OUT/$name.sasl"
}
serve_refused() {  # NAME WHAT: rtb serve with OUT/NAME.yaml stops at start
  local t0
  t0=$(date +%s.%N)
  set +e
  RTB_KAFKA_PROPERTIES_SASL_PASSWORD_FILE=$OUT/$1.sasl \
    timeout 60 "$RTB" serve --config "$OUT/$1.yaml" > "$OUT/$1.out" 2> "$OUT/$1.err"
  RC=$?
  set -e
  SECS=$(python3 -c "import sys; print('%.1f' % (float(sys.argv[2]) - float(sys.argv[1])))" "$t0" "$(date +%s.%N)")
  echo "report_credentials: serve $1: exit $RC after $SECS s: $(head -3 "$OUT/$1.err")"
  refused "$1" "$2"
}
serve_config serve_wrong_password "$KAFKA_SASL_BOOTSTRAP" not-the-password
serve_refused serve_wrong_password "a wrong password"
grep -qi "auth" "$OUT/serve_wrong_password.err" || fail "serve_wrong_password: not said: $(cat "$OUT/serve_wrong_password.err")"
serve_config serve_unreachable "127.0.0.1:$nobody" "$KAFKA_SASL_PASSWORD"
serve_refused serve_unreachable "an address where no broker listens"
grep -q "127.0.0.1:$nobody" "$OUT/serve_unreachable.err" || fail "serve_unreachable: the address is not named"
serve_config serve_missing_topic "$KAFKA_SASL_BOOTSTRAP" "$KAFKA_SASL_PASSWORD" \
  -e "s#^  events_topic: .*#  events_topic: rtb.no-such-topic#"
serve_refused serve_missing_topic "a topic the cluster does not hold"
grep -q "rtb.no-such-topic" "$OUT/serve_missing_topic.err" || fail "serve_missing_topic: the topic is not named"

serve_config serve_right "$KAFKA_SASL_BOOTSTRAP" "$KAFKA_SASL_PASSWORD"
RTB_KAFKA_PROPERTIES_SASL_PASSWORD_FILE=$OUT/serve_right.sasl \
  serve_start "$OUT/serve_right.yaml" "$PORT" "$OUT/serve_right.log" || true  # no embedded cluster
trap 'kill $SERVE 2>/dev/null; wait $SERVE 2>/dev/null; rm -rf "$OUT"' EXIT
curl -sf "http://127.0.0.1:$PORT/readyz" -o /dev/null || fail "serve_right: not ready: $(tail -5 "$OUT/serve_right.log")"
for i in $(seq 1 20); do
  curl -s -o /dev/null -H 'Content-Type: application/json' "http://127.0.0.1:$PORT/openrtb2/bid" \
    -d "{\"id\":\"sasl-$i\",\"imp\":[{\"id\":\"1\",\"banner\":{\"w\":300,\"h\":250}}],\"site\":{\"domain\":\"news.example\"},\"user\":{\"id\":\"u$i\"},\"tmax\":500}"
done
metric() { curl -s "http://127.0.0.1:$PORT/metrics" | sed -nE "s/^rtb_kafka_events_$1_total ([0-9]+)$/\1/p"; }
acked_all() { [[ $(metric logged) -ge 20 && $(metric acked) == "$(metric logged)" ]]; }
wait_until 20 acked_all || fail "serve_right: events logged $(metric logged), acked $(metric acked)"
echo "report_credentials: serve over SASL_SSL: $(metric acked) events acknowledged"
