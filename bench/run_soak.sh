#!/usr/bin/env bash
# The bidder's soak: `rtb serve` (default config, embedded Kafka) at half its peak for MINUTES,
# with notices beside the bid traffic, and what must hold at the end:
#   - RSS flat after the warm-up (sampled every 30 s; growth from the warm-up's end to the end);
#   - every event logged is acked by Kafka (none spilled, dropped or dead-lettered);
#   - spend per advertiser equals the charged billings the notice client sent, and stays
#     within the budget; billing results (applied, duplicate, late, forged) as sent.
# Bid traffic: bench/loadgen, paced at half the full path's peak (wrk, 3 x 10 s, at the start),
# every request its own auction id. Notices: bench/soak_notices.py on its own requests (on-time,
# duplicate, late, loss, forged billings). The billing window is shortened to 10 s so that late
# notices come many times in a run; advertiser 1's budget is small enough to run out.
# Usage: bench/run_soak.sh [MINUTES=30] [SEED=1]   (after scripts/build.sh; prints a report,
# and leaves the RSS samples in out/soak/rss.csv)
set -euo pipefail
cd "$(dirname "$0")/.."
MINUTES=${1:-30}
SEED=${2:-1}
SECS=$((MINUTES * 60))
WINDOW_MS=10000
BUDGET1=${BUDGET1:-20.0}
LOADGEN=build/release/bench/loadgen
OUT=out/soak
mkdir -p "$OUT"
source bench/bench_server.sh
start_bench_server -e "s#^reservation_timeout_ms: .*#reservation_timeout_ms: $WINDOW_MS#" \
  -e "0,/daily_budget: 1000000000.0/s/daily_budget: 1000000000.0/daily_budget: $BUDGET1/"
