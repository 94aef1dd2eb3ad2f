# Sourced by the scripts and tests that run a live `rtb serve` (needs RTB set):
#   free_port                               prints a free local TCP port
#   local_bidder_config IN OUT PORT DIR [SED...]
#                                           writes IN to OUT serving on 127.0.0.1:PORT, with its
#                                           state and spill file under DIR, no drain window on
#                                           SIGTERM (no load balancer in front), and the extra
#                                           sed expressions applied
#   serve_start CONFIG PORT LOG             starts `rtb serve` (pid in SERVE, stderr to LOG), waits
#                                           until it answers on PORT, sets BROKERS to its embedded
#                                           Kafka; fails when there is none
#   wait_until SECONDS COMMAND...           runs COMMAND every 0.1 s until it succeeds (0) or
#                                           SECONDS have passed (1): waiting for an event, with a
#                                           bound, never for time to pass
#   events_drained PORT                     0 when the bidder on PORT has no event left in its
#                                           producer queue or spill file (its /metrics)
#   days_played FILE                        the days `rtb exchange` wrote to FILE (JSON lines)
#   spent_after FILE N                      0 when a day after the first N days of FILE spent
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
local_bidder_config() {
  local in=$1 out=$2 port=$3 dir=$4
  shift 4
  sed -e "s#^listen: .*#listen: 127.0.0.1:$port#" \
      -e "s#^drain_ms: .*#drain_ms: 0#" \
      -e "s#^notice_base_url: .*#notice_base_url: http://127.0.0.1:$port#" \
      -e "s#^state_path: .*#state_path: $dir/state#" \
      -e "s#^  spill_path: .*#  spill_path: $dir/spill.jsonl#" \
      "$@" "$in" > "$out"
}
wait_until() {
  local end=$((SECONDS + $1))
  shift
  until "$@"; do
    ((SECONDS < end)) || return 1
    sleep 0.1
  done
}
serve_start() {
  local config=$1 port=$2 log=$3
  "$RTB" serve --config "$config" 2> "$log" &
  SERVE=$!
  wait_until 20 curl -sf "http://127.0.0.1:$port/metrics" -o /dev/null || true
  BROKERS=$(sed -nE 's/.*embedded Kafka \(mock cluster, [0-9]+ brokers\) at ([^ ]+).*/\1/p' "$log" | head -1)
  [[ -n $BROKERS ]]
}
events_drained() {
  curl -s "http://127.0.0.1:$1/metrics" |
    awk '/^rtb_kafka_waiting_events\{/ { n += $2 } END { exit !(NR > 0 && n == 0) }'
}
days_played() { grep -c '^{' "$1" || true; }
spent_after() {
  python3 -c 'import json,sys; d=[json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
sys.exit(0 if any(x["cost"] > 0 for x in d[int(sys.argv[2]):]) else 1)' "$1" "$2"
}
