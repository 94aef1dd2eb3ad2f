#!/usr/bin/env bash
# Builds the libFuzzer targets with clang under ASan + UBSan and runs each for SECONDS: the
# OpenRTB decoder, the notice parser, the policy message and the event decoder.
# Usage: tests/fuzz/run_fuzz.sh [SECONDS=20] [OUT=build/fuzz] [RUNS]   (RUNS: stop each target
# after that many inputs instead, e.g. 10000000)
# A longer run: tests/fuzz/run_fuzz.sh 3600   (crashes are written to OUT/crash-*)
# TARGETS="openrtb event" runs only those targets.
set -euo pipefail
SRC=$(cd "$(dirname "$0")/../.." && pwd)
SECONDS_EACH=${1:-20}
OUT=${2:-$SRC/build/fuzz}
RUNS=${3:-}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
FLAGS="-std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
       -I$SRC/core/include -I$SRC/bidder/include"
CORE="$SRC/core/src/bid.cc $SRC/core/src/status.cc $SRC/core/src/action_table.cc $SRC/core/src/report.cc $SRC/core/src/report_doc.cc $SRC/core/src/text.cc $SRC/core/src/events.cc
      $SRC/core/src/metrics.cc $SRC/core/src/policy.cc $SRC/core/src/ab.cc"
build() {  # name, sources...
  local name=$1; shift
  if [[ ! -x "$OUT/$name" || -n $(find "$SRC/bidder" "$SRC/core" "$SRC/tests/fuzz" -newer "$OUT/$name" -name '*.cc' -o -newer "$OUT/$name" -name '*.h' | head -1) ]]; then
    clang++ $FLAGS "$@" -o "$OUT/$name" -lsimdjson
  fi
}
build openrtb_fuzz "$SRC/tests/fuzz/openrtb_fuzz.cc" "$SRC/bidder/src/openrtb.cc" "$SRC/bidder/src/bid_logic.cc" \
  "$SRC/bidder/src/predictor.cc" "$SRC/bidder/src/policy.cc" $CORE
build notice_fuzz "$SRC/tests/fuzz/notice_fuzz.cc" "$SRC/bidder/src/notice.cc" $CORE
build policy_fuzz "$SRC/tests/fuzz/policy_fuzz.cc" $CORE
build event_fuzz "$SRC/tests/fuzz/event_fuzz.cc" $CORE
for t in ${TARGETS:-openrtb notice policy event}; do
  corpus="$OUT/corpus-$t"
  mkdir -p "$corpus"
  cp -n "$SRC/tests/fuzz/corpus/$t/"* "$corpus/" 2>/dev/null || true
  echo "fuzzing $t for ${SECONDS_EACH}s"
  rc=0
  (cd "$OUT" && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    "./${t}_fuzz" ${RUNS:+-runs=$RUNS} -max_total_time="$SECONDS_EACH" -max_len=65536 \
    -print_final_stats=1 "$corpus" \
    >"$OUT/$t.log" 2>&1) || rc=$?
  grep -E "stat::number_of_executed_units|ERROR|SUMMARY|BINGO|crash" "$OUT/$t.log" || true
  if ls "$OUT"/crash-* >/dev/null 2>&1; then echo "FAIL: $t crashed: $(ls "$OUT"/crash-*)"; exit 1; fi
  if [[ $rc -ne 0 ]]; then echo "FAIL: $t fuzzer exited $rc (see $OUT/$t.log)"; exit 1; fi
done
echo "fuzzing: no crashes"
