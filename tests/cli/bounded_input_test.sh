#!/usr/bin/env bash
# rtb replay and rtb report are bounded by construction and refuse bad input with one clear
# error and exit 1, losing nothing:
#   - /dev/zero (a line that never ends) under a 4 GB address-space limit, and a 64 MB one-line
#     file: the line limit (1 MiB) named with the file, memory bounded (peak RSS well under the
#     file's size), no uncaught std::bad_alloc;
#   - a folder given as the log or the events: named, not "0 events";
#   - extreme, wrapping and negative prices: refused with file:line (--skip-malformed skips and
#     counts them), never a wrapped spend.
set -u
RTB=$1 CFG="$2/configs/bidder/default.yaml" T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() {
  echo "FAIL: $*"
  exit 1
}
echo '{"imp_train": 100, "clk_train": 2, "cost_train": 5000}' >"$T/campaign.json"

# expect_refused NAME PATTERN ARGS...: exit 1, one error line holding PATTERN, no report.
expect_refused() {
  local name=$1 pattern=$2
  shift 2
  ("$@" >"$T/stdout" 2>"$T/stderr")
  local rc=$?
  [[ $rc -eq 1 ]] || fail "$name: exit code $rc, not 1: $(head -c 300 "$T/stderr")"
  grep -qF -- "$pattern" "$T/stderr" || fail "$name: stderr lacks '$pattern': $(cat "$T/stderr")"
  [[ $(wc -l <"$T/stderr") -eq 1 ]] || fail "$name: not one error line: $(cat "$T/stderr")"
  [[ ! -e $T/out/report.json ]] || fail "$name: a report was written"
  echo "ok: $name: $(cat "$T/stderr")"
}

# peak_rss_kb ARGS...: the peak resident set (kB) of one run, when /usr/bin/time is there.
peak_rss_kb() {
  [[ -x /usr/bin/time ]] || { echo 0; return; }
  /usr/bin/time -f '%M' -o "$T/rss" "$@" >/dev/null 2>&1
  tail -1 "$T/rss"
}

LIMIT="a line longer than 1 MiB (1048576 bytes)"
for fmt in events rlb ipinyou full; do
  expect_refused "dev-zero-$fmt" "/dev/zero:1: $LIMIT" bash -c 'ulimit -v 4000000 && exec "$@"' _ \
    "$RTB" replay --format "$fmt" --log /dev/zero --info "$T/campaign.json" --out "$T/out"
done
expect_refused dev-zero-report "/dev/zero:1: $LIMIT" bash -c 'ulimit -v 4000000 && exec "$@"' _ \
  "$RTB" report --events /dev/zero --bidder-config "$CFG" --out "$T/out"

# A 64 MB file of one line: refused at its first MiB, in bounded memory.
head -c 64M /dev/zero | tr '\0' x >"$T/oneline.txt"
expect_refused oneline-rlb "oneline.txt:1: $LIMIT" "$RTB" replay --format rlb \
  --log "$T/oneline.txt" --info "$T/campaign.json" --out "$T/out"
expect_refused oneline-report "oneline.txt:1: $LIMIT" "$RTB" report --events "$T/oneline.txt" \
  --bidder-config "$CFG" --out "$T/out"
for cmd in "replay --format events --log $T/oneline.txt" \
  "report --events $T/oneline.txt --bidder-config $CFG --out $T/out"; do
  # shellcheck disable=SC2086
  kb=$(peak_rss_kb "$RTB" $cmd)
  [[ $kb -lt 48000 ]] || fail "rtb $cmd: peak RSS $kb kB for a 64 MB line (want < 48 MB)"
  echo "ok: peak RSS ${kb} kB: rtb ${cmd%% --*} on a 64 MB line"
done

# A folder is not a log.
mkdir "$T/folder"
expect_refused folder-events "folder: is a directory; the events dump must be a file" \
  "$RTB" replay --format events --log "$T/folder" --out "$T/out"
expect_refused folder-rlb "folder: is a directory; the log must be a file" \
  "$RTB" replay --format rlb --log "$T/folder" --info "$T/campaign.json" --out "$T/out"
expect_refused folder-info "folder: is a directory; the campaign info must be a file" \
  "$RTB" replay --format rlb --log /dev/null --info "$T/folder" --out "$T/out"
expect_refused folder-report "folder: is a directory; the events dump must be a file" \
  "$RTB" report --events "$T/folder" --bidder-config "$CFG" --out "$T/out"

# Money: two billings of 9e18 micros CPM, a conversion above max_conversion_value, a negative
# price; each names its line. --skip-malformed skips and counts them.
ev() {  # type eid price
  echo "{\"v\":1,\"type\":\"$1\",\"eid\":\"$2\",\"ts\":1700000000000,\"adv\":1,\"arm\":\"learned\",\"price_micros\":$3,\"charged\":true}"
}
{ ev billing b1 2000000; ev billing x1 9000000000000000000; ev billing x2 9000000000000000000; } >"$T/extreme.jsonl"
expect_refused report-extreme "extreme.jsonl:2: event: billing charges 9000000000.0, more than advertiser 1's whole daily budget (500.0): refused" \
  "$RTB" report --events "$T/extreme.jsonl" --bidder-config "$CFG" --out "$T/out"
{ ev billing b1 2000000; ev conversion c1 9000000000000000000; } >"$T/value.jsonl"
expect_refused report-value "value.jsonl:2: event: conversion value 9000000000000.0 above advertiser 1's max_conversion_value (600.0): refused" \
  "$RTB" report --events "$T/value.jsonl" --bidder-config "$CFG" --out "$T/out"
{ ev billing b1 2000000; ev billing n1 -5000000; } >"$T/negative.jsonl"
expect_refused report-negative "negative.jsonl:2: event: negative price (-5000000 micros) refused" \
  "$RTB" report --events "$T/negative.jsonl" --bidder-config "$CFG" --out "$T/out"
expect_refused replay-negative "negative.jsonl:2: event: negative price (-5000000 micros) refused" \
  "$RTB" replay --format events --log "$T/negative.jsonl" --out "$T/out"
"$RTB" report --events "$T/extreme.jsonl" --bidder-config "$CFG" --out "$T/skip" --skip-malformed \
  --quiet 2>"$T/skip.err" || fail "report-extreme --skip-malformed: $(cat "$T/skip.err")"
grep -q "skipped 2 malformed lines, the first: .*extreme.jsonl:2: event: billing charges" "$T/skip.err" ||
  fail "report-extreme --skip-malformed: $(cat "$T/skip.err")"
/usr/bin/python3 -c "
import json
r = json.load(open('$T/skip/report.json'))
assert r['arms']['learned']['spend'] == 0.002 and r['events']['malformed_skipped'] == 2, r['arms']" ||
  fail "report-extreme --skip-malformed: the report"
echo "ok: report-extreme --skip-malformed: spend 0.002, 2 lines skipped and counted"
echo "all bounded-input cases refused"
