#!/usr/bin/env bash
# Bad input to `rtb simulate`: one clear error naming the file, line or key; a non-zero exit;
# no report written.
set -u
RTB=$1
SRC=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

expect_error() {  # name, pattern, args...
  local name=$1 pattern=$2
  shift 2
  "$RTB" "$@" --out "$T/out-$name" --quiet >"$T/stdout" 2>"$T/stderr"
  local rc=$?
  [[ $rc -ne 0 ]] || fail "$name: exit code 0"
  grep -q -- "$pattern" "$T/stderr" || fail "$name: stderr lacks '$pattern': $(cat "$T/stderr")"
  [[ $(wc -l <"$T/stderr") -le 2 ]] || fail "$name: more than one error line"
  [[ ! -e "$T/out-$name/report.json" ]] || fail "$name: a report was written"
  echo "ok: $name: $(head -1 "$T/stderr")"
}

cp "$SRC/configs/simulator/default.yaml" "$T/typo.yaml"
sed -i 's/^  advertisers: 3000/  advertizers: 3000/' "$T/typo.yaml"
expect_error unknown-key "typo.yaml:[0-9]*: unknown key 'world.advertizers'" simulate --config "$T/typo.yaml"

cp "$SRC/configs/simulator/default.yaml" "$T/type.yaml"
sed -i 's/^  requests: 70000/  requests: lots/' "$T/type.yaml"
expect_error wrong-type "type.yaml:[0-9]*: key 'day.requests' expects an integer" simulate --config "$T/type.yaml"

cp "$SRC/configs/simulator/default.yaml" "$T/range.yaml"
sed -i 's/^  slots: 3 /  slots: 0 /' "$T/range.yaml"
expect_error out-of-range "range.yaml:[0-9]*: key 'auction.slots' must be between" simulate --config "$T/range.yaml"

cp "$SRC/configs/simulator/default.yaml" "$T/auction.yaml"
sed -i 's/^  type: gsp /  type: vickrey /' "$T/auction.yaml"
expect_error auction-type "auction.yaml:[0-9]*: key 'auction.type' must be gsp, gfp or first_price" simulate --config "$T/auction.yaml"
expect_error auction-flag "--auction: vickrey not in" simulate --auction vickrey
# --auction first_price is the single-bidder protocol's: a full-information log is re-auctioned
# by its config's auction, an events log by each bid's own.
expect_error replay-auction "--auction is the single-bidder logs' (rlb protocol); a full-information" \
  replay --format full --log "$T/none.tsv" --auction first_price

printf 'world: [1, 2\n' >"$T/syntax.yaml"
expect_error yaml-syntax "syntax.yaml:[0-9]*: YAML syntax error" simulate --config "$T/syntax.yaml"

expect_error missing-config "nope.yaml: cannot open" simulate --config "$T/nope.yaml"

# A malformed log line is named by file and line.
cat >"$T/small.yaml" <<'YAML'
world: {advertisers: 100, consumers: 300}
day: {requests: 500}
YAML
"$RTB" generate --config "$T/small.yaml" --out "$T/logs" >/dev/null || fail "generate"
sed -i '10s/\t0\.[0-9]*\t/\tzero\t/' "$T/logs/test.tsv"
expect_error bad-log "test.tsv:10: field pctr is not a number" simulate --config "$T/small.yaml" \
  --train-log "$T/logs/train.tsv" --test-log "$T/logs/test.tsv"
expect_error bad-policy "const:<a> needs a in \[-1, 1\]" simulate --config "$T/small.yaml" --policy const:3
expect_error bad-bidders "bidders" simulate --config "$T/small.yaml" --bidders 0
expect_error bad-split "split" simulate --config "$T/small.yaml" --bidders 3 --split half
expect_error bad-arm-share "--learned-share must be in (0, 1\] with --arm learned" simulate \
  --config "$T/small.yaml" --arm manual --learned-share 1
# rtb demo: a typo in its config, a malformed chaos spec; nothing is started, no report.
cp "$SRC/configs/demo/default.yaml" "$T/demo.yaml"
sed -i 's|^learner_config: learner.yaml|learner_config: '"$SRC"'/configs/demo/learner.yaml|; s|^bidder_config: ../bidder/default.yaml|bidder_config: '"$SRC"'/configs/bidder/default.yaml|; s/^days: 4 /dayz: 4 /' "$T/demo.yaml"
expect_error demo-unknown-key "demo.yaml:[0-9]*: unknown key 'dayz'" demo --config "$T/demo.yaml"
expect_error demo-bad-chaos "chaos 'kill-exchange@1:0'" demo --config "$SRC/configs/demo/default.yaml" --chaos kill-exchange@1:0
expect_error demo-chaos-day-out-of-range "chaos 'kill-bidder@99999999999999999999:1': day and step must be integers" demo --config "$SRC/configs/demo/default.yaml" --chaos kill-bidder@99999999999999999999:1
expect_error demo-chaos-negative-step "day and step must be integers" demo --config "$SRC/configs/demo/default.yaml" --chaos kill-bidder@1:-1+step

