#!/usr/bin/env bash
# `rtb report --brokers` on the real cluster's SASL_SSL listener (scripts/kafka_cluster.sh, started
# by the tier's fixture), with the SASL and TLS settings as --kafka-property flags:
#   the right user and password read the events topic;
#   a wrong password, and an address where no broker listens, each give one error line and a
#   non-zero exit within 10 s, never a hang.
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
