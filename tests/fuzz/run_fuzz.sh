#!/usr/bin/env bash
# Builds the libFuzzer targets with clang under ASan + UBSan and runs each for SECONDS: the
# OpenRTB decoder, the notice parser, the policy message and the event decoder.
# Usage: tests/fuzz/run_fuzz.sh [SECONDS=20] [OUT=build/fuzz] [RUNS]   (RUNS: stop each target
# after that many inputs instead, e.g. 10000000)
# A longer run: tests/fuzz/run_fuzz.sh 3600   (crashes are written to OUT/crash-*)
# TARGETS="openrtb event" runs only those targets. JOBS (default: the cores) compiles and fuzzes
# that many at once.
#
# Each source is compiled once into OUT/obj (the four targets share the core's and the bidder's
# objects), and again only when a source or header under core/, bidder/, budget/ or tests/fuzz/
# is newer than the objects.
set -euo pipefail
SRC=$(cd "$(dirname "$0")/../.." && pwd)
SECONDS_EACH=${1:-20}
OUT=${2:-$SRC/build/fuzz}
RUNS=${3:-}
JOBS=${JOBS:-$(nproc)}
mkdir -p "$OUT/obj"
OUT=$(cd "$OUT" && pwd)
export FLAGS="-std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
       -I$SRC/core/include -I$SRC/bidder/include -I$SRC/budget/include"
CORE=(core/src/bid.cc core/src/status.cc core/src/action_table.cc core/src/report.cc
      core/src/report_doc.cc core/src/text.cc core/src/events.cc core/src/metrics.cc
      core/src/policy.cc core/src/ab.cc)
BIDDER=(bidder/src/openrtb.cc bidder/src/bid_logic.cc bidder/src/predictor.cc bidder/src/policy.cc)
NOTICE=(bidder/src/notice.cc)
HARNESS=(tests/fuzz/openrtb_fuzz.cc tests/fuzz/notice_fuzz.cc tests/fuzz/policy_fuzz.cc
         tests/fuzz/event_fuzz.cc)
obj() { echo "$OUT/obj/$(echo "$1" | tr / _).o"; }

stamp="$OUT/obj/.built"
if [[ ! -f $stamp || -n $(find "$SRC/bidder" "$SRC/core" "$SRC/budget" "$SRC/tests/fuzz" \
      \( -name '*.cc' -o -name '*.h' \) -newer "$stamp" | head -1) ]]; then
  echo "fuzz: compiling $(( ${#CORE[@]} + ${#BIDDER[@]} + ${#NOTICE[@]} + ${#HARNESS[@]} )) sources, $JOBS at once"
  # -fsanitize=fuzzer on a source without LLVMFuzzerTestOneInput only instruments it.
  printf '%s\n' "${CORE[@]}" "${BIDDER[@]}" "${NOTICE[@]}" "${HARNESS[@]}" |
    SRC=$SRC OUT=$OUT xargs -P "$JOBS" -I{} sh -c \
      'clang++ $FLAGS -c "$SRC/{}" -o "$OUT/obj/$(echo {} | tr / _).o"'
  touch "$stamp"
fi
link() {  # name, sources...
  local name=$1; shift
  local objs=()
  for s in "$@"; do objs+=("$(obj "$s")"); done
  # shellcheck disable=SC2086
  clang++ $FLAGS "${objs[@]}" -o "$OUT/$name" -lsimdjson
}
link openrtb_fuzz tests/fuzz/openrtb_fuzz.cc "${BIDDER[@]}" "${CORE[@]}"
link notice_fuzz tests/fuzz/notice_fuzz.cc "${NOTICE[@]}" "${CORE[@]}"
link policy_fuzz tests/fuzz/policy_fuzz.cc "${CORE[@]}"
link event_fuzz tests/fuzz/event_fuzz.cc "${CORE[@]}"

fuzz() {  # target
  local t=$1 corpus="$OUT/corpus-$1" rc=0
  mkdir -p "$corpus"
  cp -n "$SRC/tests/fuzz/corpus/$t/"* "$corpus/" 2>/dev/null || true
  (cd "$OUT" && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    "./${t}_fuzz" ${RUNS:+-runs=$RUNS} -max_total_time="$SECONDS_EACH" -max_len=65536 \
    -artifact_prefix="$OUT/crash-$t-" -print_final_stats=1 "$corpus" \
    >"$OUT/$t.log" 2>&1) || rc=$?
  echo "fuzzed $t for ${SECONDS_EACH}s: $(grep -E 'stat::number_of_executed_units' "$OUT/$t.log" || true)"
  grep -E "ERROR|SUMMARY|BINGO" "$OUT/$t.log" || true
  echo "$rc" > "$OUT/$t.rc"
}
rm -f "$OUT"/crash-* "$OUT"/*.rc
targets=(${TARGETS:-openrtb notice policy event})
for t in "${targets[@]}"; do
  while (( $(jobs -rp | wc -l) >= JOBS )); do wait -n || true; done
  fuzz "$t" &
done
wait
failed=0
for t in "${targets[@]}"; do
  if [[ $(cat "$OUT/$t.rc" 2>/dev/null) != 0 ]]; then
    echo "FAIL: the $t fuzzer failed (see $OUT/$t.log)"
    failed=1
  fi
done
if ls "$OUT"/crash-* >/dev/null 2>&1; then echo "FAIL: crashes: $(ls "$OUT"/crash-*)"; exit 1; fi
((failed == 0)) || exit 1
echo "fuzzing: no crashes"
