#!/usr/bin/env bash
# Configuration from the environment (docs/deploy.md): RTB_<KEY> overrides a bidder config key,
# RTB_<KEY>_FILE gives a secret from a file; a missing secret file is one clear line naming the
# variable (never a secret), and a secret written in the config is a warning.
set -u
RTB=$1
SRC=$2
T=$(mktemp -d)
source "$SRC/tests/cli/serve_lib.sh"
cleanup() {
  [[ -n $SERVE ]] && kill "$SERVE" 2>/dev/null && wait "$SERVE" 2>/dev/null
  rm -rf "$T"
}
trap cleanup EXIT
BODY=$SRC/tests/fixtures/openrtb/2.6/bid-request-simple-banner.json
BASE=http://127.0.0.1:$PORT
printf 'a-secret-of-32-characters-000001\n' > "$T/secret"
bidder_config "$T/bidder.yaml"

# A missing secret file: exit 1, one line naming the variable and the path.
RTB_NOTICE_SECRET_FILE=$T/missing "$RTB" serve --config "$T/bidder.yaml" 2> "$T/missing.log" &&
  fail "started without its secret file"
[[ $(wc -l < "$T/missing.log") -eq 1 ]] || fail "more than one line: $(cat "$T/missing.log")"
grep -q "RTB_NOTICE_SECRET_FILE: cannot read $T/missing: No such file or directory" \
  "$T/missing.log" || fail "unclear: $(cat "$T/missing.log")"
# A bad value names the variable and the key, not the value.
RTB_MAX_BIDS_PER_IMP=lots "$RTB" serve --config "$T/bidder.yaml" 2> "$T/bad.log" &&
  fail "started with a non-number"
grep -q "RTB_MAX_BIDS_PER_IMP (environment): key 'max_bids_per_imp' expects an integer" \
  "$T/bad.log" || fail "unclear: $(cat "$T/bad.log")"
grep -q lots "$T/bad.log" && fail "the value is in the error: $(cat "$T/bad.log")"

# The secret from its file, and an override: one bid per impression (the config says 3).
export RTB_NOTICE_SECRET_FILE=$T/secret RTB_MAX_BIDS_PER_IMP=1
start_serve "$T/bidder.yaml"
curl -s -X POST --data-binary @"$BODY" "$BASE/openrtb2/bid" -o "$T/answer.json"
python3 - "$T/answer.json" "$T/burl" <<'PY' || fail "no single bid: $(cat "$T/answer.json")"
import json, sys
a = json.load(open(sys.argv[1]))
bids = [b for sb in a["seatbid"] for b in sb["bid"]]
assert len(bids) == 1, bids
open(sys.argv[2], "w").write(bids[0]["burl"].replace("${AUCTION_PRICE}", "0.01"))
PY
grep -q "plain text" "$T/serve.log" && fail "warned of a secret given by a file"
kill "$SERVE" && wait "$SERVE"
SERVE=
# Another state directory (which would make a new random secret): the same secret file signs
# the same, so the first bidder's billing URL is still ours (200), and without it, forged (403).
bidder_config "$T/bidder2.yaml" -e "s#^state_path: .*#state_path: $T/state2#"
start_serve "$T/bidder2.yaml"
[[ $(curl -s -o /dev/null -w '%{http_code}' "$(cat "$T/burl")") == 200 ]] ||
  fail "the file's secret did not verify the earlier bid's notice"
kill "$SERVE" && wait "$SERVE"
SERVE=
unset RTB_NOTICE_SECRET_FILE RTB_MAX_BIDS_PER_IMP
bidder_config "$T/bidder3.yaml" -e "s#^state_path: .*#state_path: $T/state3#" \
  -e "s#^notice_secret: .*#notice_secret: a-literal-secret-in-the-yaml-file#"
start_serve "$T/bidder3.yaml"
[[ $(curl -s -o /dev/null -w '%{http_code}' "$(cat "$T/burl")") == 403 ]] ||
  fail "another secret verified the notice"
# ...and the secret written in the file is a warning naming the variable to use.
grep -q "holds secrets in plain text (notice_secret): give them in RTB_NOTICE_SECRET_FILE" \
  "$T/serve.log" || fail "no warning of the literal secret"
grep -q "a-literal-secret" "$T/serve.log" && fail "the secret is in the log"
echo "ok"