metric() { curl -s http://127.0.0.1:$PORT/metrics | sed -nE "s/^$1 ([0-9.e+-]+)\$/\\1/p" | head -1; }
rss_mb() { awk '/VmRSS/ {printf "%.0f", $2 / 1024}' /proc/$PID/status; }

write_unique_id_lua "$T/post.lua"
PEAKS=""
for _ in 1 2 3; do
  PEAKS="$PEAKS $(BODY="$BODY" wrk -t1 -c16 -d10s -s "$T/post.lua" "http://127.0.0.1:$PORT/openrtb2/bid" | awk '/Requests\/sec/ {print $2}')"
done
PEAK=$(echo $PEAKS | tr ' ' '\n' | sort -g | sed -n 2p)
RATE=$(awk -v p="$PEAK" 'BEGIN {printf "%d", p / 2}')
echo "peak of the full bid path (median of 3 x 10 s): $PEAK req/s; soak at $RATE req/s for $MINUTES min"
echo "server RSS after the peak runs: $(rss_mb) MB"

"$LOADGEN" --port $PORT --path /openrtb2/bid --body "$BODY" --connections 16 --seconds "$SECS" \
  --rate "$RATE" --unique-ids 1 >"$T/loadgen.out" 2>&1 &
LG=$!
python3 bench/soak_notices.py $PORT "$BODY" "$SECS" $WINDOW_MS "$SEED" "$T/notices.json" &
NC=$!
echo "minute,rss_mb,requests,bids,logged,acked,open_reservations,reservation_slots" >"$OUT/rss.csv"
t0=$(date +%s)
while kill -0 $LG 2>/dev/null; do
  sleep 30
  m=$(( ($(date +%s) - t0) / 60 ))
  echo "$(awk -v s=$(( $(date +%s) - t0 )) 'BEGIN {printf "%.1f", s / 60}'),$(rss_mb),$(metric 'rtb_requests_total\{endpoint="bid"\}'),$(metric rtb_bids_total),$(metric 'rtb_kafka_events_logged_total'),$(metric 'rtb_kafka_events_acked_total'),$(metric 'rtb_open_reservations'),$(metric 'rtb_reservation_slots')" >>"$OUT/rss.csv"
  (( m % 5 == 0 )) && tail -1 "$OUT/rss.csv" | awk -F, '{printf "  minute %s: RSS %s MB, %s requests, %s bids, events logged %s acked %s\n", $1, $2, $3, $4, $5, $6}'
done
wait $LG || true
echo "loadgen: $(cat "$T/loadgen.out")"
wait $NC || { echo "FAIL: the notice client stopped (exit $?)"; exit 1; }
# Kafka delivery settles (linger, acks) before the counts are read.
for _ in $(seq 60); do
  [[ $(metric 'rtb_kafka_waiting_events\{where="producer"\}') == 0 && $(metric 'rtb_kafka_waiting_events\{where="spill"\}') == 0 ]] && break
  sleep 0.5
done
sleep 2
M=$(curl -s http://127.0.0.1:$PORT/metrics)
get() { echo "$M" | sed -nE "s/^$1 ([0-9.e+-]+)\$/\\1/p" | head -1; }
logged=$(get 'rtb_kafka_events_logged_total') acked=$(get 'rtb_kafka_events_acked_total')
spilled=$(get 'rtb_kafka_events_spilled_total') dropped=$(get 'rtb_kafka_events_dropped_total')
dead=$(get 'rtb_kafka_events_dead_lettered_total')
echo "events: logged $logged, acked $acked, spilled $spilled, dropped $dropped, dead-lettered $dead"
FAIL=0
[[ "$logged" == "$acked" && "$dropped" == 0 && "$dead" == 0 ]] || { echo "FAIL: events lost or not acked"; FAIL=1; }

python3 - "$T/notices.json" "$OUT/rss.csv" <<PY || FAIL=1
import json, sys, time
sent = json.load(open(sys.argv[1]))
metrics = """$M"""
def val(name):
    for line in metrics.splitlines():
        if line.startswith(name + " "):
            return int(float(line.split()[-1]))
    return None
ok = True
print("notice client:", sent["requests"], "bid requests;", ", ".join(f"{k} x{v}" for k, v in sorted(sent["statuses"].items())))
for result in ("applied", "duplicate", "late", "forged"):
    got = val(f'rtb_notices_total{{type="billing",result="{result}"}}')
    want = sent["billing"].get(result, 0)
    print(f"billing {result}: bidder {got}, sent {want}")
    ok &= got == want
today = int(time.time() * 1000) // 86400000
for key, want in sent["spend_micros"].items():
    day, adv = (int(x) for x in key.split("/"))
    if day != today:  # /metrics shows today's ledger; the run crossed midnight
        print(f"advertiser {adv}, day {day}: charged billings {want} micros (booked on that day; not in /metrics)")
        continue
    got = sum(val(f'rtb_advertiser_spent_micros{{advertiser="{adv}",arm="{arm}"}}') for arm in ("learned", "manual"))
    budget = sum(val(f'rtb_advertiser_budget_micros{{advertiser="{adv}",arm="{arm}"}}') for arm in ("learned", "manual"))
    print(f"advertiser {adv}: spent {got} micros = charged billings {want}; budget {budget} ({100 * got / budget:.4f}% used)")
    ok &= got == want and got <= budget
rows = [l.split(",") for l in open(sys.argv[2]).read().split()[1:]]
rss = [(float(r[0]), int(r[1])) for r in rows if r[1]]
warm = [v for t, v in rss if t >= 5.0]
if warm:
    print(f"RSS: {rss[0][1]} MB at {rss[0][0]} min, {warm[0]} MB after the 5-minute warm-up, "
          f"{max(warm)} MB peak after it, {warm[-1]} MB at the end "
          f"({100 * (warm[-1] - warm[0]) / warm[0]:+.1f}% since the warm-up)")
print("OK" if ok else "FAIL: notices or spend differ")
sys.exit(0 if ok else 1)
PY
echo "server log warnings/errors: $(grep -ciE '\b(warn|error)\b' "$T/log" || true)"
exit $FAIL