# Commands without --out: rtb budget, rtb kafka and rtb exchange --traffic.
expect_plain() {  # name, pattern, args...
  local name=$1 pattern=$2
  shift 2
  timeout 20 "$RTB" "$@" >"$T/stdout" 2>"$T/stderr"
  local rc=$?
  [[ $rc -eq 1 ]] || fail "$name: exit code $rc, not 1"
  grep -q -- "$pattern" "$T/stderr" || fail "$name: stderr lacks '$pattern': $(cat "$T/stderr")"
  [[ $(wc -l <"$T/stderr") -le 1 ]] || fail "$name: more than one error line: $(cat "$T/stderr")"
  echo "ok: $name: $(head -1 "$T/stderr")"
}
expect_plain budget-no-kafka "rtb budget needs Kafka: --brokers, or kafka.brokers in .* (not embedded" \
  budget --market "$SRC/configs/bidder/default.yaml"
# rtb serve: kafka.brokers is a choice, a cluster's bootstrap servers or embedded; empty or
# missing, one error line names the key and both choices, and nothing starts.
sed 's/^  brokers: embedded .*/  brokers: ""/' "$SRC/configs/bidder/default.yaml" >"$T/empty-brokers.yaml"
brokers_choice="key 'kafka.brokers' must be set: a Kafka cluster's bootstrap servers (host:port,...), or embedded (an in-memory cluster inside this process, which loses every event when the process ends)"
expect_plain serve-empty-brokers "empty-brokers.yaml:[0-9]*: $brokers_choice" \
  serve --config "$T/empty-brokers.yaml"
sed '/^  brokers: embedded /d' "$SRC/configs/bidder/default.yaml" >"$T/no-brokers.yaml"
expect_plain serve-no-brokers "no-brokers.yaml:[0-9]*: $brokers_choice" serve --config "$T/no-brokers.yaml"
expect_plain budget-no-market "nope.yaml: cannot open" budget --market "$T/nope.yaml" --brokers 127.0.0.1:1
expect_plain kafka-no-market "nope.yaml: cannot open" kafka --market "$T/nope.yaml"
sed 's/^requests_per_day: .*/requests_per_day: many/' "$SRC/configs/markets/metro/traffic.yaml" >"$T/traffic.yaml"
expect_plain traffic-bad-type "traffic.yaml:[0-9]*: key 'requests_per_day' expects an integer" \
  exchange --traffic "$T/traffic.yaml" --market "$SRC/configs/markets/metro/bidder.yaml" --days 0
expect_plain traffic-no-market "needs --market" exchange --traffic "$SRC/configs/markets/metro/traffic.yaml"
# A librdkafka property it does not know (kafka.properties reach rtb budget's clients), and a
# --kafka-property without a value.
sed 's/^  properties: {}.*/  properties: {no.such.property: 1}/' "$SRC/configs/bidder/default.yaml" >"$T/props.yaml"
expect_plain budget-bad-kafka-property "kafka property no.such.property: No such configuration property" \
  budget --market "$T/props.yaml" --brokers 127.0.0.1:1
# rtb learn reads them from its --market too: it says so in one error line and exits 1 (after
# its two lines about the market). Only where the learner is built (RTB_BUILD_LEARNER).
if [[ -x "$(dirname "$RTB")/rtb-learner" ]]; then
  timeout 60 "$RTB" learn --config "$SRC/configs/learner/default.yaml" --market "$T/props.yaml" \
    --brokers 127.0.0.1:1 --state-dir "$T/learn" >"$T/stdout" 2>"$T/stderr"
  rc=$?
  [[ $rc -eq 1 ]] || fail "learn-bad-kafka-property: exit code $rc, not 1"
  grep -q "rtb learn: error: kafka property no.such.property: No such configuration property" "$T/stderr" ||
    fail "learn-bad-kafka-property: $(cat "$T/stderr")"
  echo "ok: learn-bad-kafka-property: $(grep error "$T/stderr")"
fi
# A value is not repeated in the error (a password under a misspelled name); a property the
# engine owns is refused by the flag.
sed 's/^  properties: {}.*/  properties: {sasl.pasword: hunter2}/' "$SRC/configs/bidder/default.yaml" >"$T/secret.yaml"
expect_plain budget-kafka-value-not-repeated "kafka property sasl.pasword: No such configuration" \
  budget --market "$T/secret.yaml" --brokers 127.0.0.1:1
! grep -q hunter2 "$T/stderr" || fail "budget-kafka-value-not-repeated: the password is in the error"
expect_error replay-engine-kafka-property "may not set enable.idempotence" \
  replay --format events --brokers 127.0.0.1:1 --kafka-property enable.idempotence=false
expect_error report-bad-kafka-property "kafka property no.such.property: No such configuration property" \
  report --brokers 127.0.0.1:1 --bidder-config "$T/props.yaml"
expect_error replay-bad-kafka-property "kafka-property: expects NAME=VALUE, got 'nothing'" \
  replay --format events --brokers 127.0.0.1:1 --kafka-property nothing
echo "all bad-input cases refused"
